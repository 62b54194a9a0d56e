// Policy-gradient and supervised updates for every physical model of a pool.
#include "core/models/trainer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <sstream>

#include "core/base/errors.h"
#include "core/models/gae.h"
#include "core/models/learner_group.h"
#include "core/models/model_pool_impl.h"
#include "core/vocab.h"
#include "core/models/module_tensors.h"
#include "core/models/prefix_tree_pack.h"
#include "core/models/torch_files.h"
#include "core/base/file_io.h"

namespace troupe {

namespace {

// A batch of prompt+response sequences, with per-position targets. Plain
// calls are left-padded as a whole. Calls that sent vectors (all with the same
// latent_steps K) are aligned on their prompts' ends instead, responses
// right-padded, so their K own slots share columns and can be recomputed with
// the KV cache: prefix, K single steps, then <eot> and the response. Calls
// that share a prompt (a GRPO group's answers to one question) are aligned
// the same way, and their prompt is run once: the responses read its keys.
struct PackedBatch {
  torch::Tensor tokens, positions, valid, role;  // [B,T], [B,T], [B,T], [B]
  torch::Tensor target_mask;                     // [B,T-1] float: target is a response token
  torch::Tensor old_logp;                        // [B,T-1] behaviour log-probs at response targets
  torch::Tensor advantage;                       // [B,T-1] per-record advantage broadcast
  torch::Tensor last_mask;                       // [B,T-1] float: last response target
  torch::Tensor reward;                          // [B]
  // Response targets, the only positions whose logits are read: flat indices
  // into [B*(T-1)], their tokens and rows (prompts are most of a long sequence).
  torch::Tensor target_index, target_tokens, target_row;  // [N]
  torch::Tensor guide;                           // [N,V] additive mask for guided first tokens, or undefined
  std::vector<int64_t> first_target;             // per row: the target index of its first response token
  // Other agents' vectors read as data at soft slots (flat indices into B*T), by width.
  std::map<int, std::pair<torch::Tensor, torch::Tensor>> soft;  // width -> (index [n], rows [n,width])
  int latent_steps = 0;  // > 0: every row sent this many vectors, ending at column prompt_end - 2
  int64_t prompt_end = 0;
  // Shared prompts (defined when fewer distinct prompts than rows): each row's
  // distinct prompt [B], and the first row holding each distinct prompt [U].
  torch::Tensor prompt_of, prompt_first;
  // Prefix trees (defined for plain calls with a row budget): the rows the
  // model runs [R,Tn], each node seeing its ancestors [R,Tn,Tn], and for every
  // position of the layout above its node in the rows, flat [B*T].
  torch::Tensor tree_tokens, tree_positions, tree_allowed, tree_role, tree_gather;
  int64_t encoded = 0;  // token positions one forward pass over the batch runs, padding included
};

// The calls' prompts and responses as prefix trees in rows of about `budget` positions.
PrefixTreeRows CallTrees(const std::vector<const CallRecord*>& recs, int64_t budget) {
  std::vector<std::vector<int>> sequences;
  std::vector<int> slots;
  for (const CallRecord* r : recs) {
    sequences.emplace_back(r->prompt);
    sequences.back().insert(sequences.back().end(), r->response.begin(), r->response.end());
    slots.push_back(r->role_slot);
  }
  return PackPrefixTrees(sequences, slots, budget);
}

// Positions a forward pass over the rows runs, padding included.
int64_t TreePositions(const PrefixTreeRows& trees) {
  return static_cast<int64_t>(trees.rows.size()) * std::max<int64_t>(1, trees.longest);
}

// The batch's calls as rows of prefix trees (see PackedBatch), for the
// left-padded layout of width T (call b's t-th token at column T - L_b + t).
void PackTrees(const std::vector<const CallRecord*>& recs, const PrefixTreeRows& trees, int64_t T,
               torch::Device device, PackedBatch* p) {
  const int64_t R = static_cast<int64_t>(trees.rows.size()), Tn = std::max<int64_t>(1, trees.longest);
  std::vector<int64_t> tok(R * Tn, Vocab::kPad), pos(R * Tn, 0), role(R);
  std::vector<uint8_t> allowed(R * Tn * Tn, 0);
  for (int64_t r = 0; r < R; ++r) {
    const PrefixTreeRows::Row& row = trees.rows[r];
    role[r] = row.slot;
    uint8_t* mask = allowed.data() + r * Tn * Tn;
    for (int64_t n = 0; n < Tn; ++n) {
      uint8_t* line = mask + n * Tn;
      if (n < static_cast<int64_t>(row.tokens.size())) {
        tok[r * Tn + n] = row.tokens[n];
        pos[r * Tn + n] = row.depth[n];
        if (row.parent[n] >= 0) std::memcpy(line, mask + row.parent[n] * Tn, static_cast<size_t>(Tn));
      }
      line[n] = 1;  // itself (a padding node sees only itself)
    }
  }
  const int64_t B = static_cast<int64_t>(recs.size());
  std::vector<int64_t> gather(B * T, 0);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t base = trees.row_of[b] * Tn;
    std::fill(gather.begin() + b * T, gather.begin() + (b + 1) * T, base);
    const std::vector<int>& nodes = trees.node_of[b];
    const int64_t off = T - static_cast<int64_t>(nodes.size());
    for (size_t t = 0; t < nodes.size(); ++t) gather[b * T + off + static_cast<int64_t>(t)] = base + nodes[t];
  }
  auto lo = torch::TensorOptions().dtype(torch::kLong);
  p->tree_tokens = torch::from_blob(tok.data(), {R, Tn}, lo).clone().to(device);
  p->tree_positions = torch::from_blob(pos.data(), {R, Tn}, lo).clone().to(device);
  p->tree_allowed = torch::from_blob(allowed.data(), {R, Tn, Tn}, torch::kUInt8).clone().to(torch::kBool).to(device);
  p->tree_role = torch::from_blob(role.data(), {R}, lo).clone().to(device);
  p->tree_gather = torch::from_blob(gather.data(), {B * T}, lo).clone().to(device);
  p->encoded = R * Tn;  // padding included, as in the other layouts: what the forward pass runs
}

// Each record's distinct (role slot, prompt) among `recs`, numbered in order of first appearance.
std::vector<int64_t> DistinctPrompts(const std::vector<const CallRecord*>& recs, std::vector<int64_t>* firsts) {
  struct Less {  // by role slot, then prompt, without copying prompts
    bool operator()(const CallRecord* a, const CallRecord* b) const {
      return a->role_slot != b->role_slot ? a->role_slot < b->role_slot : a->prompt < b->prompt;
    }
  };
  std::map<const CallRecord*, int64_t, Less> seen;
  std::vector<int64_t> of;
  for (size_t b = 0; b < recs.size(); ++b) {
    auto [it, fresh] = seen.emplace(recs[b], static_cast<int64_t>(firsts->size()));
    if (fresh) firsts->push_back(static_cast<int64_t>(b));
    of.push_back(it->second);
  }
  return of;
}

PackedBatch Pack(const std::vector<const CallRecord*>& recs, torch::Device device, int64_t vocab, int64_t tree_budget) {
  const int64_t B = static_cast<int64_t>(recs.size());
  const int K = recs.empty() ? 0 : recs.front()->latent_steps;
  int64_t Tp = 0, R = 0;
  for (const auto* r : recs) {
    if (r->latent_steps != K) throw ModelError("a batch mixes calls that sent different numbers of vectors");
    Tp = std::max<int64_t>(Tp, static_cast<int64_t>(r->prompt.size()));
    R = std::max<int64_t>(R, static_cast<int64_t>(r->response.size()));
  }
  // Prompts run once for the rows that share them: plain calls (no vectors read or sent) only.
  const bool plain = K == 0 && std::all_of(recs.begin(), recs.end(), [](const CallRecord* r) {
    return std::find(r->prompt.begin(), r->prompt.end(), Vocab::kSoft) == r->prompt.end();
  });
  std::vector<int64_t> firsts;
  std::vector<int64_t> prompt_of = plain ? DistinctPrompts(recs, &firsts) : std::vector<int64_t>{};
  const int64_t distinct = static_cast<int64_t>(firsts.size());
  int64_t longest = 0;  // the longest call, prompt and response
  for (const auto* r : recs) {
    longest = std::max<int64_t>(longest, static_cast<int64_t>(r->prompt.size() + r->response.size()));
  }
  // Positions the calls' own layout runs, padding included: with `share`, each
  // distinct prompt once and every response after it; else every call whole,
  // aligned at the prompts' end (calls with vectors) or left-padded.
  const auto own_positions = [&](bool share) {
    return share ? distinct * Tp + B * R : B * (K > 0 ? Tp + R : longest);
  };
  // Prefix trees where they encode fewer positions than that layout: calls
  // that share little, or only whole prompts, fill tree rows worse.
  PrefixTreeRows trees;
  bool tree = false;
  if (plain && tree_budget > 0) {
    trees = CallTrees(recs, tree_budget);
    tree = TreePositions(trees) < own_positions(distinct < B);
  }
  const bool shared = plain && !tree && distinct < B;
  const bool aligned = K > 0 || shared;  // prompts end at one column, responses right-padded after it
  const int64_t T = aligned ? Tp + R : longest;
  std::vector<int64_t> tok(B * T, Vocab::kPad), pos(B * T, 0), role(B);
  std::vector<uint8_t> valid(B * T, 0);
  std::vector<float> mask(B * (T - 1), 0.f), old(B * (T - 1), 0.f), adv(B * (T - 1), 0.f), last(B * (T - 1), 0.f),
      reward(B);
  std::vector<int64_t> targets, target_tokens, target_rows, guided_at;  // guided_at: per record, its first target's n or -1
  std::map<int, std::pair<std::vector<int64_t>, std::vector<float>>> soft_rows;
  PackedBatch p;
  for (int64_t b = 0; b < B; ++b) {
    const CallRecord& r = *recs[b];
    const int64_t P = static_cast<int64_t>(r.prompt.size()), L = P + static_cast<int64_t>(r.response.size());
    const int64_t off = aligned ? Tp - P : T - L;  // column of the record's first token
    for (int64_t t = 0; t < L; ++t) {
      const size_t i = static_cast<size_t>(t);
      tok[b * T + off + t] = i < r.prompt.size() ? r.prompt[i] : r.response[i - r.prompt.size()];
      pos[b * T + off + t] = t;
      valid[b * T + off + t] = 1;
    }
    const int64_t first = off + P - 1;  // the target index predicting the first response token
    p.first_target.push_back(first);
    guided_at.push_back(r.first_options.empty() || r.response.empty() ? -1 : static_cast<int64_t>(targets.size()));
    for (size_t k = 0; k < r.response.size(); ++k) {
      const int64_t target = first + static_cast<int64_t>(k);
      targets.push_back(b * (T - 1) + target);
      target_tokens.push_back(r.response[k]);
      target_rows.push_back(b);
      mask[b * (T - 1) + target] = 1.f;
      old[b * (T - 1) + target] = k < r.logprobs.size() ? r.logprobs[k] : 0.f;
      adv[b * (T - 1) + target] = static_cast<float>(r.advantage);
    }
    if (!r.response.empty()) last[b * (T - 1) + first + static_cast<int64_t>(r.response.size()) - 1] = 1.f;
    role[b] = r.role_slot;
    reward[b] = static_cast<float>(r.reward);
    // Soft slots: the first ones read data; the last latent_steps are the call's own vectors.
    std::vector<int64_t> slots;
    for (size_t t = 0; t < r.prompt.size(); ++t) {
      if (r.prompt[t] == Vocab::kSoft) slots.push_back(b * T + off + static_cast<int64_t>(t));
    }
    const int64_t data_slots = static_cast<int64_t>(slots.size()) - K;
    const bool own_at_end = K == 0 || (P >= K + 2 && std::all_of(r.prompt.end() - 1 - K, r.prompt.end() - 1,
                                                                 [](int t) { return t == Vocab::kSoft; }));
    if (data_slots < 0 || !own_at_end) {
      throw ModelError("a call that sent " + std::to_string(K) + " vectors needs <bot>, " + std::to_string(K) +
                       " soft slots and <eot> at its prompt's end");
    }
    if (data_slots > 0) {
      if (r.soft_width <= 0 || static_cast<int64_t>(r.soft_inputs.size()) != data_slots * r.soft_width) {
        throw ModelError("a call record has " + std::to_string(data_slots) + " soft slots but " +
                         std::to_string(r.soft_inputs.size()) + " values of width " + std::to_string(r.soft_width));
      }
      auto& [where, rows] = soft_rows[r.soft_width];
      where.insert(where.end(), slots.begin(), slots.begin() + data_slots);
      rows.insert(rows.end(), r.soft_inputs.begin(), r.soft_inputs.end());
    }
  }
  auto lo = torch::TensorOptions().dtype(torch::kLong);
  auto fo = torch::TensorOptions().dtype(torch::kFloat);
  p.tokens = torch::from_blob(tok.data(), {B, T}, lo).clone().to(device);
  p.positions = torch::from_blob(pos.data(), {B, T}, lo).clone().to(device);
  p.valid = torch::from_blob(valid.data(), {B, T}, torch::kUInt8).clone().to(torch::kBool).to(device);
  p.role = torch::from_blob(role.data(), {B}, lo).clone().to(device);
  p.target_mask = torch::from_blob(mask.data(), {B, T - 1}, fo).clone().to(device);
  p.old_logp = torch::from_blob(old.data(), {B, T - 1}, fo).clone().to(device);
  p.advantage = torch::from_blob(adv.data(), {B, T - 1}, fo).clone().to(device);
  p.last_mask = torch::from_blob(last.data(), {B, T - 1}, fo).clone().to(device);
  p.reward = torch::from_blob(reward.data(), {B}, fo).clone().to(device);
  const int64_t N = static_cast<int64_t>(targets.size());
  p.target_index = torch::from_blob(targets.data(), {N}, lo).clone().to(device);
  p.target_tokens = torch::from_blob(target_tokens.data(), {N}, lo).clone().to(device);
  p.target_row = torch::from_blob(target_rows.data(), {N}, lo).clone().to(device);
  if (std::any_of(guided_at.begin(), guided_at.end(), [](int64_t n) { return n >= 0; })) {
    std::vector<float> g(static_cast<size_t>(N * vocab), 0.f);
    for (int64_t b = 0; b < B; ++b) {
      if (guided_at[b] < 0) continue;
      float* row = g.data() + guided_at[b] * vocab;
      std::fill(row, row + vocab, -1e9f);
      for (int t : recs[b]->first_options) row[t] = 0.f;
    }
    p.guide = torch::from_blob(g.data(), {N, vocab}, fo).clone().to(device);
  }
  for (auto& [width, where_rows] : soft_rows) {
    auto& [where, rows] = where_rows;
    const int64_t n = static_cast<int64_t>(where.size());
    p.soft[width] = {torch::from_blob(where.data(), {n}, lo).clone().to(device),
                     torch::from_blob(rows.data(), {n, width}, fo).clone().to(device)};
  }
  p.latent_steps = K;
  p.prompt_end = Tp;
  p.encoded = own_positions(shared);
  if (shared) {
    p.prompt_of = torch::from_blob(prompt_of.data(), {B}, lo).clone().to(device);
    p.prompt_first = torch::from_blob(firsts.data(), {static_cast<int64_t>(firsts.size())}, lo).clone().to(device);
  }
  if (tree) PackTrees(recs, trees, T, device, &p);  // plain calls: the left-padded layout
  return p;
}

// The distinct prompts once, then every row's response reading its prompt's
// keys: the same outputs as one pass over the rows, for a fraction of the work.
LMOutput ForwardSharedPrompts(PolicyModel& model, const PackedBatch& p) {
  const int64_t T = p.tokens.size(1), Tp = p.prompt_end, R = T - Tp;
  const auto prompts = [&](const torch::Tensor& t) { return t.index_select(0, p.prompt_first).narrow(1, 0, Tp); };
  KvCache cache;
  LMOutput head = model->forward_hidden(model->embed(prompts(p.tokens)), prompts(p.positions), prompts(p.valid),
                                        p.role.index_select(0, p.prompt_first), &cache);
  LMOutput o;
  o.hidden = head.hidden.index_select(0, p.prompt_of);
  o.values = head.values.index_select(0, p.prompt_of);
  if (R == 0) return o;
  for (auto& k : cache.keys) k = k.index_select(0, p.prompt_of);
  for (auto& v : cache.values) v = v.index_select(0, p.prompt_of);
  LMOutput tail = model->forward_hidden(model->embed(p.tokens.narrow(1, Tp, R)), p.positions.narrow(1, Tp, R), p.valid,
                                        p.role, &cache);
  o.hidden = torch::cat({o.hidden, tail.hidden}, 1);
  o.values = torch::cat({o.values, tail.values}, 1);
  return o;
}

// The prefix-tree rows once, then each call's positions read from their nodes:
// the outputs of one pass over every call, each shared prefix encoded once.
LMOutput ForwardTrees(PolicyModel& model, const PackedBatch& p) {
  const int64_t B = p.tokens.size(0), T = p.tokens.size(1);
  const LMOutput rows = model->forward_hidden(model->embed(p.tree_tokens), p.tree_positions, p.tree_allowed, p.tree_role);
  const int64_t d = rows.hidden.size(2);
  LMOutput o;
  o.hidden = rows.hidden.reshape({-1, d}).index_select(0, p.tree_gather).view({B, T, d});
  o.values = rows.values.reshape({-1}).index_select(0, p.tree_gather).view({B, T});
  return o;
}

// The model's outputs over a packed batch. Other agents' vectors go in at their
// soft slots. A call's own vectors are recomputed as they were sent, with the
// KV cache: the prompt up to <bot>, then K steps each feeding z = Prj(h) back,
// then <eot> and the response; the text's loss reaches the projection.
// Hidden states and values only: Score applies the LM head where it reads.
LMOutput Forward(PolicyModel& model, const PackedBatch& p) {
  if (p.tree_tokens.defined()) return ForwardTrees(model, p);
  if (p.prompt_of.defined()) return ForwardSharedPrompts(model, p);
  const int64_t B = p.tokens.size(0), T = p.tokens.size(1), d = model->width();
  torch::Tensor embeds = model->embed(p.tokens).view({B * T, d});
  for (const auto& [width, index_rows] : p.soft) {
    embeds = embeds.index_copy(0, index_rows.first, model->adapt_latent(index_rows.second));
  }
  embeds = embeds.view({B, T, d});
  if (p.latent_steps == 0) return model->forward_hidden(embeds, p.positions, p.valid, p.role);
  const int64_t K = p.latent_steps, slots = p.prompt_end - 1 - K;  // the first own slot's column
  KvCache cache;
  std::vector<LMOutput> parts;
  parts.push_back(model->forward_hidden(embeds.narrow(1, 0, slots), p.positions.narrow(1, 0, slots),
                                        p.valid.narrow(1, 0, slots), p.role, &cache));
  LatentStepsOutput sent = model->send_latents(
      parts.back().hidden.select(1, slots - 1), K,
      [&](int64_t j) {
        return std::make_pair(p.positions.narrow(1, slots + j, 1), p.valid.narrow(1, 0, slots + j + 1));
      },
      p.role, &cache);
  parts.insert(parts.end(), sent.steps.begin(), sent.steps.end());
  const int64_t tail = T - slots - K;
  parts.push_back(model->forward_hidden(embeds.narrow(1, slots + K, tail), p.positions.narrow(1, slots + K, tail),
                                        p.valid, p.role, &cache));
  std::vector<torch::Tensor> hidden, values;
  for (const auto& part : parts) {
    hidden.push_back(part.hidden);
    values.push_back(part.values);
  }
  LMOutput o;
  o.hidden = torch::cat(hidden, 1);
  o.values = torch::cat(values, 1);
  return o;
}

struct Scored {
  torch::Tensor logp, entropy, values;  // [B,T-1]
};

// Log-probs and entropies at the response targets (zero elsewhere): the LM
// head and softmax run over those positions only.
Scored Score(PolicyModel& model, const PackedBatch& p, double temperature) {
  LMOutput o = Forward(model, p);
  const int64_t B = p.tokens.size(0), T = p.tokens.size(1), d = o.hidden.size(2);
  const torch::Tensor h = o.hidden.narrow(1, 0, T - 1).reshape({B * (T - 1), d}).index_select(0, p.target_index);
  torch::Tensor logits = model->lm_logits(h.unsqueeze(1), p.role.index_select(0, p.target_row)).squeeze(1);  // [N,V]
  logits = logits / temperature;
  if (p.guide.defined()) logits = logits + p.guide;
  const torch::Tensor all = torch::log_softmax(logits, -1);
  const torch::Tensor logp = all.gather(-1, p.target_tokens.unsqueeze(-1)).squeeze(-1);
  const torch::Tensor entropy = -(all.exp() * all).sum(-1);
  const torch::Tensor zeros = torch::zeros({B * (T - 1)}, logp.options());
  Scored s;
  s.logp = zeros.index_copy(0, p.target_index, logp).view({B, T - 1});
  s.entropy = zeros.index_copy(0, p.target_index, entropy).view({B, T - 1});
  s.values = o.values.narrow(1, 0, T - 1);
  return s;
}

// Token-level GAE with the reward on each call's last response token.
torch::Tensor Gae(const torch::Tensor& values, const PackedBatch& p, double gamma, double lambda) {
  return TokenGae(values, p.last_mask * p.reward.unsqueeze(1), p.target_mask, gamma, lambda);
}

}  // namespace

// A minibatch packed in passes (TrainerConfig::pass_positions): the whole
// batch when it encodes at most `most` positions (0: no limit), else its two
// halves, in order, each cut again until it fits or is one call.
struct Pass {
  std::vector<const CallRecord*> records;
  PackedBatch packed;
};

void PackInPasses(const std::vector<const CallRecord*>& recs, torch::Device device, int64_t vocab,
                  int64_t tree_budget, int64_t most, std::vector<Pass>* passes) {
  PackedBatch packed = Pack(recs, device, vocab, tree_budget);
  if (most <= 0 || packed.encoded <= most || recs.size() < 2) {
    passes->push_back({recs, std::move(packed)});
    return;
  }
  const auto half = recs.begin() + static_cast<std::ptrdiff_t>(recs.size() / 2);
  PackInPasses({recs.begin(), half}, device, vocab, tree_budget, most, passes);
  PackInPasses({half, recs.end()}, device, vocab, tree_budget, most, passes);
}

struct Trainer::Impl {
  ModelPool* pool;
  TrainerConfig config;
  Rng rng;
  std::vector<std::unique_ptr<torch::optim::AdamW>> optimizers;
  std::vector<PolicyModel> references;  // frozen copies for the KL term

  std::unique_ptr<LearnerGroup> learners;  // data-parallel peers (world > 1), or none

  bool Parallel() const { return learners && learners->world() > 1; }

  // The records of `recs` that this learner scores: with data-parallel
  // learners, learner r owns the records at indices r, r + N, ... of the
  // update's record list (the same list on every learner).
  std::vector<const CallRecord*> Own(const std::vector<const CallRecord*>& recs, const CallRecord* first) const {
    if (!Parallel()) return recs;
    std::vector<const CallRecord*> own;
    for (const CallRecord* r : recs) {
      if ((r - first) % learners->world() == learners->rank()) own.push_back(r);
    }
    return own;
  }

  // Sums the gradients over the learners in one collective. A flag per
  // parameter travels with them: a parameter no learner reached keeps no
  // gradient (AdamW skips it), as it would with one learner on the whole batch.
  void ReduceGradients(const std::vector<torch::Tensor>& params) {
    std::vector<torch::Tensor> parts;
    parts.reserve(params.size() + 1);
    torch::Tensor reached = torch::zeros({static_cast<int64_t>(params.size())});
    for (size_t i = 0; i < params.size(); ++i) {
      const bool has = params[i].grad().defined();
      if (has) reached[static_cast<int64_t>(i)] = 1.0;
      parts.push_back(has ? params[i].grad() : torch::zeros_like(params[i]));
    }
    parts.push_back(reached);
    learners->AllReduceSum(parts);  // in place: defined gradients are summed where they are
    const auto flags = parts.back().accessor<float, 1>();
    for (size_t i = 0; i < params.size(); ++i) {
      if (!params[i].grad().defined() && flags[static_cast<int64_t>(i)] > 0) {
        params[i].mutable_grad() = parts[i];
      }
    }
  }

  // One optimiser step from the gradients `accumulate` leaves (the backward
  // passes of a minibatch's losses; none: this learner owns no record of the
  // minibatch, and only adds its share of nothing to the sum). Returns the
  // gradient norm before clipping, left on the device (no host sync).
  torch::Tensor Step(int m, const std::function<void()>& accumulate) {
    auto& opt = *optimizers[m];
    opt.zero_grad();
    accumulate();
    const std::vector<torch::Tensor> params = pool->impl().models[m]->parameters();
    if (Parallel()) ReduceGradients(params);
    std::vector<torch::Tensor> norms;
    for (const auto& p : params) {
      if (p.grad().defined()) norms.push_back(p.grad().norm());
    }
    torch::Tensor norm = norms.empty() ? torch::zeros({}) : torch::stack(norms).norm();
    const double clip = pool->config(m).grad_clip;
    if (clip > 0 && !norms.empty()) {
      // As torch::nn::utils::clip_grad_norm_, without reading the norm on the host.
      const torch::Tensor coef = (clip / (norm + 1e-6)).clamp_max(1.0);
      for (const auto& p : params) {
        if (p.grad().defined()) p.grad().mul_(coef);
      }
    }
    opt.step();
    return norm;
  }

  // Sums over the learners of statistics kept on the device, then one read.
  std::vector<double> Read(torch::Tensor summed, const torch::Tensor& same_on_all) {
    if (Parallel()) {
      std::vector<torch::Tensor> parts = {summed};
      learners->AllReduceSum(parts);
    }
    const torch::Tensor host =
        torch::cat({summed.reshape({-1}).to(torch::kCPU), same_on_all.reshape({-1}).to(torch::kCPU)}).to(torch::kDouble);
    return {host.data_ptr<double>(), host.data_ptr<double>() + host.numel()};
  }

  void Shuffle(std::vector<const CallRecord*>& recs) {
    for (size_t i = recs.size(); i > 1; --i) std::swap(recs[i - 1], recs[rng.Below(static_cast<int>(i))]);
  }

  // Minibatches of whole episode groups (episodes that share a start), in a
  // shuffled order: a group's calls share prefixes (each prompt repeats the
  // conversation so far, and the group's episodes begin alike), which the
  // prefix-tree scoring encodes once. Calls that sent vectors are packed
  // apart, by their number of vectors (see Pack).
  std::vector<std::vector<const CallRecord*>> Minibatches(std::vector<const CallRecord*> recs) {
    std::map<int64_t, size_t> group_place, episode_place;  // places in shuffled orders
    Shuffled(recs, [](const CallRecord* r) { return static_cast<int64_t>(r->group); }, &group_place);
    Shuffled(recs, [](const CallRecord* r) { return r->episode; }, &episode_place);
    std::stable_sort(recs.begin(), recs.end(), [&](const CallRecord* a, const CallRecord* b) {
      if (a->latent_steps != b->latent_steps) return a->latent_steps < b->latent_steps;
      if (a->group != b->group) return group_place[a->group] < group_place[b->group];
      return episode_place[a->episode] < episode_place[b->episode];
    });
    std::vector<std::vector<const CallRecord*>> out = Chunks(recs, static_cast<size_t>(std::max(1, config.minibatch)));
    for (size_t i = out.size(); i > 1; --i) std::swap(out[i - 1], out[rng.Below(static_cast<int>(i))]);
    return out;
  }

  // The distinct keys of `recs`, each given its place in a shuffled order.
  template <typename Key>
  void Shuffled(const std::vector<const CallRecord*>& recs, const Key& key, std::map<int64_t, size_t>* place) {
    std::vector<int64_t> keys;
    for (const CallRecord* r : recs) {
      if (place->emplace(key(r), 0).second) keys.push_back(key(r));
    }
    for (size_t i = keys.size(); i > 1; --i) std::swap(keys[i - 1], keys[rng.Below(static_cast<int>(i))]);
    for (size_t i = 0; i < keys.size(); ++i) (*place)[keys[i]] = i;
  }

  // Consecutive runs of at most `size` records with the same number of sent vectors.
  static std::vector<std::vector<const CallRecord*>> Chunks(const std::vector<const CallRecord*>& recs, size_t size) {
    std::vector<std::vector<const CallRecord*>> out;
    for (size_t i = 0; i < recs.size();) {
      size_t end = i;
      while (end < recs.size() && end - i < size && recs[end]->latent_steps == recs[i]->latent_steps) ++end;
      out.emplace_back(recs.begin() + i, recs.begin() + end);
      i = end;
    }
    return out;
  }
};

Trainer::Trainer(ModelPool& pool, TrainerConfig config, uint64_t seed) : impl_(std::make_unique<Impl>()) {
  impl_->pool = &pool;
  impl_->config = config;
  impl_->rng = Rng(Rng::Mix(seed, 77));
  for (int m = 0; m < pool.size(); ++m) {
    const ModelConfig& c = pool.config(m);
    if (c.frozen) {  // never updated: no optimiser, and no copy for the KL term (the model holds its place)
      impl_->optimizers.push_back(nullptr);
      if (config.kl_coef > 0) impl_->references.push_back(pool.impl().models[m]);
      continue;
    }
    impl_->optimizers.push_back(std::make_unique<torch::optim::AdamW>(
        pool.impl().models[m]->parameters(), torch::optim::AdamWOptions(c.lr).weight_decay(c.weight_decay)));
    if (config.kl_coef > 0) {
      // A frozen copy of the initial model: same options, parameters copied.
      PolicyModel& model = pool.impl().models[m];
      PolicyModel ref = model->fresh_copy();
      ref->to(pool.impl().devices[m]);
      CopyParameters(*model, *ref);
      for (auto& p : ref->parameters()) p.set_requires_grad(false);
      ref->set_latent_dropout(false);
      ref->set_bf16(model->bf16());
      impl_->references.push_back(ref);
    }
  }
}

Trainer::~Trainer() = default;

namespace {

// Length-prefixed pieces of one state string.
std::string Frame(const std::string& piece) {
  const uint64_t n = piece.size();
  return std::string(reinterpret_cast<const char*>(&n), sizeof n) + piece;
}

std::string Unframe(const std::string& s, size_t* at) {
  uint64_t n = 0;
  if (*at + sizeof n > s.size()) throw ModelError("a trainer state ends early");
  std::memcpy(&n, s.data() + *at, sizeof n);
  *at += sizeof n;
  if (n > s.size() - *at) throw ModelError("a trainer state ends early");
  std::string piece = s.substr(*at, n);
  *at += n;
  return piece;
}

// The records of model `m` that have a response to learn from.
std::vector<const CallRecord*> RecordsOf(const std::vector<CallRecord>& records, int m) {
  std::vector<const CallRecord*> recs;
  for (const auto& r : records) {
    if (r.model == m && !r.response.empty()) recs.push_back(&r);
  }
  return recs;
}

}  // namespace

namespace {

// Response tokens of a minibatch: the loss's denominator on every learner.
double TargetTokens(const std::vector<const CallRecord*>& recs) {
  double n = 0;
  for (const CallRecord* r : recs) n += static_cast<double>(r->response.size());
  return std::max(1.0, n);
}

}  // namespace

std::vector<ModelTrainStats> Trainer::Update(const std::vector<CallRecord>& records) {
  const TrainerConfig& cfg = impl_->config;
  std::vector<ModelTrainStats> stats(impl_->pool->size());
  const CallRecord* first = records.data();
  for (int m = 0; m < impl_->pool->size(); ++m) {
    std::vector<const CallRecord*> recs = RecordsOf(records, m);
    if (recs.empty() || impl_->pool->config(m).frozen) continue;
    if (cfg.update_records > 0 && static_cast<int>(recs.size()) > cfg.update_records) {
      impl_->Shuffle(recs);
      recs.resize(cfg.update_records);
    }
    PolicyModel& model = impl_->pool->impl().models[m];
    model->set_latent_dropout(false);  // the vectors are recomputed exactly as they were sent
    const torch::Device device = impl_->pool->impl().devices[m];
    ModelTrainStats& st = stats[m];
    st.records = static_cast<int>(recs.size());
    st.learners = impl_->Parallel() ? impl_->learners->world() : 1;

    // PPO: advantages from values of the model before the update, whitened per
    // model batch (over all learners' records: their sums travel together).
    std::map<const CallRecord*, std::pair<torch::Tensor, torch::Tensor>> ppo;  // record -> (adv, returns) rows
    if (cfg.estimator == Estimator::kPpo) {
      torch::NoGradGuard no_grad;
      std::vector<const CallRecord*> by_vectors = impl_->Own(recs, first);
      std::stable_sort(by_vectors.begin(), by_vectors.end(),
                       [](const CallRecord* a, const CallRecord* b) { return a->latent_steps < b->latent_steps; });
      const std::vector<std::vector<const CallRecord*>> chunks = Impl::Chunks(by_vectors, 1024);
      torch::Tensor moments = torch::zeros({3}, torch::TensorOptions().device(device));  // sum, sum of squares, count
      for (const auto& chunk : chunks) {
        std::vector<Pass> passes;
        PackInPasses(chunk, device, impl_->pool->config(m).vocab_size, cfg.tree_row_budget, cfg.pass_positions,
                     &passes);
        for (const Pass& pass : passes) {
          const std::vector<const CallRecord*>& c = pass.records;
          const PackedBatch& p = pass.packed;
          st.positions += p.encoded;
          Scored s = Score(model, p, cfg.temperature);
          torch::Tensor adv = Gae(s.values, p, cfg.gamma, cfg.lambda);
          moments +=
              torch::stack({(adv * p.target_mask).sum(), (adv * adv * p.target_mask).sum(), p.target_mask.sum()});
          for (size_t b = 0; b < c.size(); ++b) {
            const int64_t resp = static_cast<int64_t>(c[b]->response.size());
            torch::Tensor a = adv[b].narrow(0, p.first_target[b], resp);
            torch::Tensor ret = a + s.values[b].narrow(0, p.first_target[b], resp);
            ppo[c[b]] = {a, ret};
          }
        }
      }
      if (impl_->Parallel()) {
        std::vector<torch::Tensor> parts = {moments};
        impl_->learners->AllReduceSum(parts);
      }
      const torch::Tensor n = moments[2].clamp_min(1.0);
      const torch::Tensor mean = moments[0] / n;
      const torch::Tensor sd = (moments[1] / n - mean * mean).clamp_min(1e-12).sqrt();
      for (auto& [r, pr] : ppo) pr.first = (pr.first - mean) / (sd + 1e-8);
    }

    // Per-step statistics stay on the device and are read once, after the update:
    // loss, policy loss, value loss, entropy, KL, clip fraction (each learner's share).
    torch::Tensor sums = torch::zeros({6}, torch::TensorOptions().device(device));
    torch::Tensor norm_sum = torch::zeros({}, torch::TensorOptions().device(device));
    for (int epoch = 0; epoch < cfg.epochs; ++epoch) {
      for (const auto& all : impl_->Minibatches(recs)) {
        const double ntok = TargetTokens(all);
        const std::vector<const CallRecord*> mb = impl_->Own(all, first);
        st.steps += 1;
        st.tokens += static_cast<int>(ntok);
        std::vector<Pass> passes;
        if (!mb.empty()) {
          PackInPasses(mb, device, impl_->pool->config(m).vocab_size, cfg.tree_row_budget, cfg.pass_positions,
                       &passes);
        }
        // Each pass's loss is its share of the minibatch's (divided by the whole minibatch's tokens): the
        // gradients of the passes add up to the one pass's.
        auto pass_loss = [&](Pass& pass) {
          const std::vector<const CallRecord*>& recs_now = pass.records;
          PackedBatch& p = pass.packed;
          st.positions += p.encoded * (cfg.kl_coef > 0 ? 2 : 1);  // the policy's pass and the reference's
          torch::Tensor returns;
          if (cfg.estimator == Estimator::kPpo) {
            p.advantage.zero_();
            returns = torch::zeros_like(p.advantage);
            for (size_t b = 0; b < recs_now.size(); ++b) {
              const int64_t resp = static_cast<int64_t>(recs_now[b]->response.size());
              const auto& pr = ppo.at(recs_now[b]);
              p.advantage[b].narrow(0, p.first_target[b], resp).copy_(pr.first);
              returns[b].narrow(0, p.first_target[b], resp).copy_(pr.second);
            }
          }
          Scored s = Score(model, p, cfg.temperature);
          const torch::Tensor mask = p.target_mask;
          torch::Tensor ratio = (s.logp - p.old_logp).exp();
          torch::Tensor unclipped = ratio * p.advantage;
          torch::Tensor clipped = ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * p.advantage;
          torch::Tensor policy_loss = -(torch::min(unclipped, clipped) * mask).sum() / ntok;
          torch::Tensor entropy = (s.entropy * mask).sum() / ntok;
          torch::Tensor loss = policy_loss - cfg.entropy_coef * entropy;
          torch::Tensor value_loss = torch::zeros({}, mask.options());
          if (cfg.estimator == Estimator::kPpo) {
            value_loss = ((s.values - returns).pow(2) * mask).sum() / ntok;
            loss = loss + cfg.value_coef * value_loss;
          }
          torch::Tensor kl = torch::zeros({}, mask.options());
          if (cfg.kl_coef > 0) {
            torch::Tensor ref_logp;
            {
              torch::NoGradGuard no_grad;
              ref_logp = Score(impl_->references[m], p, cfg.temperature).logp;
            }
            // k3 estimator of KL(pi || ref): exp(ref - logp) - (ref - logp) - 1.
            torch::Tensor d = ref_logp - s.logp;
            kl = ((d.exp() - d - 1) * mask).sum() / ntok;
            loss = loss + cfg.kl_coef * kl;
          }
          torch::Tensor clip_frac = (((ratio - 1).abs() > cfg.clip).to(torch::kFloat) * mask).sum() / ntok;
          sums += torch::stack({loss, policy_loss, value_loss, entropy, kl, clip_frac}).detach();
          return loss;
        };
        norm_sum += impl_->Step(m, [&] {
          for (Pass& pass : passes) pass_loss(pass).backward();
        });
      }
    }
    const std::vector<double> v = impl_->Read(sums, norm_sum);
    const double k = std::max(1, st.steps);
    st.tokens /= std::max(1, cfg.epochs);
    st.loss = v[0] / k;
    st.policy_loss = v[1] / k;
    st.value_loss = v[2] / k;
    st.entropy = v[3] / k;
    st.kl = v[4] / k;
    st.clip_fraction = v[5] / k;
    st.grad_norm = v[6] / k;
  }
  return stats;
}

std::vector<ModelTrainStats> Trainer::Supervised(const std::vector<CallRecord>& demos, int steps) {
  std::vector<ModelTrainStats> stats(impl_->pool->size());
  const CallRecord* first = demos.data();
  for (int m = 0; m < impl_->pool->size(); ++m) {
    std::vector<const CallRecord*> recs = RecordsOf(demos, m);
    if (recs.empty() || impl_->pool->config(m).frozen) continue;
    PolicyModel& model = impl_->pool->impl().models[m];
    const torch::Device device = impl_->pool->impl().devices[m];
    ModelTrainStats& st = stats[m];
    st.records = static_cast<int>(recs.size());
    st.learners = impl_->Parallel() ? impl_->learners->world() : 1;
    torch::Tensor last = torch::zeros({2}, torch::TensorOptions().device(device));  // the last step's loss, entropy
    int done = 0;
    while (done < steps) {
      for (const auto& all : impl_->Minibatches(recs)) {
        if (done++ >= steps) break;
        const double ntok = TargetTokens(all);
        const std::vector<const CallRecord*> mb = impl_->Own(all, first);
        std::vector<Pass> passes;
        last.zero_();
        if (!mb.empty()) {
          PackInPasses(mb, device, impl_->pool->config(m).vocab_size, impl_->config.tree_row_budget,
                       impl_->config.pass_positions, &passes);
        }
        impl_->Step(m, [&] {
          for (Pass& pass : passes) {
            const PackedBatch& p = pass.packed;
            st.positions += p.encoded;
            Scored s = Score(model, p, 1.0);
            const torch::Tensor loss = -(s.logp * p.target_mask).sum() / ntok;
            last += torch::stack({loss, (s.entropy * p.target_mask).sum() / ntok}).detach();
            loss.backward();
          }
        });
        st.steps += 1;
      }
    }
    const std::vector<double> v = impl_->Read(last, torch::zeros({0}));
    st.loss = v[0];
    st.entropy = v[1];
    // The KL term anchors reinforcement learning to the model it starts from:
    // after a warm start, the warm-started model (as RLHF anchors to its SFT model).
    if (!impl_->references.empty()) CopyParameters(*model, *impl_->references[m]);
  }
  return stats;
}

void Trainer::JoinLearners(const LearnerGroupSpec& spec) {
  if (impl_->learners && impl_->learners->spec().prefix == spec.prefix && impl_->learners->rank() == spec.rank &&
      impl_->learners->world() == spec.world) {
    return;
  }
  impl_->learners.reset();
  if (spec.world < 2) return;
  LearnerGroupSpec placed = spec;  // on the device of the model this worker serves (a worker serves one)
  if (impl_->pool->size() > 0) placed.device = impl_->pool->config(0).device.empty() ? "cpu" : impl_->pool->config(0).device;
  impl_->learners = std::make_unique<LearnerGroup>(placed);
}

std::string Trainer::SaveState() const {
  std::string out = Frame(impl_->rng.Save());
  for (const auto& opt : impl_->optimizers) {
    if (!opt) continue;  // a frozen model
    std::ostringstream bytes;
    torch::save(*opt, bytes);
    out += Frame(bytes.str());
  }
  return out;
}

void Trainer::LoadState(const std::string& state) {
  size_t at = 0;
  impl_->rng.Load(Unframe(state, &at));
  for (auto& opt : impl_->optimizers) {
    if (!opt) continue;  // a frozen model
    std::istringstream bytes(Unframe(state, &at));
    opt->state().clear();  // loading sets the saved entries only: steps taken since must not linger
    torch::load(*opt, bytes);
  }
}

std::vector<std::vector<float>> Trainer::ResponseLogProbs(const std::vector<CallRecord>& records) {
  torch::NoGradGuard no_grad;
  std::vector<std::vector<float>> out(records.size());
  // Scored as the update scores them: in batches of one model and one number of sent vectors.
  std::map<std::pair<int, int>, std::vector<const CallRecord*>> groups;
  for (const CallRecord& r : records) {
    if (!r.response.empty()) groups[{r.model, r.latent_steps}].push_back(&r);
  }
  for (const auto& [key, group] : groups) {
    const int m = key.first;
    PolicyModel& model = impl_->pool->impl().models.at(m);
    model->set_latent_dropout(false);
    for (const auto& recs : Impl::Chunks(group, 256)) {
      PackedBatch p =
          Pack(recs, impl_->pool->impl().devices.at(m), impl_->pool->config(m).vocab_size, impl_->config.tree_row_budget);
      const torch::Tensor logp = Score(model, p, 1.0).logp.to(torch::kCPU).contiguous();
      for (size_t b = 0; b < recs.size(); ++b) {
        const float* first = logp.data_ptr<float>() + static_cast<int64_t>(b) * logp.size(1) + p.first_target[b];
        out[static_cast<size_t>(recs[b] - records.data())].assign(first, first + recs[b]->response.size());
      }
    }
  }
  return out;
}

// One file per trainer, named for its models (several trainers may share a checkpoint folder).
std::string Trainer::RngFile(const std::string& dir) const {
  std::string names;
  for (int m = 0; m < impl_->pool->size(); ++m) names += (m ? "+" : "") + impl_->pool->config(m).name;
  return dir + "/trainer-rng-" + names + ".txt";
}

void Trainer::Save(const std::string& dir) const {
  for (int m = 0; m < impl_->pool->size(); ++m) {
    if (!impl_->optimizers[m]) continue;  // a frozen model: its weights are all there is
    SaveAdamW(*impl_->optimizers[m], dir + "/optimizer-" + impl_->pool->config(m).name + ".safetensors");
    if (!impl_->references.empty()) {
      SaveModuleTensors(*impl_->references[m], dir + "/reference-" + impl_->pool->config(m).name + ".safetensors");
    }
  }
  WriteFileAtomically(RngFile(dir), impl_->rng.Save());
}

void Trainer::Load(const std::string& dir) {
  for (int m = 0; m < impl_->pool->size(); ++m) {
    if (!impl_->optimizers[m]) continue;  // a frozen model
    const std::string& name = impl_->pool->config(m).name;
    impl_->optimizers[m]->state().clear();  // loading sets the saved entries only
    torch::optim::AdamW& optimizer = *impl_->optimizers[m];
    LoadSafetensorsOrOlder(optimizer, dir + "/optimizer-" + name, [&](const std::string& f) { LoadAdamW(optimizer, f); });
    if (impl_->references.empty()) continue;
    PolicyModel& reference = impl_->references[m];
    LoadSafetensorsOrOlder(reference, dir + "/reference-" + name,
                           [&](const std::string& f) { LoadModuleTensors(*reference, f); });
  }
  std::ifstream in(RngFile(dir));
  std::string state((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  impl_->rng.Load(state);
}

}  // namespace troupe
