// Hybrid latent-text messages: latent generation with the KV cache, soft-input
// splicing, and the two distillation stages.
#include "core/models/hybrid_comm.h"

#include <ATen/CPUGeneratorImpl.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "core/base/errors.h"
#include "core/models/model_pool_impl.h"
#include "core/vocab.h"

namespace troupe {

namespace {

torch::Tensor Longs(const std::vector<int64_t>& v, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), shape, torch::kLong).clone();
}

torch::Tensor Ids(const std::vector<int>& ids) {
  std::vector<int64_t> v(ids.begin(), ids.end());
  return Longs(v, {static_cast<int64_t>(v.size())});
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
  std::vector<torch::Tensor> padded;
  std::vector<int64_t> pos(B * T, 0);
  std::vector<uint8_t> valid(B * T, 0);
  for (int64_t i = 0; i < B; ++i) {
    const int64_t n = rows[i].size(0), off = T - n;
    padded.push_back(off > 0 ? torch::cat({torch::zeros({off, d}), rows[i]}) : rows[i]);
    for (int64_t t = 0; t < n; ++t) {
      pos[i * T + off + t] = t;
      valid[i * T + off + t] = 1;
    }
    b.lengths.push_back(n);
  }
  b.embeds = torch::stack(padded);
  b.positions = Longs(pos, {B, T});
  b.key_valid = torch::from_blob(valid.data(), {B, T}, torch::kUInt8).clone().to(torch::kBool);
  return b;
}

// Mean over layers of SmoothL1(student, teacher) / std(teacher). The std is the
// teacher's spread across the batch (per dimension, averaged): a std over all
// values would reward a large shared offset in the residual stream, which
// shrinks the loss without making the student any closer to the teacher.
torch::Tensor DistillLoss(const std::vector<torch::Tensor>& student, const std::vector<torch::Tensor>& teacher) {
  torch::Tensor loss = torch::zeros({});
  for (size_t l = 0; l < student.size(); ++l) {
    torch::Tensor t = teacher[l].detach();
    const torch::Tensor spread = t.size(0) > 1 ? t.std(0).mean() : t.std();
    loss = loss + torch::nn::functional::smooth_l1_loss(student[l], t) / (spread + 1e-6);
  }
  return loss / static_cast<double>(student.size());
}

}  // namespace

struct HybridCommTrainer::Impl {
  ModelPool* pool = nullptr;
  HybridSettings s;
  // One AdamW per model, with that model's learning rate and weight decay (its
  // gradients are clipped to its own grad_clip). A receiver reading vectors of
  // another width adapts them with its own latent_in layer, a parameter of the
  // model: optimised here and saved with it.
  std::vector<std::unique_ptr<torch::optim::AdamW>> optimizers;

  TransformerLM& Model(int m) { return pool->impl().models.at(m); }

  // Latent vectors z_1..z_K of each row's prompt (ending with <bot>), with the
  // KV cache left after them. Rows: one model. Returns [B,K,d].
  torch::Tensor Latents(int m, const std::vector<const std::vector<int>*>& prompts, const std::vector<int>& slots,
                        KvCache* cache, torch::Tensor* key_valid, std::vector<int64_t>* next_pos) {
    TransformerLM& model = Model(m);
    std::vector<torch::Tensor> rows;
    for (const auto* p : prompts) rows.push_back(model->embed(Ids(*p)));
    PaddedBatch b = Pad(rows);
    std::vector<int64_t> slot64(slots.begin(), slots.end());
    const torch::Tensor role = Longs(slot64, {static_cast<int64_t>(slots.size())});
    LMOutput o = model->forward_embeds(b.embeds, b.positions, b.key_valid, role, cache);
    *key_valid = b.key_valid;
    *next_pos = b.lengths;
    const int64_t B = static_cast<int64_t>(prompts.size());
    std::vector<torch::Tensor> zs;
    torch::Tensor h = o.hidden.select(1, o.hidden.size(1) - 1);
    for (int k = 0; k < s.latent_vectors; ++k) {
      torch::Tensor z = model->project_latent(h);
      zs.push_back(z);
      if (k + 1 == s.latent_vectors) break;
      *key_valid = torch::cat({*key_valid, torch::ones({B, 1}, torch::kBool)}, 1);
      o = model->forward_embeds(z.unsqueeze(1), Longs(*next_pos, {B, 1}), *key_valid, role, cache);
      for (auto& p : *next_pos) ++p;
      h = o.hidden.select(1, 0);
    }
    if (s.latent_vectors > 0) {
      for (auto& p : *next_pos) ++p;  // the last z is fed with the next input
      return torch::stack(zs, 1);
    }
    return torch::zeros({B, 0, model->options().d_model()});
  }

  // Continues cached rows with `tokens` [B,n] (the last latent, if any, goes first).
  LMOutput Continue(int m, const torch::Tensor& last_latents, const torch::Tensor& tokens,
                    const std::vector<int>& slots, KvCache* cache, torch::Tensor* key_valid,
                    std::vector<int64_t>* next_pos, bool all_layers) {
    TransformerLM& model = Model(m);
    const int64_t B = tokens.size(0), n = tokens.size(1);
    torch::Tensor x = model->embed(tokens);
    const bool with_latent = last_latents.defined() && last_latents.size(1) > 0;
    if (with_latent) x = torch::cat({last_latents.select(1, last_latents.size(1) - 1).unsqueeze(1), x}, 1);
    const int64_t steps = x.size(1);
    std::vector<int64_t> pos(B * steps);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t start = (*next_pos)[b] - (with_latent ? 1 : 0);
      for (int64_t t = 0; t < steps; ++t) pos[b * steps + t] = start + t;
      (*next_pos)[b] += n;
    }
    *key_valid = torch::cat({*key_valid, torch::ones({B, steps}, torch::kBool)}, 1);
    std::vector<int64_t> slot64(slots.begin(), slots.end());
    LMOutput o = model->forward_embeds(x, Longs(pos, {B, steps}), *key_valid, Longs(slot64, {B}), cache, all_layers);
    if (with_latent) {  // drop the latent's own position
      o.logits = o.logits.slice(1, 1);
      o.hidden = o.hidden.slice(1, 1);
      for (auto& l : o.layers) l = l.slice(1, 1);
    }
    return o;
  }

  // Latents of rows that share model `m`, with what generation continues from.
  struct LatentRun {
    torch::Tensor z;  // [B,K,d]
    KvCache cache;
    torch::Tensor key_valid;
    std::vector<int64_t> next_pos;
    std::vector<int> slots;
  };
  LatentRun RunLatents(int m, const std::vector<const std::vector<int>*>& prompts, std::vector<int> slots) {
    LatentRun r;
    r.slots = std::move(slots);
    r.z = Latents(m, prompts, r.slots, &r.cache, &r.key_valid, &r.next_pos);
    return r;
  }
  // The same for rows `idx` of a batch, given how to read a row's prompt and role slot.
  template <class Row>
  LatentRun RunLatents(int m, const std::vector<size_t>& idx, const Row& row) {
    std::vector<const std::vector<int>*> prompts;
    std::vector<int> slots;
    for (size_t i : idx) {
      const auto [prompt, slot] = row(i);
      prompts.push_back(prompt);
      slots.push_back(slot);
    }
    return RunLatents(m, prompts, std::move(slots));
  }

  // Full forward of rows made of segments; the answer's teacher-forced tokens end every row.
  LMOutput Rows(int m, const std::vector<torch::Tensor>& rows, const std::vector<int>& slots, bool all_layers) {
    PaddedBatch b = Pad(rows);
    std::vector<int64_t> slot64(slots.begin(), slots.end());
    return Model(m)->forward_embeds(b.embeds, b.positions, b.key_valid,
                                    Longs(slot64, {static_cast<int64_t>(slots.size())}), nullptr, all_layers);
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
    torch::Tensor distill = torch::zeros({});
    if (distill_on) distill = DistillLoss(LayersAt(student, n), LayersAt(teacher, n));
    st->answer_ce += ce.item<double>();
    st->teacher_ce += tce.item<double>();
    st->distill += distill.item<double>();
    return ce + s.distill_weight * distill + tce;
  }

  HybridStepStats Step(const torch::Tensor& loss, HybridStepStats st) {
    for (auto& o : optimizers) o->zero_grad();
    loss.backward();
    for (int m = 0; m < pool->size(); ++m) {
      const double clip = pool->config(m).grad_clip;
      if (clip > 0) torch::nn::utils::clip_grad_norm_(Model(m)->parameters(), clip);
      optimizers[m]->step();
    }
    st.loss = loss.item<double>();
    return st;
  }

  void Train(bool on) {
    for (int m = 0; m < pool->size(); ++m) Model(m)->train(on);
  }
};

HybridCommTrainer::HybridCommTrainer(ModelPool& pool, HybridSettings settings) : impl_(std::make_unique<Impl>()) {
  impl_->pool = &pool;
  impl_->s = settings;
  for (int m = 0; m < pool.size(); ++m) {
    const ModelConfig& c = pool.config(m);
    impl_->optimizers.push_back(std::make_unique<torch::optim::AdamW>(
        impl_->Model(m)->parameters(), torch::optim::AdamWOptions(c.lr).weight_decay(c.weight_decay)));
  }
}

HybridCommTrainer::~HybridCommTrainer() = default;

void HybridCommTrainer::SetDistillWeight(double weight) { impl_->s.distill_weight = weight; }

void HybridCommTrainer::Save(const std::string& dir) const {
  for (int m = 0; m < impl_->pool->size(); ++m) {
    torch::save(*impl_->optimizers[m], dir + "/hybrid-optimizer-" + impl_->pool->config(m).name + ".pt");
  }
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle on the one default generator
  torch::Tensor state;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    state = generator.get_state();
  }
  torch::save(state, dir + "/torch-generator.pt");
}

void HybridCommTrainer::Load(const std::string& dir) {
  for (int m = 0; m < impl_->pool->size(); ++m) {
    const std::string path = dir + "/hybrid-optimizer-" + impl_->pool->config(m).name + ".pt";
    if (!std::filesystem::exists(path)) throw CheckpointError("checkpoint lacks optimizer file " + path);
    torch::load(*impl_->optimizers[m], path);
  }
  torch::Tensor state;
  torch::load(state, dir + "/torch-generator.pt");
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

int64_t HybridCommTrainer::ParameterCount() const {
  int64_t n = 0;
  for (int m = 0; m < impl_->pool->size(); ++m) n += impl_->pool->ParameterCount(m);
  return n;
}

std::vector<SentMessage> HybridCommTrainer::Send(const std::vector<SendQuery>& queries) {
  torch::NoGradGuard no_grad;
  impl_->Train(false);
  std::vector<SentMessage> out(queries.size());
  std::map<int, std::vector<size_t>> by_model;
  for (size_t i = 0; i < queries.size(); ++i) by_model[queries[i].model].push_back(i);
  for (const auto& [m, idx] : by_model) {
    Impl::LatentRun run =
        impl_->RunLatents(m, idx, [&](size_t i) { return std::make_pair(&queries[i].prompt, queries[i].role_slot); });
    const std::vector<int>& slots = run.slots;
    const torch::Tensor& z = run.z;
    const int64_t B = static_cast<int64_t>(idx.size()), d = impl_->Model(m)->options().d_model();
    for (int64_t b = 0; b < B; ++b) {
      SentMessage& msg = out[idx[b]];
      msg.width = static_cast<int>(d);
      torch::Tensor row = z[b].contiguous();
      msg.latents.assign(row.data_ptr<float>(), row.data_ptr<float>() + row.numel());
    }
    int text = 0;
    for (size_t i : idx) text = std::max(text, queries[i].text_tokens);
    if (text == 0) continue;
    std::vector<int64_t> next(B, impl_->s.eot);
    torch::Tensor last = z;
    for (int t = 0; t < text; ++t) {
      LMOutput o =
          impl_->Continue(m, last, Longs(next, {B, 1}), slots, &run.cache, &run.key_valid, &run.next_pos, false);
      last = torch::Tensor();
      torch::Tensor logits = o.logits.select(1, o.logits.size(1) - 1);
      for (int64_t b = 0; b < B; ++b) {
        const SendQuery& q = queries[idx[b]];
        torch::Tensor row = logits[b].clone();
        if (!q.text_options.empty()) {
          torch::Tensor mask = torch::full_like(row, -1e9);
          for (int tok : q.text_options) mask[tok] = 0;
          row = row + mask;
        }
        next[b] = row.argmax().item<int64_t>();
        if (t < q.text_tokens) out[idx[b]].text.push_back(static_cast<int>(next[b]));
      }
    }
  }
  return out;
}

std::vector<std::vector<int>> HybridCommTrainer::Answer(const std::vector<AnswerQuery>& queries) {
  torch::NoGradGuard no_grad;
  impl_->Train(false);
  std::vector<std::vector<int>> out(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    // Small batches in evaluation: one row at a time keeps the splicing simple.
    const AnswerQuery& q = queries[i];
    TransformerLM& model = impl_->Model(q.model);
    std::vector<int> tail = {impl_->s.eot};
    for (int t = 0; t < q.answer_tokens; ++t) {
      std::vector<torch::Tensor> segs = {model->embed(Ids(q.prompt))};
      if (q.heard != nullptr && !q.heard->latents.empty()) {
        torch::Tensor z =
            torch::from_blob(const_cast<float*>(q.heard->latents.data()),
                             {static_cast<int64_t>(q.heard->latents.size()) / q.heard->width, q.heard->width})
                .clone();
        segs.push_back(model->adapt_latent(z));
      }
      segs.push_back(model->embed(Ids(tail)));
      LMOutput o = impl_->Rows(q.model, {torch::cat(segs)}, {q.role_slot}, false);
      torch::Tensor row = o.logits[0][o.logits.size(1) - 1].clone();
      if (!q.options.empty()) {
        torch::Tensor mask = torch::full_like(row, -1e9);
        for (int tok : q.options) mask[tok] = 0;
        row = row + mask;
      }
      const int pick = static_cast<int>(row.argmax().item<int64_t>());
      out[i].push_back(pick);
      tail.push_back(pick);
    }
  }
  return out;
}

HybridStepStats HybridCommTrainer::SelfDistill(const std::vector<SelfDistillExample>& batch) {
  impl_->Train(true);
  HybridStepStats st;
  torch::Tensor loss = torch::zeros({});
  std::map<int, std::vector<size_t>> by_model;
  for (size_t i = 0; i < batch.size(); ++i) by_model[batch[i].model].push_back(i);
  for (const auto& [m, idx] : by_model) {
    TransformerLM& model = impl_->Model(m);
    const int64_t B = static_cast<int64_t>(idx.size()), n = static_cast<int64_t>(batch[idx[0]].answer.size());
    std::vector<const std::vector<int>*> prompts;
    std::vector<int> slots;
    std::vector<int64_t> forced, targets;
    std::vector<torch::Tensor> teacher_rows;
    for (size_t i : idx) {
      const SelfDistillExample& e = batch[i];
      if (static_cast<int64_t>(e.answer.size()) != n) throw ModelError("hybrid: answers of one batch differ in length");
      prompts.push_back(&e.prompt);
      slots.push_back(e.role_slot);
      forced.push_back(impl_->s.eot);
      for (int64_t t = 0; t + 1 < n; ++t) forced.push_back(e.answer[t]);
      for (int a : e.answer) targets.push_back(a);
      std::vector<int> t = e.prompt;
      t.insert(t.end(), e.reasoning.begin(), e.reasoning.end());
      t.push_back(impl_->s.eot);
      t.insert(t.end(), e.answer.begin(), e.answer.end() - 1);
      teacher_rows.push_back(model->embed(Ids(t)));
    }
    Impl::LatentRun run = impl_->RunLatents(m, prompts, slots);
    LMOutput student =
        impl_->Continue(m, run.z, Longs(forced, {B, n}), slots, &run.cache, &run.key_valid, &run.next_pos, true);
    LMOutput teacher = impl_->Rows(m, teacher_rows, slots, true);
    loss = loss + impl_->AnswerLoss(student, teacher, Longs(targets, {B, n}), true, &st);
  }
  return impl_->Step(loss, st);
}

HybridStepStats HybridCommTrainer::CoTrain(const std::vector<CoTrainExample>& batch) {
  impl_->Train(true);
  HybridStepStats st;
  torch::Tensor loss = torch::zeros({});
  // Senders: latents (and the text they write, teacher-forced), per model.
  std::vector<torch::Tensor> latents(batch.size());
  std::map<int, std::vector<size_t>> senders;
  for (size_t i = 0; i < batch.size(); ++i) senders[batch[i].sender_model].push_back(i);
  for (const auto& [m, idx] : senders) {
    Impl::LatentRun run = impl_->RunLatents(
        m, idx, [&](size_t i) { return std::make_pair(&batch[i].sender_prompt, batch[i].sender_slot); });
    const std::vector<int>& slots = run.slots;
    for (size_t b = 0; b < idx.size(); ++b) latents[idx[b]] = run.z[static_cast<int64_t>(b)];
    const int64_t L = static_cast<int64_t>(batch[idx[0]].sender_text.size());
    if (L == 0) continue;
    std::vector<int64_t> forced, targets;
    for (size_t i : idx) {
      const auto& text = batch[i].sender_text;
      if (static_cast<int64_t>(text.size()) != L)
        throw ModelError("hybrid: sender texts of one batch differ in length");
      forced.push_back(impl_->s.eot);
      for (int64_t t = 0; t + 1 < L; ++t) forced.push_back(text[t]);
      for (int t : text) targets.push_back(t);
    }
    const int64_t B = static_cast<int64_t>(idx.size());
    LMOutput o =
        impl_->Continue(m, run.z, Longs(forced, {B, L}), slots, &run.cache, &run.key_valid, &run.next_pos, false);
    const torch::Tensor text_ce = Impl::LastCe(o.logits, Longs(targets, {B, L}));
    loss = loss + text_ce;
    st.text_ce += text_ce.item<double>();
  }
  // Receivers: the student reads the sender's latents; the teacher reads the message as text.
  std::map<int, std::vector<size_t>> receivers;
  for (size_t i = 0; i < batch.size(); ++i) receivers[batch[i].receiver_model].push_back(i);
  for (const auto& [m, idx] : receivers) {
    TransformerLM& model = impl_->Model(m);
    const int64_t n = static_cast<int64_t>(batch[idx[0]].answer.size()), B = static_cast<int64_t>(idx.size());
    std::vector<torch::Tensor> student_rows, teacher_rows;
    std::vector<int> slots;
    std::vector<int64_t> targets;
    for (size_t i : idx) {
      const CoTrainExample& e = batch[i];
      if (static_cast<int64_t>(e.answer.size()) != n) throw ModelError("hybrid: answers of one batch differ in length");
      std::vector<int> tail = {impl_->s.eot};
      tail.insert(tail.end(), e.answer.begin(), e.answer.end() - 1);
      torch::Tensor z = impl_->s.differentiable ? latents[i] : latents[i].detach();
      z = model->adapt_latent(z);
      student_rows.push_back(torch::cat({model->embed(Ids(e.receiver_prompt)), z, model->embed(Ids(tail))}));
      std::vector<int> t = e.teacher_prompt;
      t.insert(t.end(), tail.begin(), tail.end());
      teacher_rows.push_back(model->embed(Ids(t)));
      slots.push_back(e.receiver_slot);
      for (int a : e.answer) targets.push_back(a);
    }
    LMOutput student = impl_->Rows(m, student_rows, slots, true);
    LMOutput teacher = impl_->Rows(m, teacher_rows, slots, true);
    loss = loss + impl_->AnswerLoss(student, teacher, Longs(targets, {B, n}), impl_->s.latent_vectors > 0, &st);
  }
  return impl_->Step(loss, st);
}

}  // namespace troupe
