// Batched rollouts of seat-driven games (pipelines are in pipeline_rollout.cc).
#include "workflows/rollout.h"

#include <algorithm>

#include "core/errors.h"

namespace troupe {

Rollout::Rollout(const CompiledWorkflow& workflow, PolicyService& policy) : workflow_(workflow), policy_(policy) {
  for (const auto& r : workflow_.roles) {
    strategies_.push_back(r.trained() ? nullptr : StrategyFactory::Get().Create(r.scripted));
  }
}

std::vector<int> Rollout::Prompt(int role, const std::vector<std::string>& observation) const {
  std::vector<int> p = {Vocab::kBos, workflow_.vocab.RoleToken(role)};
  for (const auto& w : observation) p.push_back(workflow_.vocab.Id(w));
  return p;
}

CallRecord Rollout::NewRecord(int episode, int group_size, int role, int seat, int turn, const std::string& phase) const {
  CallRecord rec;
  rec.episode = episode;
  rec.group = episode / std::max(1, group_size);
  rec.role = role;
  rec.model = workflow_.roles[role].model;
  rec.role_slot = workflow_.roles[role].slot;
  rec.seat = seat;
  rec.turn = turn;
  rec.phase = phase;
  return rec;
}

double CallReward(const CompiledWorkflow& workflow, const CallRecord& record, const State* state, double task_score,
                  double* role_part) {
  double reward = 0.0;
  if (role_part != nullptr) *role_part = 0.0;
  for (const auto& term : workflow.rewards) {
    if (!term.roles.empty() && std::find(term.roles.begin(), term.roles.end(), record.role) == term.roles.end()) continue;
    switch (term.level) {
      case config::TRAJECTORY:
        reward += term.weight * (state ? state->Signal(term.signal, record.seat) : task_score);
        break;
      case config::TURN:
        if (state && term.to_go) {
          for (int t = record.turn; t < state->Turn(); ++t) reward += term.weight * state->TurnSignal(term.signal, record.seat, t);
        } else if (state) {
          reward += term.weight * state->TurnSignal(term.signal, record.seat, record.turn);
        }
        break;
      case config::ROLE:
        reward += term.weight * (record.valid ? 0.0 : -1.0);
        if (role_part != nullptr) *role_part += term.weight * (record.valid ? 0.0 : -1.0);
        break;
      default:
        break;
    }
  }
  return reward;
}

RolloutBatch Rollout::Run(const RolloutOptions& options, Rng& rng) {
  return workflow_.game ? RunGame(options, rng) : RunPipeline(options, rng);
}

std::vector<std::vector<Generation>> Rollout::GenerateTick(std::vector<std::vector<GenerateQuery>>& per_model,
                                                           const RolloutOptions& options, Rng& rng, RolloutBatch* batch) {
  const uint64_t tick_seed = rng.Next();
  std::vector<GenerateBatch> batches;
  for (size_t m = 0; m < per_model.size(); ++m) {
    if (per_model[m].empty()) continue;
    GenerateBatch b;
    b.model = static_cast<int>(m);
    b.queries = std::move(per_model[m]);
    b.seed = Rng::Mix(tick_seed, m);
    b.temperature = options.temperature;
    b.greedy = options.greedy;
    b.share_identical = options.correlated;
    batches.push_back(std::move(b));
  }
  std::vector<std::vector<Generation>> out(per_model.size());
  if (batches.empty()) return out;
  std::vector<std::vector<Generation>> results = policy_.Generate(batches);
  batch->generate_calls += static_cast<int64_t>(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) out[batches[i].model] = std::move(results[i]);
  return out;
}

void Rollout::Finish(const RolloutOptions& options, const std::vector<std::vector<size_t>>& episode_records,
                     RolloutBatch* batch) {
  std::vector<bool> keep(batch->records.size(), true);
  for (size_t e = 0; e < batch->episodes.size(); ++e) {
    if (options.observer) options.observer->EpisodeEnded(static_cast<int>(e), batch->episodes[e]);
    if (!batch->episodes[e].dropped) continue;
    ++batch->dropped;
    for (size_t r : episode_records[e]) keep[r] = false;
  }
  if (batch->dropped == 0) return;
  std::vector<CallRecord> kept;
  for (size_t r = 0; r < keep.size(); ++r) {
    if (keep[r]) kept.push_back(std::move(batch->records[r]));
  }
  batch->records = std::move(kept);
}

RolloutBatch Rollout::RunGame(const RolloutOptions& options, Rng& rng) {
  RolloutBatch batch;
  const int E = options.episodes;
  RolloutObserver* observer = options.observer;
  std::vector<std::unique_ptr<State>> states;
  std::vector<std::vector<size_t>> episode_records(E);
  std::vector<bool> dropped(E, false);
  for (int e = 0; e < E; ++e) {
    const int group = e / std::max(1, options.group_size);
    states.push_back(workflow_.game->NewInitialState(Rng::Mix(options.seed, static_cast<uint64_t>(group))));
    if (observer) observer->EpisodeStarted(e, group);
  }
  std::unique_ptr<ScriptedStrategy> teacher;
  if (options.scripted_for_trained) teacher = StrategyFactory::Get().Create(options.teacher);
  const int64_t calls_before = policy_.forward_calls();

  // Per tick: every active episode's pending decisions, grouped by model.
  struct Pending {
    int episode;
    size_t output;  // index into that episode's outputs
    int role;
    std::vector<int> prompt;
    int max_words;
    std::string phase;
    std::vector<int> options;  // guided first tokens, or empty
  };
  bool active = true;
  while (active) {
    active = false;
    std::vector<std::vector<Decision>> decisions(E);
    std::vector<std::vector<SeatOutput>> outputs(E);
    std::vector<std::vector<Pending>> by_model(policy_.size());
    std::vector<std::vector<size_t>> record_of_output(E);
    for (int e = 0; e < E; ++e) {
      if (dropped[e] || states[e]->IsTerminal()) continue;
      active = true;
      decisions[e] = states[e]->PendingDecisions();
      outputs[e].resize(decisions[e].size());
      record_of_output[e].assign(outputs[e].size(), SIZE_MAX);
      for (size_t k = 0; k < decisions[e].size(); ++k) {
        const Decision& d = decisions[e][k];
        const int role = workflow_.seat_role[d.seat];
        const RoleInfo& info = workflow_.roles[role];
        outputs[e][k].seat = d.seat;
        if (!info.trained()) {
          outputs[e][k].words = strategies_[role]->Act(*states[e], d, rng);
        } else if (teacher) {
          outputs[e][k].words = teacher->Act(*states[e], d, rng);
          CallRecord rec = NewRecord(e, options.group_size, role, d.seat, states[e]->Turn(), d.phase);
          rec.prompt = Prompt(role, d.observation);
          rec.response = workflow_.vocab.Encode(outputs[e][k].words);
          if (static_cast<int>(rec.response.size()) < d.max_words) rec.response.push_back(Vocab::kEos);
          rec.response.resize(std::min<size_t>(rec.response.size(), d.max_words));
          record_of_output[e][k] = batch.records.size();
          episode_records[e].push_back(batch.records.size());
          batch.records.push_back(std::move(rec));
        } else {
          by_model[info.model].push_back({e, k, role, Prompt(role, d.observation), d.max_words, d.phase,
                                          options.guided ? workflow_.vocab.Encode(d.options) : std::vector<int>{}});
        }
      }
    }
    if (!active) break;
    std::vector<std::vector<GenerateQuery>> queries(by_model.size());
    for (size_t m = 0; m < by_model.size(); ++m) {
      for (const auto& p : by_model[m]) {
        queries[m].push_back({workflow_.roles[p.role].slot, &p.prompt, p.max_words,
                              p.options.empty() ? nullptr : &p.options, static_cast<int64_t>(p.episode)});
      }
    }
    std::vector<std::vector<Generation>> gens = GenerateTick(queries, options, rng, &batch);
    for (size_t m = 0; m < by_model.size(); ++m) {
      for (size_t i = 0; i < by_model[m].size(); ++i) {
        Pending& p = by_model[m][i];
        Generation& g = gens[m][i];
        if (g.lost) {
          dropped[p.episode] = true;
          continue;
        }
        outputs[p.episode][p.output].words = workflow_.vocab.Decode(g.tokens);
        CallRecord rec = NewRecord(p.episode, options.group_size, p.role, decisions[p.episode][p.output].seat,
                                   states[p.episode]->Turn(), p.phase);
        rec.prompt = std::move(p.prompt);
        rec.response = std::move(g.tokens);
        rec.logprobs = std::move(g.logprobs);
        rec.first_options = p.options;
        record_of_output[p.episode][p.output] = batch.records.size();
        episode_records[p.episode].push_back(batch.records.size());
        batch.records.push_back(std::move(rec));
      }
    }
    for (int e = 0; e < E; ++e) {
      if (outputs[e].empty() || dropped[e]) continue;
      const int turn = states[e]->Turn();  // the turn the outputs belong to
      std::vector<bool> valid = states[e]->Apply(outputs[e]);
      const bool detailed = observer && observer->Detailed(e);
      for (size_t k = 0; k < valid.size(); ++k) {
        const size_t r = record_of_output[e][k];
        if (r != SIZE_MAX) {
          batch.records[r].valid = valid[k];
          batch.records[r].inert = states[e]->Inert(outputs[e][k].seat);
          batch.invalid += !valid[k];
        }
        if (!detailed) continue;
        const Decision& d = decisions[e][k];
        if (r != SIZE_MAX) {
          observer->Acted(e, batch.records[r], outputs[e][k].words, false);
        } else {
          CallRecord scripted = NewRecord(e, options.group_size, workflow_.seat_role[d.seat], d.seat, turn, d.phase);
          scripted.valid = valid[k];
          observer->Acted(e, scripted, outputs[e][k].words, true);
        }
      }
      if (detailed) observer->StateChanged(e, *states[e]);
    }
  }
  for (int e = 0; e < E; ++e) {
    EpisodeSummary s;
    s.dropped = dropped[e];
    if (!dropped[e]) {
      for (size_t r : episode_records[e]) {
        CallRecord& rec = batch.records[r];
        rec.reward = CallReward(workflow_, rec, states[e].get(), 0.0, &rec.role_reward);
      }
      s.metrics = states[e]->Metrics();
      batch.turns = std::max<int64_t>(batch.turns, states[e]->Turn());
    }
    s.final_state = states[e]->ToString();
    batch.episodes.push_back(std::move(s));
  }
  Finish(options, episode_records, &batch);
  batch.forward_calls = policy_.forward_calls() - calls_before;
  return batch;
}

}  // namespace troupe
