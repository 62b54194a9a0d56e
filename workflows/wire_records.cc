// Runtime struct <-> wire message conversions.
#include "workflows/wire_records.h"

namespace troupe {

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
  return r;
}

void ToWire(const GenerateBatch& batch, size_t begin, size_t end, uint64_t seed, wire::GenerateRequest* out) {
  out->set_seed(seed);
  out->set_temperature(batch.temperature);
  out->set_greedy(batch.greedy);
  out->set_share_identical(batch.share_identical);
  for (size_t i = begin; i < end; ++i) {
    const GenerateQuery& q = batch.queries[i];
    wire::GenerateRow* row = out->add_rows();
    row->set_role_slot(q.role_slot);
    row->mutable_prompt()->Add(q.prompt->begin(), q.prompt->end());
    row->set_max_new_tokens(q.max_new_tokens);
    if (q.first_options) row->mutable_first_options()->Add(q.first_options->begin(), q.first_options->end());
    row->set_share_key(q.share_key);
  }
}

GenerateBatch FromWire(const wire::GenerateRequest& request, int model, std::vector<std::vector<int>>* prompts,
                       std::vector<std::vector<int>>* options) {
  GenerateBatch b;
  b.model = model;
  b.seed = request.seed();
  b.temperature = request.temperature();
  b.greedy = request.greedy();
  b.share_identical = request.share_identical();
  const int n = request.rows_size();
  prompts->assign(n, {});
  options->assign(n, {});
  for (int i = 0; i < n; ++i) {
    const wire::GenerateRow& row = request.rows(i);
    (*prompts)[i].assign(row.prompt().begin(), row.prompt().end());
    (*options)[i].assign(row.first_options().begin(), row.first_options().end());
    b.queries.push_back({row.role_slot(), &(*prompts)[i], row.max_new_tokens(),
                         (*options)[i].empty() ? nullptr : &(*options)[i], row.share_key()});
  }
  return b;
}

void ToWire(const Generation& g, wire::GenerationRow* out) {
  out->mutable_tokens()->Add(g.tokens.begin(), g.tokens.end());
  out->mutable_logprobs()->Add(g.logprobs.begin(), g.logprobs.end());
}

Generation FromWire(const wire::GenerationRow& row) {
  Generation g;
  g.tokens.assign(row.tokens().begin(), row.tokens().end());
  g.logprobs.assign(row.logprobs().begin(), row.logprobs().end());
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
  return s;
}

}  // namespace troupe
