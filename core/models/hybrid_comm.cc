// The two distillation stages of hybrid messages: latents recomputed with the
// KV cache, vectors spliced at a reader's soft slots, and the losses.
#include "core/models/hybrid_comm.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>

#include "core/base/errors.h"
#include "core/models/model_pool_impl.h"
#include "core/vocab.h"
#include "core/models/module_tensors.h"
#include "core/models/torch_files.h"

namespace troupe {

namespace {

torch::Tensor Longs(const std::vector<int64_t>& v, std::vector<int64_t> shape, torch::Device device) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), shape, torch::kLong).clone().to(device);
}

torch::Tensor Ids(const std::vector<int>& ids, torch::Device device) {
  std::vector<int64_t> v(ids.begin(), ids.end());
  return Longs(v, {static_cast<int64_t>(v.size())}, device);
}

// Rows of input embeddings, left-padded into one batch: every row ends at the
// last column, so the last positions line up across rows.
struct PaddedBatch {
  torch::Tensor embeds, positions, key_valid;  // [B,T,d], [B,T], [B,T]
  std::vector<int64_t> lengths;
};

PaddedBatch Pad(const std::vector<torch::Tensor>& rows) {
  PaddedBatch b;
  int64_t T = 0;
  for (const auto& r : rows) T = std::max(T, r.size(0));
  const int64_t B = static_cast<int64_t>(rows.size()), d = rows.front().size(1);
  const torch::Device device = rows.front().device();
  std::vector<torch::Tensor> padded;
  std::vector<int64_t> pos(B * T, 0);
  std::vector<uint8_t> valid(B * T, 0);
  for (int64_t i = 0; i < B; ++i) {
    const int64_t n = rows[i].size(0), off = T - n;
    padded.push_back(off > 0 ? torch::cat({torch::zeros({off, d}, rows[i].options()), rows[i]}) : rows[i]);
    for (int64_t t = 0; t < n; ++t) {
      pos[i * T + off + t] = t;
      valid[i * T + off + t] = 1;
    }
    b.lengths.push_back(n);
  }
  b.embeds = torch::stack(padded);
  b.positions = Longs(pos, {B, T}, device);
  b.key_valid = torch::from_blob(valid.data(), {B, T}, torch::kUInt8).clone().to(torch::kBool).to(device);
  return b;
}

// Mean over layers of SmoothL1(student, teacher) / std(teacher). The std is the
// teacher's spread across the batch (per dimension, averaged): a std over all
// values would reward a large shared offset in the residual stream, which
// shrinks the loss without making the student any closer to the teacher.
torch::Tensor DistillLoss(const std::vector<torch::Tensor>& student, const std::vector<torch::Tensor>& teacher) {
  torch::Tensor loss = torch::zeros({}, student.front().options());
  for (size_t l = 0; l < student.size(); ++l) {
    torch::Tensor t = teacher[l].detach();
    const torch::Tensor spread = t.size(0) > 1 ? t.std(0).mean() : t.std();
    loss = loss + torch::nn::functional::smooth_l1_loss(student[l], t) / (spread + 1e-6);
  }
  return loss / static_cast<double>(student.size());
}

// Indices of `items` grouped by a key (e.g. model and answer length): rows of one group share a forward pass.
template <class Item, class Key>
std::map<Key, std::vector<size_t>> GroupBy(const std::vector<Item>& items, Key (*key)(const Item&)) {
  std::map<Key, std::vector<size_t>> groups;
  for (size_t i = 0; i < items.size(); ++i) groups[key(items[i])].push_back(i);
  return groups;
}

using ModelAndLength = std::pair<int, size_t>;
ModelAndLength SelfKey(const SelfDistillExample& e) { return {e.model, e.answer.size()}; }
ModelAndLength SenderKey(const SenderExample& e) { return {e.model, e.text.size()}; }
ModelAndLength ReceiverKey(const ReceiverExample& e) { return {e.model, e.answer.size()}; }

// `prefix` followed by all but the last of `answer`: a teacher-forced row whose last |answer| logits predict it.
std::vector<int> Forced(std::vector<int> prefix, const std::vector<int>& answer) {
  if (!answer.empty()) prefix.insert(prefix.end(), answer.begin(), answer.end() - 1);
  return prefix;
}

// The latent dropout's generator state in a checkpoint folder.
std::string DropoutFile(const std::string& dir, const ModelConfig& c) {
  return dir + "/latent-dropout-" + c.name + ".state";
}

}  // namespace

HybridBatch ExamplesOfModel(const HybridBatch& batch, int model, int as) {
  HybridBatch out;
  for (const auto& e : batch.self) {
    if (e.model != model) continue;
    out.self.push_back(e);
    out.self.back().model = as;
  }
  std::vector<int> renumbered(batch.senders.size(), -1);
  for (size_t i = 0; i < batch.senders.size(); ++i) {
    if (batch.senders[i].model != model) continue;
    renumbered[i] = static_cast<int>(out.senders.size());
    out.senders.push_back(batch.senders[i]);
    out.senders.back().model = as;
  }
  for (const auto& e : batch.receivers) {
    if (e.model != model) continue;
    out.receivers.push_back(e);
    out.receivers.back().model = as;
    for (int& i : out.receivers.back().from_senders) {
      if (i < 0 || i >= static_cast<int>(renumbered.size()) || renumbered[i] < 0) {
        throw ModelError("hybrid: a reader on model " + std::to_string(model) +
                         " reads in-graph the latents of sender " + std::to_string(i) + ", which is not on that model");
      }
      i = renumbered[i];
    }
  }
  return out;
}

struct HybridCommTrainer::Impl {
  ModelPool* pool = nullptr;
  HybridSettings s;
  // One AdamW per model, with that model's learning rate and weight decay (its
  // gradients are clipped to its own grad_clip). A reader of vectors of another
  // width adapts them with its own latent_in layer, a parameter of the model:
  // optimised here and saved with it.
  std::vector<std::unique_ptr<torch::optim::AdamW>> optimizers;

  PolicyModel& Model(int m) { return pool->impl().models.at(m); }
  torch::Device Device(int m) { return pool->impl().devices.at(m); }
  torch::Tensor Slots(int m, const std::vector<int>& slots) {
    return Longs(std::vector<int64_t>(slots.begin(), slots.end()), {static_cast<int64_t>(slots.size())}, Device(m));
  }

  // Latent vectors z_1..z_K of each row's prompt (ending with <bot>), with the
  // KV cache left after them. Rows: one model.
  struct LatentRun {
    torch::Tensor z;  // [B,K,d]
    KvCache cache;
    torch::Tensor key_valid;
    std::vector<int64_t> next_pos;
    std::vector<int> slots;
  };
  LatentRun Latents(int m, const std::vector<const std::vector<int>*>& prompts, std::vector<int> slots) {
    PolicyModel& model = Model(m);
    const torch::Device device = Device(m);
    LatentRun r;
    r.slots = std::move(slots);
    std::vector<torch::Tensor> rows;
    for (const auto* p : prompts) rows.push_back(model->embed(Ids(*p, device)));
    PaddedBatch b = Pad(rows);
    const torch::Tensor role = Slots(m, r.slots);
    LMOutput o = model->forward_hidden(b.embeds, b.positions, b.key_valid, role, &r.cache);
    const int64_t B = static_cast<int64_t>(prompts.size());
    r.key_valid = b.key_valid;
    r.next_pos = b.lengths;
    LatentStepsOutput sent = model->send_latents(
        o.hidden.select(1, o.hidden.size(1) - 1), s.latent_vectors,
        [&](int64_t) {
          r.key_valid = torch::cat({r.key_valid, torch::ones({B, 1}, r.key_valid.options())}, 1);
          torch::Tensor positions = Longs(r.next_pos, {B, 1}, device);
          for (auto& p : r.next_pos) ++p;
          return std::make_pair(positions, r.key_valid);
        },
        role, &r.cache);
    r.z =
        sent.z.empty() ? torch::zeros({B, 0, model->width()}, b.embeds.options()) : torch::stack(sent.z, 1);
    return r;
  }

  // Continues a latent run with `tokens` [B,n].
  LMOutput Continue(int m, LatentRun& run, const torch::Tensor& tokens, bool all_layers) {
    const int64_t B = tokens.size(0), n = tokens.size(1);
    std::vector<int64_t> pos(B * n);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t t = 0; t < n; ++t) pos[b * n + t] = run.next_pos[b] + t;
      run.next_pos[b] += n;
    }
    run.key_valid = torch::cat({run.key_valid, torch::ones({B, n}, run.key_valid.options())}, 1);
    return Model(m)->forward_embeds(Model(m)->embed(tokens), Longs(pos, {B, n}, Device(m)), run.key_valid,
                                    Slots(m, run.slots), &run.cache, all_layers);
  }

  // Full forward of rows of input embeddings (left-padded).
  LMOutput Rows(int m, const std::vector<torch::Tensor>& rows, const std::vector<int>& slots, bool all_layers) {
    PaddedBatch b = Pad(rows);
    return Model(m)->forward_embeds(b.embeds, b.positions, b.key_valid, Slots(m, slots), nullptr, all_layers);
  }

  // CE of the last n positions against `targets` [B,n].
  static torch::Tensor LastCe(const torch::Tensor& logits, const torch::Tensor& targets) {
    const int64_t n = targets.size(1);
    torch::Tensor last = logits.slice(1, logits.size(1) - n);
    return torch::nn::functional::cross_entropy(last.reshape({-1, last.size(2)}), targets.reshape({-1}));
  }

  static std::vector<torch::Tensor> LayersAt(const LMOutput& o, int64_t position_from_end) {
    std::vector<torch::Tensor> out;
    for (const auto& l : o.layers) out.push_back(l.select(1, l.size(1) - position_from_end));
    return out;
  }

  // CE of the student's and the teacher's answers (the last n positions) plus
  // the weighted hidden-state loss at the position before the answer.
  torch::Tensor AnswerLoss(const LMOutput& student, const LMOutput& teacher, const torch::Tensor& y, bool distill_on,
                           HybridStepStats* st) const {
    const int64_t n = y.size(1);
    const torch::Tensor ce = LastCe(student.logits, y), tce = LastCe(teacher.logits, y);
    torch::Tensor distill = torch::zeros({}, ce.options());
    if (distill_on) distill = DistillLoss(LayersAt(student, n), LayersAt(teacher, n));
    (*st)["answer_ce"] += ce.item<double>();
    (*st)["teacher_ce"] += tce.item<double>();
    (*st)["distill"] += distill.item<double>();
    return ce + s.distill_weight * distill + tce;
  }

  // A reader's prompt embedded, with the vectors it reads at its soft slots.
  torch::Tensor ReaderEmbeds(int m, const ReceiverExample& e, const std::vector<torch::Tensor>& sender_latents) {
    PolicyModel& model = Model(m);
    torch::Tensor x = model->embed(Ids(e.prompt, Device(m)));
    std::vector<int> where;
    for (size_t t = 0; t < e.prompt.size(); ++t) {
      if (e.prompt[t] == Vocab::kSoft) where.push_back(static_cast<int>(t));
    }
    if (where.empty()) return x;
    torch::Tensor vectors;
    if (!e.from_senders.empty()) {
      std::vector<torch::Tensor> parts;
      for (int i : e.from_senders) {
        if (i < 0 || i >= static_cast<int>(sender_latents.size()) || !sender_latents[i].defined()) {
          throw ModelError("hybrid: a reader names sender " + std::to_string(i) + ", which the batch lacks");
        }
        parts.push_back(s.differentiable ? sender_latents[i] : sender_latents[i].detach());
      }
      vectors = torch::cat(parts).to(Device(m));
    } else {
      const int64_t n = static_cast<int64_t>(where.size());
      if (e.soft_width <= 0 || static_cast<int64_t>(e.soft.size()) != n * e.soft_width) {
        throw ModelError("hybrid: a reader's prompt has " + std::to_string(n) + " soft slots but " +
                         std::to_string(e.soft.size()) + " values of width " + std::to_string(e.soft_width));
      }
      vectors =
          torch::from_blob(const_cast<float*>(e.soft.data()), {n, e.soft_width}, torch::kFloat).clone().to(Device(m));
    }
    if (vectors.size(0) != static_cast<int64_t>(where.size())) {
      throw ModelError("hybrid: a reader's prompt has " + std::to_string(where.size()) + " soft slots for " +
                       std::to_string(vectors.size(0)) + " vectors");
    }
    return x.index_copy(0, Slots(m, where), model->adapt_latent(vectors));
  }

  // Stage 1: each agent's reasoning distilled into its own latents.
  void SelfDistill(const std::vector<SelfDistillExample>& batch, std::vector<torch::Tensor>* losses,
                   HybridStepStats* st) {
    for (const auto& [key, idx] : GroupBy(batch, &SelfKey)) {
      const int m = key.first;
      const int64_t B = static_cast<int64_t>(idx.size()), n = static_cast<int64_t>(key.second);
      if (n == 0) continue;
      std::vector<const std::vector<int>*> prompts;
      std::vector<int> slots;
      std::vector<int64_t> forced, targets;
      std::vector<torch::Tensor> teacher_rows;
      for (size_t i : idx) {
        const SelfDistillExample& e = batch[i];
        prompts.push_back(&e.prompt);
        slots.push_back(e.role_slot);
        for (int t : Forced({s.eot}, e.answer)) forced.push_back(t);
        targets.insert(targets.end(), e.answer.begin(), e.answer.end());
        std::vector<int> t = e.prompt;
        t.insert(t.end(), e.reasoning.begin(), e.reasoning.end());
        t.push_back(s.eot);
        teacher_rows.push_back(Model(m)->embed(Ids(Forced(t, e.answer), Device(m))));
      }
      LatentRun run = Latents(m, prompts, slots);
      LMOutput student = Continue(m, run, Longs(forced, {B, n}, Device(m)), true);
      LMOutput teacher = Rows(m, teacher_rows, slots, true);
      losses->push_back(AnswerLoss(student, teacher, Longs(targets, {B, n}, Device(m)), true, st));
    }
  }

  // Stage 2 senders: their latents (kept for in-graph readers) and the CE of their text.
  std::vector<torch::Tensor> Senders(const std::vector<SenderExample>& senders,
                                     const std::vector<ReceiverExample>& receivers, std::vector<torch::Tensor>* losses,
                                     HybridStepStats* st) {
    std::vector<torch::Tensor> latents(senders.size());
    std::vector<bool> read(senders.size(), false);
    for (const auto& r : receivers) {
      for (int i : r.from_senders) {
        if (i >= 0 && i < static_cast<int>(read.size())) read[i] = true;
      }
    }
    for (const auto& [key, all] : GroupBy(senders, &SenderKey)) {
      const int m = key.first;
      const int64_t L = static_cast<int64_t>(key.second);
      std::vector<size_t> idx;
      for (size_t i : all) {
        if (L > 0 || (read[i] && s.latent_vectors > 0)) idx.push_back(i);
      }
      if (idx.empty()) continue;
      const int64_t B = static_cast<int64_t>(idx.size());
      std::vector<int64_t> forced, targets;
      std::vector<int> slots;
      std::vector<const std::vector<int>*> prompts;
      for (size_t i : idx) {
        const SenderExample& e = senders[i];
        prompts.push_back(&e.prompt);
        slots.push_back(e.role_slot);
        for (int t : Forced(s.latent_vectors > 0 ? std::vector<int>{s.eot} : std::vector<int>{}, e.text)) {
          forced.push_back(t);
        }
        targets.insert(targets.end(), e.text.begin(), e.text.end());
      }
      torch::Tensor logits;
      if (s.latent_vectors > 0) {
        LatentRun run = Latents(m, prompts, slots);
        for (int64_t b = 0; b < B; ++b) latents[idx[b]] = run.z[b];
        if (L == 0) continue;
        logits = Continue(m, run, Longs(forced, {B, L}, Device(m)), false).logits;
      } else {
        // Text-only: the text follows the prompt.
        std::vector<torch::Tensor> rows;
        for (size_t i : idx)
          rows.push_back(Model(m)->embed(Ids(Forced(senders[i].prompt, senders[i].text), Device(m))));
        logits = Rows(m, rows, slots, false).logits;
      }
      const torch::Tensor text_ce = LastCe(logits, Longs(targets, {B, L}, Device(m)));
      losses->push_back(text_ce);
      (*st)["text_ce"] += text_ce.item<double>();
    }
    return latents;
  }

  // Stage 2 readers: the student reads the vectors, the teacher the messages as text.
  void Receivers(const std::vector<ReceiverExample>& receivers, const std::vector<torch::Tensor>& sender_latents,
                 std::vector<torch::Tensor>* losses, HybridStepStats* st) {
    for (const auto& [key, idx] : GroupBy(receivers, &ReceiverKey)) {
      const int m = key.first;
      const int64_t B = static_cast<int64_t>(idx.size()), n = static_cast<int64_t>(key.second);
      if (n == 0) continue;
      PolicyModel& model = Model(m);
      std::vector<torch::Tensor> student_rows, teacher_rows;
      std::vector<int> slots;
      std::vector<int64_t> targets;
      for (size_t i : idx) {
        const ReceiverExample& e = receivers[i];
        const std::vector<int> tail = Forced({}, e.answer);
        student_rows.push_back(torch::cat({ReaderEmbeds(m, e, sender_latents), model->embed(Ids(tail, Device(m)))}));
        teacher_rows.push_back(model->embed(Ids(Forced(e.teacher_prompt, e.answer), Device(m))));
        slots.push_back(e.role_slot);
        targets.insert(targets.end(), e.answer.begin(), e.answer.end());
      }
      LMOutput student = Rows(m, student_rows, slots, true);
      LMOutput teacher = Rows(m, teacher_rows, slots, true);
      losses->push_back(AnswerLoss(student, teacher, Longs(targets, {B, n}, Device(m)), s.latent_vectors > 0, st));
    }
  }
};

HybridCommTrainer::HybridCommTrainer(ModelPool& pool) : impl_(std::make_unique<Impl>()) {
  impl_->pool = &pool;
  for (int m = 0; m < pool.size(); ++m) {
    const ModelConfig& c = pool.config(m);
    impl_->optimizers.push_back(std::make_unique<torch::optim::AdamW>(
        impl_->Model(m)->parameters(), torch::optim::AdamWOptions(c.lr).weight_decay(c.weight_decay)));
  }
}

HybridCommTrainer::~HybridCommTrainer() = default;

HybridStepStats HybridCommTrainer::Step(const HybridBatch& batch, const HybridSettings& settings) {
  Impl& I = *impl_;
  I.s = settings;
  std::set<int> models;
  for (const auto& e : batch.self) models.insert(e.model);
  for (const auto& e : batch.senders) models.insert(e.model);
  for (const auto& e : batch.receivers) models.insert(e.model);
  for (int m : models) {
    if (m < 0 || m >= I.pool->size()) throw ModelError("hybrid: an example names model " + std::to_string(m));
    I.Model(m)->train(true);
  }
  HybridStepStats st;
  std::vector<torch::Tensor> losses;
  I.SelfDistill(batch.self, &losses, &st);
  const std::vector<torch::Tensor> latents = I.Senders(batch.senders, batch.receivers, &losses, &st);
  I.Receivers(batch.receivers, latents, &losses, &st);
  if (losses.empty()) return st;
  torch::Tensor loss = torch::zeros({});
  for (const auto& l : losses) loss = loss + l.to(torch::kCPU);
  for (int m : models) I.optimizers[m]->zero_grad();
  loss.backward();
  for (int m : models) {
    const double clip = I.pool->config(m).grad_clip;
    if (clip > 0) torch::nn::utils::clip_grad_norm_(I.Model(m)->parameters(), clip);
    I.optimizers[m]->step();
  }
  st["loss"] = loss.item<double>();
  return st;
}

void HybridCommTrainer::Save(const std::string& dir) const {
  for (int m = 0; m < impl_->pool->size(); ++m) {
    const ModelConfig& c = impl_->pool->config(m);
    SaveAdamW(*impl_->optimizers[m], dir + "/hybrid-optimizer-" + c.name + ".safetensors");
    if (c.latent) SaveGeneratorState(impl_->Model(m)->latent_projection().dropout_state(), DropoutFile(dir, c));
  }
}

void HybridCommTrainer::Load(const std::string& dir) {
  for (int m = 0; m < impl_->pool->size(); ++m) {
    const ModelConfig& c = impl_->pool->config(m);
    torch::optim::AdamW& optimizer = *impl_->optimizers[m];
    LoadSafetensorsOrOlder(optimizer, dir + "/hybrid-optimizer-" + c.name,
                           [&](const std::string& f) { LoadAdamW(optimizer, f); });
    if (!c.latent) continue;
    LatentProjectionImpl& latent = impl_->Model(m)->latent_projection();
    const std::string older = dir + "/latent-dropout-" + c.name + ".pt";
    if (std::filesystem::exists(older) && !std::filesystem::exists(DropoutFile(dir, c))) {  // an older troupe's
      torch::Tensor state;
      LoadTorchFile(state, older);
      latent.set_dropout_state(state);
    } else {
      latent.set_dropout_state(LoadGeneratorState(DropoutFile(dir, c), latent.dropout_state()));
    }
  }
}

}  // namespace troupe
