// Batched rollouts of seat-driven games (pipelines are in pipeline_rollout.cc).
#include "workflows/run/rollout.h"

#include <algorithm>

#include "core/base/errors.h"

namespace troupe {

Rollout::Rollout(const CompiledWorkflow& workflow, PolicyService& policy)
    : workflow_(workflow), policy_(policy), bot_(workflow.vocab.Id("<bot>")), eot_(workflow.vocab.Id("<eot>")) {
  for (const auto& r : workflow_.roles) {
    strategies_.push_back(r.trained() ? nullptr : StrategyFactory::Get().Create(r.scripted));
  }
}

namespace {

// What the messages of an episode's trained seats cost: the words their readers
// see, the latent vectors, and the bytes on the wire (text with a space between
// words; 4 bytes per vector value). Reported per episode, as by the hybrid trainer.
struct MessageCost {
  int messages = 0;
  double text_tokens = 0, latent_vectors = 0, wire_bytes = 0;

  void Add(const RoleInfo& role, const std::vector<std::string>& words, const std::vector<float>& latents) {
    ++messages;
    const size_t shown =
        role.message_mode == config::TEXT ? words.size() : std::min<size_t>(words.size(), role.text_words);
    for (size_t i = 0; i < shown; ++i) wire_bytes += static_cast<double>(words[i].size() + (i > 0));
    text_tokens += static_cast<double>(shown);
    if (role.message_mode != config::TEXT) latent_vectors += role.latent_vectors;
    wire_bytes += static_cast<double>(latents.size() * sizeof(float));
  }
  void Report(std::map<std::string, double>* metrics) const {
    (*metrics)["text_tokens"] = text_tokens;
    (*metrics)["latent_vectors"] = latent_vectors;
    (*metrics)["wire_bytes"] = wire_bytes;
  }
};

}  // namespace

PromptParts Rollout::Prompt(int role, const std::vector<std::string>& observation, const std::vector<LatentRef>& latent,
                            const std::vector<LatentMessage>* sent) const {
  PromptParts p;
  p.tokens = {Vocab::kBos, workflow_.vocab.RoleToken(role)};
  p.tokens.reserve(p.tokens.size() + observation.size());
  auto ref = latent.begin();
  for (size_t i = 0; i <= observation.size(); ++i) {
    for (; ref != latent.end() && ref->position == i; ++ref) {
      if (sent == nullptr || ref->handle < 0 || ref->handle >= static_cast<int>(sent->size())) {
        throw GameError("a latent message reference (handle " + std::to_string(ref->handle) + ") to no sent message");
      }
      // A latent message: <bot> z1..zK <eot>, then (HYBRID) the first words of its text.
      const LatentMessage& m = (*sent)[ref->handle];
      const RoleInfo& from = workflow_.roles[m.role];
      p.tokens.push_back(bot_);
      p.tokens.insert(p.tokens.end(), m.latents.size() / std::max(1, m.width), Vocab::kSoft);
      p.tokens.push_back(eot_);
      for (int w = 0; w < from.text_words && w < static_cast<int>(m.text.size()); ++w) {
        p.tokens.push_back(workflow_.vocab.Id(m.text[w]));
      }
      p.soft.insert(p.soft.end(), m.latents.begin(), m.latents.end());
      p.soft_width = m.width;
    }
    if (i < observation.size()) p.tokens.push_back(workflow_.vocab.Id(observation[i]));
  }
  return p;
}

CallRecord Rollout::NewRecord(int episode, int group_size, int role, int seat, int turn,
                              const std::string& phase) const {
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
    if (!term.roles.empty() && std::find(term.roles.begin(), term.roles.end(), record.role) == term.roles.end())
      continue;
    switch (term.level) {
      case config::TRAJECTORY:
        reward += term.weight * (state ? state->Signal(term.signal, record.seat) : task_score);
        break;
      case config::TURN:
        if (state && term.to_go) {
          for (int t = record.turn; t < state->Turn(); ++t)
            reward += term.weight * state->TurnSignal(term.signal, record.seat, t);
        } else if (state) {
          reward += term.weight * state->TurnSignal(term.signal, record.seat, record.turn);
        }
        break;
      case config::ROLE:
        reward += term.weight * (record.valid ? 0.0 : -1.0);
        if (role_part != nullptr) *role_part += term.weight * (record.valid ? 0.0 : -1.0);
        break;
      default: break;
    }
  }
  return reward;
}

RolloutBatch Rollout::Run(const RolloutOptions& options, Rng& rng) {
  return workflow_.game ? RunGame(options, rng) : RunPipeline(options, rng);
}

std::vector<std::vector<Generation>> Rollout::GenerateTick(std::vector<std::vector<GenerateQuery>>& per_model,
                                                           const RolloutOptions& options, Rng& rng,
                                                           RolloutBatch* batch) {
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
    PromptParts prompt;
    int max_words;
    std::string phase;
    std::vector<int> options;  // guided first tokens, or empty
    int latent_steps = 0;      // a latent message: vectors to send before the text
  };
  std::vector<std::vector<LatentMessage>> sent(E);  // per episode
  std::vector<MessageCost> cost(E);
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
          PromptParts prompt = Prompt(role, d.observation, d.latent_messages, &sent[e]);
          rec.prompt = std::move(prompt.tokens);
          rec.soft_inputs = std::move(prompt.soft);
          rec.soft_width = prompt.soft_width;
          rec.response = workflow_.vocab.Encode(outputs[e][k].words);
          if (static_cast<int>(rec.response.size()) < d.max_words) rec.response.push_back(Vocab::kEos);
          rec.response.resize(std::min<size_t>(rec.response.size(), d.max_words));
          record_of_output[e][k] = batch.records.size();
          episode_records[e].push_back(batch.records.size());
          batch.records.push_back(std::move(rec));
        } else {
          Pending p{e,
                    k,
                    role,
                    Prompt(role, d.observation, d.latent_messages, &sent[e]),
                    d.max_words,
                    d.phase,
                    options.guided ? workflow_.vocab.Encode(d.options) : std::vector<int>{}};
          if (d.message && info.message_mode != config::TEXT) {
            // A latent message: K vectors after <bot>, then <eot> and the words its readers see
            // (LATENT: one, for the game's rules only).
            p.prompt.tokens.push_back(bot_);
            p.latent_steps = info.latent_vectors;
            p.max_words = std::min(d.max_words, std::max(1, info.text_words));
          }
          by_model[info.model].push_back(std::move(p));
        }
      }
    }
    if (!active) break;
    std::vector<std::vector<GenerateQuery>> queries(by_model.size());
    for (size_t m = 0; m < by_model.size(); ++m) {
      for (const auto& p : by_model[m]) {
        GenerateQuery q{workflow_.roles[p.role].slot, &p.prompt.tokens, p.max_words,
                        p.options.empty() ? nullptr : &p.options, static_cast<int64_t>(p.episode)};
        if (!p.prompt.soft.empty()) {
          q.soft_inputs = &p.prompt.soft;
          q.soft_width = p.prompt.soft_width;
        }
        q.latent_steps = p.latent_steps;
        q.latent_end = eot_;
        queries[m].push_back(q);
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
        SeatOutput& out = outputs[p.episode][p.output];
        out.words = workflow_.vocab.Decode(g.tokens);
        CallRecord rec = NewRecord(p.episode, options.group_size, p.role, decisions[p.episode][p.output].seat,
                                   states[p.episode]->Turn(), p.phase);
        if (decisions[p.episode][p.output].message) cost[p.episode].Add(workflow_.roles[p.role], out.words, g.latents);
        if (p.latent_steps > 0) {
          // Readers get a reference to the message (its vectors and text). The record keeps
          // the call's own slots (between <bot> and <eot>) for the trainer to recompute.
          out.latent_message = static_cast<int>(sent[p.episode].size());
          sent[p.episode].push_back(
              {p.role, g.latents, workflow_.models[workflow_.roles[p.role].model].d_model, out.words});
          p.prompt.tokens.insert(p.prompt.tokens.end(), p.latent_steps, Vocab::kSoft);
          p.prompt.tokens.push_back(eot_);
          rec.latent_steps = p.latent_steps;
          rec.latents = std::move(g.latents);
        }
        rec.prompt = std::move(p.prompt.tokens);
        rec.soft_inputs = std::move(p.prompt.soft);
        rec.soft_width = p.prompt.soft_width;
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
      if (cost[e].messages > 0) cost[e].Report(&s.metrics);
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
