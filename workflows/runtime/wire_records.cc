// Runtime struct <-> wire message conversions.
#include "workflows/runtime/wire_records.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/base/errors.h"

namespace troupe {

namespace {

// Float vectors as a typed tensor [rows, width] (little-endian float32).
void PutVectors(const std::vector<float>& values, int width, wire::Tensor* out) {
  out->set_dtype(wire::Tensor::F32);
  out->add_shape(width > 0 ? static_cast<int64_t>(values.size()) / width : 0);
  out->add_shape(width);
  out->set_data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// Checks dtype, shape and size before reading; returns the width.
int GetVectors(const wire::Tensor& t, std::vector<float>* values) {
  values->clear();
  if (t.shape_size() == 0 && t.data().empty()) return 0;
  if (t.dtype() != wire::Tensor::F32 || t.shape_size() != 2 || t.shape(0) < 0 || t.shape(1) < 0 ||
      static_cast<uint64_t>(t.shape(0)) * static_cast<uint64_t>(t.shape(1)) * sizeof(float) != t.data().size()) {
    throw CommsError("a vector tensor's dtype, shape and size disagree (" + std::to_string(t.data().size()) +
                     " bytes)");
  }
  values->resize(t.data().size() / sizeof(float));
  std::memcpy(values->data(), t.data().data(), t.data().size());
  return static_cast<int>(t.shape(1));
}

}  // namespace

void ToWire(const CallRecord& r, wire::CallRecord* out) {
  out->set_episode(r.episode);
  out->set_group(r.group);
  out->set_role(r.role);
  out->set_role_slot(r.role_slot);
  out->set_seat(r.seat);
  out->set_turn(r.turn);
  out->set_phase(r.phase);
  out->mutable_prompt()->Add(r.prompt.begin(), r.prompt.end());
  out->mutable_response()->Add(r.response.begin(), r.response.end());
  out->mutable_logprobs()->Add(r.logprobs.begin(), r.logprobs.end());
  out->mutable_first_options()->Add(r.first_options.begin(), r.first_options.end());
  out->set_valid(r.valid);
  out->set_inert(r.inert);
  out->set_reward(r.reward);
  out->set_role_reward(r.role_reward);
  out->set_advantage(r.advantage);
  if (!r.soft_inputs.empty()) PutVectors(r.soft_inputs, r.soft_width, out->mutable_soft_inputs());
  out->set_latent_steps(r.latent_steps);
}

CallRecord FromWire(const wire::CallRecord& w, int model) {
  CallRecord r;
  r.episode = w.episode();
  r.group = w.group();
  r.role = w.role();
  r.model = model;
  r.role_slot = w.role_slot();
  r.seat = w.seat();
  r.turn = w.turn();
  r.phase = w.phase();
  r.prompt.assign(w.prompt().begin(), w.prompt().end());
  r.response.assign(w.response().begin(), w.response().end());
  r.logprobs.assign(w.logprobs().begin(), w.logprobs().end());
  r.first_options.assign(w.first_options().begin(), w.first_options().end());
  r.valid = w.valid();
  r.inert = w.inert();
  r.reward = w.reward();
  r.role_reward = w.role_reward();
  r.advantage = w.advantage();
  r.soft_width = GetVectors(w.soft_inputs(), &r.soft_inputs);
  r.latent_steps = w.latent_steps();
  return r;
}

void ToWire(const GenerateBatch& batch, size_t begin, size_t end, uint64_t seed, wire::GenerateRequest* out) {
  out->set_seed(seed);
  out->set_temperature(batch.temperature);
  out->set_greedy(batch.greedy);
  out->set_share_identical(batch.share_identical);
  out->set_snapshot(batch.snapshot);
  for (size_t i = begin; i < end; ++i) {
    const GenerateQuery& q = batch.queries[i];
    wire::GenerateRow* row = out->add_rows();
    row->set_role_slot(q.role_slot);
    row->mutable_prompt()->Add(q.prompt->begin(), q.prompt->end());
    row->set_max_new_tokens(q.max_new_tokens);
    if (q.first_options) row->mutable_first_options()->Add(q.first_options->begin(), q.first_options->end());
    row->set_share_key(q.share_key);
    if (q.soft_inputs && !q.soft_inputs->empty()) PutVectors(*q.soft_inputs, q.soft_width, row->mutable_soft_inputs());
    row->set_latent_steps(q.latent_steps);
    row->set_latent_end(q.latent_end);
    row->set_cache_key(q.cache_key);
  }
}

GenerateBatch FromWire(const wire::GenerateRequest& request, int model, std::vector<std::vector<int>>* prompts,
                       std::vector<std::vector<int>>* options, std::vector<std::vector<float>>* soft) {
  GenerateBatch b;
  b.model = model;
  b.seed = request.seed();
  b.temperature = request.temperature();
  b.greedy = request.greedy();
  b.share_identical = request.share_identical();
  b.snapshot = request.snapshot();
  const int n = request.rows_size();
  prompts->assign(n, {});
  options->assign(n, {});
  soft->assign(n, {});
  for (int i = 0; i < n; ++i) {
    const wire::GenerateRow& row = request.rows(i);
    (*prompts)[i].assign(row.prompt().begin(), row.prompt().end());
    (*options)[i].assign(row.first_options().begin(), row.first_options().end());
    GenerateQuery q{row.role_slot(), &(*prompts)[i], row.max_new_tokens(),
                    (*options)[i].empty() ? nullptr : &(*options)[i], row.share_key()};
    q.soft_width = GetVectors(row.soft_inputs(), &(*soft)[i]);
    if (!(*soft)[i].empty()) q.soft_inputs = &(*soft)[i];
    q.latent_steps = row.latent_steps();
    q.latent_end = row.latent_end();
    q.cache_key = row.cache_key();
    b.queries.push_back(q);
  }
  return b;
}

void ToWire(const Generation& g, int width, wire::GenerationRow* out) {
  out->mutable_tokens()->Add(g.tokens.begin(), g.tokens.end());
  out->mutable_logprobs()->Add(g.logprobs.begin(), g.logprobs.end());
  if (!g.latents.empty()) PutVectors(g.latents, width, out->mutable_latents());
}

Generation FromWire(const wire::GenerationRow& row) {
  Generation g;
  g.tokens.assign(row.tokens().begin(), row.tokens().end());
  g.logprobs.assign(row.logprobs().begin(), row.logprobs().end());
  GetVectors(row.latents(), &g.latents);
  return g;
}

void ToWire(const ModelTrainStats& s, wire::TrainStats* out) {
  out->set_records(s.records);
  out->set_tokens(s.tokens);
  out->set_steps(s.steps);
  out->set_loss(s.loss);
  out->set_policy_loss(s.policy_loss);
  out->set_value_loss(s.value_loss);
  out->set_entropy(s.entropy);
  out->set_kl(s.kl);
  out->set_clip_fraction(s.clip_fraction);
  out->set_grad_norm(s.grad_norm);
  out->set_learners(s.learners);
  out->set_parameter_digest(s.parameter_digest);
  out->set_positions(s.positions);
}

ModelTrainStats FromWire(const wire::TrainStats& w) {
  ModelTrainStats s;
  s.records = w.records();
  s.tokens = w.tokens();
  s.steps = w.steps();
  s.loss = w.loss();
  s.policy_loss = w.policy_loss();
  s.value_loss = w.value_loss();
  s.entropy = w.entropy();
  s.kl = w.kl();
  s.clip_fraction = w.clip_fraction();
  s.grad_norm = w.grad_norm();
  s.learners = std::max(1, w.learners());
  s.parameter_digest = w.parameter_digest();
  s.positions = w.positions();
  return s;
}

void ToWire(const HybridBatch& b, const HybridSettings& s, wire::HybridStepRequest* out) {
  out->set_latent_vectors(s.latent_vectors);
  out->set_differentiable(s.differentiable);
  out->set_distill_weight(s.distill_weight);
  out->set_eot(s.eot);
  for (const auto& e : b.self) {
    auto* x = out->add_self();
    x->set_role_slot(e.role_slot);
    x->mutable_prompt()->Add(e.prompt.begin(), e.prompt.end());
    x->mutable_reasoning()->Add(e.reasoning.begin(), e.reasoning.end());
    x->mutable_answer()->Add(e.answer.begin(), e.answer.end());
  }
  for (const auto& e : b.senders) {
    auto* x = out->add_senders();
    x->set_role_slot(e.role_slot);
    x->mutable_prompt()->Add(e.prompt.begin(), e.prompt.end());
    x->mutable_text()->Add(e.text.begin(), e.text.end());
  }
  for (const auto& e : b.receivers) {
    auto* x = out->add_receivers();
    x->set_role_slot(e.role_slot);
    x->mutable_prompt()->Add(e.prompt.begin(), e.prompt.end());
    if (!e.soft.empty()) PutVectors(e.soft, e.soft_width, x->mutable_soft());
    x->mutable_from_senders()->Add(e.from_senders.begin(), e.from_senders.end());
    x->mutable_teacher_prompt()->Add(e.teacher_prompt.begin(), e.teacher_prompt.end());
    x->mutable_answer()->Add(e.answer.begin(), e.answer.end());
  }
}

HybridBatch FromWire(const wire::HybridStepRequest& w, int model, HybridSettings* s) {
  s->latent_vectors = w.latent_vectors();
  s->differentiable = w.differentiable();
  s->distill_weight = w.distill_weight();
  s->eot = w.eot();
  HybridBatch b;
  for (const auto& x : w.self()) {
    b.self.push_back({model,
                      x.role_slot(),
                      {x.prompt().begin(), x.prompt().end()},
                      {x.reasoning().begin(), x.reasoning().end()},
                      {x.answer().begin(), x.answer().end()}});
  }
  for (const auto& x : w.senders()) {
    b.senders.push_back(
        {model, x.role_slot(), {x.prompt().begin(), x.prompt().end()}, {x.text().begin(), x.text().end()}});
  }
  for (const auto& x : w.receivers()) {
    ReceiverExample e;
    e.model = model;
    e.role_slot = x.role_slot();
    e.prompt.assign(x.prompt().begin(), x.prompt().end());
    e.soft_width = GetVectors(x.soft(), &e.soft);
    e.from_senders.assign(x.from_senders().begin(), x.from_senders().end());
    for (int i : e.from_senders) {
      if (i < 0 || i >= w.senders_size())
        throw CommsError("a hybrid reader names sender " + std::to_string(i) + " of " +
                         std::to_string(w.senders_size()));
    }
    e.teacher_prompt.assign(x.teacher_prompt().begin(), x.teacher_prompt().end());
    e.answer.assign(x.answer().begin(), x.answer().end());
    b.receivers.push_back(std::move(e));
  }
  return b;
}

void ToWire(const HybridStepStats& s, wire::HybridStepReply* out) {
  out->mutable_figures()->insert(s.begin(), s.end());
}

HybridStepStats FromWire(const wire::HybridStepReply& w) { return {w.figures().begin(), w.figures().end()}; }

}  // namespace troupe
