// Batched rollouts of seat-driven games (pipelines are in pipeline_rollout.cc).
#include "workflows/rollout/rollout.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "core/base/background_call.h"
#include "core/base/errors.h"
#include "core/base/words.h"

namespace troupe {

Rollout::Rollout(const RolloutSpec& workflow, PolicyService& policy)
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

PromptParts Rollout::Prompt(int role, const Decision& d, const std::vector<LatentMessage>* sent) const {
  const PromptCodec& codec = workflow_.Codec(role);
  if (codec.reads_text()) return {codec.TextPrompt(role, d.text)};
  return Prompt(role, d.observation, d.latent_messages, sent);
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

bool TermApplies(const RewardTerm& term, int role) {
  return term.roles.empty() || std::find(term.roles.begin(), term.roles.end(), role) != term.roles.end();
}

double CallReward(const RolloutSpec& workflow, const CallRecord& record, const State* state, double task_score,
                  double* role_part, const std::vector<int>* receivers) {
  double reward = 0.0;
  if (role_part != nullptr) *role_part = 0.0;
  for (size_t i = 0; i < workflow.rewards.size(); ++i) {
    const RewardTerm& term = workflow.rewards[i];
    if (!TermApplies(term, record.role)) continue;
    switch (term.level) {
      case config::TRAJECTORY: {
        const double share = term.split && receivers != nullptr ? 1.0 / std::max(1, (*receivers)[i]) : 1.0;
        reward += share * term.weight * (state ? state->Signal(term.signal, record.seat) : task_score);
        break;
      }
      case config::TURN:
        if (state && term.to_go) {
          for (int t = record.turn; t < state->Turn(); ++t)
            reward += term.weight * state->TurnSignal(term.signal, record.seat, t);
        } else if (state) {
          reward += term.weight * state->TurnSignal(term.signal, record.seat, record.turn);
        }
        break;
      case config::ROLE: {
        const double value = term.signal == "answer_gain" ? record.answer_gain : record.format;
        reward += term.weight * value;
        if (role_part != nullptr) *role_part += term.weight * value;
        break;
      }
      default: break;
    }
  }
  return reward;
}

RolloutBatch Rollout::Run(const RolloutOptions& options, Rng& rng) {
  conversation_base_ = next_conversation_;  // fresh keys: no episode matches another Run's prompts
  next_conversation_ += std::max(1, options.episodes);
  const int64_t positions_before = policy_.encoded_positions();
  RolloutBatch batch = workflow_.game ? RunGame(options, rng) : RunPipeline(options, rng);
  batch.encoded_positions = policy_.encoded_positions() - positions_before;
  return batch;
}

std::vector<GenerateBatch> Rollout::TickBatches(std::vector<std::vector<GenerateQuery>>& per_target,
                                                const RolloutOptions& options, Rng& rng,
                                                std::vector<int>* targets) const {
  const uint64_t tick_seed = rng.Next();
  const size_t models = static_cast<size_t>(policy_.size());
  std::vector<GenerateBatch> batches;
  targets->clear();
  for (size_t t = 0; t < per_target.size(); ++t) {
    if (per_target[t].empty()) continue;
    GenerateBatch b;
    if (t < models) {
      b.model = static_cast<int>(t);
    } else {
      const SnapshotPlayer& player = options.snapshots.at(t - models);
      b.model = workflow_.roles.at(player.role).model;
      b.snapshot = player.dir;
    }
    b.queries = std::move(per_target[t]);
    // Queries carry their episode as share key; it names their conversation too.
    for (auto& q : b.queries) {
      q.cache_key = options.prefix_cache && q.share_key >= 0 ? conversation_base_ + q.share_key : -1;
    }
    b.seed = Rng::Mix(tick_seed, t);
    b.temperature = options.temperature;
    b.greedy = options.greedy;
    b.share_identical = options.correlated;
    batches.push_back(std::move(b));
    targets->push_back(static_cast<int>(t));
  }
  return batches;
}

std::vector<std::vector<Generation>> Rollout::ByTarget(const std::vector<int>& targets,
                                                       std::vector<std::vector<Generation>> results, size_t count) {
  std::vector<std::vector<Generation>> out(count);
  for (size_t i = 0; i < targets.size() && i < results.size(); ++i) out[targets[i]] = std::move(results[i]);
  return out;
}

std::vector<std::vector<Generation>> Rollout::GenerateTick(std::vector<std::vector<GenerateQuery>>& per_target,
                                                           const RolloutOptions& options, Rng& rng,
                                                           RolloutBatch* batch) {
  std::vector<int> targets;
  std::vector<GenerateBatch> batches = TickBatches(per_target, options, rng, &targets);
  if (batches.empty()) return std::vector<std::vector<Generation>>(per_target.size());
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::vector<Generation>> results = policy_.Generate(batches);
  batch->generate_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  batch->generate_calls += static_cast<int64_t>(batches.size());
  return ByTarget(targets, std::move(results), per_target.size());
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

// One call of RunGame: the episodes in flight and, per tick, their decisions,
// outputs and the model work they wait for. A tick asks every active episode
// what is pending (Collect), answers all model calls in one batch per model
// (Generate), then applies the outputs to the games (Apply).
class Rollout::GameRun {
 public:
  GameRun(Rollout& r, const RolloutOptions& options, Rng& rng)
      : r_(r),
        w_(r.workflow_),
        options_(options),
        rng_(rng),
        E_(options.episodes),
        observer_(options.observer),
        episode_records_(E_),
        dropped_(E_, false),
        sent_(E_),
        cost_(E_),
        probe_rng_(Rng::Mix(options.seed, 0x9E25)),
        probes_(E_),
        persuasion_(E_) {
    for (int e = 0; e < E_; ++e) {
      const int group = e / std::max(1, options.group_size);
      const uint64_t game_seed = GroupGameSeed(options.seed, group);
      states_.push_back(w_.game->NewInitialState(game_seed));
      seat_roles_.push_back(w_.SeatRoles(game_seed));
      seat_snapshots_.push_back(SeatSnapshots(group, seat_roles_.back().size()));
      if (observer_ && !seat_snapshots_.back().empty()) {
        std::vector<std::string> labels;
        for (int p : seat_snapshots_.back()) labels.push_back(p < 0 ? "" : options.snapshots.at(p).label);
        observer_->SnapshotsPlaying(e, labels);
      }
      if (observer_) observer_->EpisodeStarted(e, group, seat_roles_.back());
    }
    if (options.scripted_for_trained) teacher_ = StrategyFactory::Get().Create(options.teacher);
    decisions_.resize(E_);
    outputs_.resize(E_);
    record_of_output_.resize(E_);
    const int waves = options.overlap_environment && E_ >= 2 ? 2 : 1;
    for (int w = 0; w < waves; ++w) {
      waves_.emplace_back();
      waves_.back().first = w * E_ / waves;
      waves_.back().end = (w + 1) * E_ / waves;
      // Generation targets: the models, then the snapshots playing this Run.
      waves_.back().by_model.resize(r_.policy_.size() + options.snapshots.size());
      waves_.back().queries.resize(r_.policy_.size() + options.snapshots.size());
    }
    if (waves > 1) background_ = std::make_unique<BackgroundCall>();
  }

  RolloutBatch Run() {
    const int64_t calls_before = r_.policy_.forward_calls();
    if (waves_.size() == 1) {
      Wave& all = waves_[0];
      while (Collect(all)) {
        Generate(all);
        Apply(all);
      }
    } else {
      Overlapped();
    }
    Summarize();
    r_.Finish(options_, episode_records_, &batch_);
    batch_.forward_calls = r_.policy_.forward_calls() - calls_before;
    return std::move(batch_);
  }

 private:
  // A decision a model must answer this tick.
  struct Pending {
    int episode;
    size_t output;  // index into that episode's outputs
    int role;
    PromptParts prompt;
    int max_new_tokens;
    std::string phase;
    std::vector<int> options;  // guided first tokens, or empty
    int latent_steps = 0;      // a latent message: vectors to send before the text
    int probe = 0;  // a persuasion probe's unheard decision, its first (1) or second (2) sample (probes_)
    int target = 0;     // who answers: a model (its index), or a snapshot (the models' count + its index)
    int snapshot = -1;  // a snapshot answers (RolloutOptions::snapshots); `role` is then the role it plays as
  };

  // A persuasion probe of one output: the recommendation and two answers with nothing heard (the second
  // measures how often sampling alone lands on the recommendation).
  struct Probe {
    std::string recommended;
    std::vector<std::string> unheard, unheard_again;
  };

  // Episodes [first, end) ticking together, and the model work of their tick.
  // The buffers keep their capacity from tick to tick.
  struct Wave {
    int first = 0, end = 0;
    bool active = false;
    std::vector<std::vector<Pending>> by_model;        // per generation target: decisions waiting for it
    std::vector<std::vector<GenerateQuery>> queries;   // per target: their queries (point into by_model)
    std::vector<GenerateBatch> batches;                // in flight
    std::vector<int> targets;                          // of each batch in flight
    std::vector<std::vector<Generation>> results;      // as Generate returned them
  };

  // Two waves in turn: while one wave's batch is generated on the background
  // thread, this thread answers the other wave's records, steps its games and
  // collects its next decisions. One batch is in flight at a time, so the
  // policy service is never called from two threads at once; every draw from
  // rng_ happens on this thread, in an order fixed by the schedule.
  void Overlapped() {
    for (Wave& w : waves_) w.active = Collect(w);
    int flying = -1;  // the wave whose batch is in flight
    auto launch = [&](int i) {
      Wave& w = waves_[i];
      BuildQueries(w);
      w.batches = r_.TickBatches(w.queries, options_, rng_, &w.targets);
      flying = i;
      // A tick whose decisions all went to scripted seats has nothing to generate.
      background_->Start([this, &w] {
        w.results = w.batches.empty() ? std::vector<std::vector<Generation>>{} : r_.policy_.Generate(w.batches);
      });
    };
    for (int i = 0; i < 2 && flying < 0; ++i) {
      if (waves_[i].active) launch(i);
    }
    while (flying >= 0) {
      const int done = flying;
      const auto started = std::chrono::steady_clock::now();
      background_->Wait();  // only this wait is on the critical path
      batch_.generate_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      flying = -1;
      Wave& w = waves_[done];
      batch_.generate_calls += static_cast<int64_t>(w.batches.size());
      if (waves_[1 - done].active) launch(1 - done);
      Answer(w, Rollout::ByTarget(w.targets, std::move(w.results), w.by_model.size()));
      w.batches.clear();
      Apply(w);
      w.active = Collect(w);
      if (flying < 0 && w.active) launch(done);
    }
  }

  // Each active episode's pending decisions: scripted seats and demonstrations
  // answer at once, the rest wait for their model. False when the wave's episodes are all over.
  bool Collect(Wave& w) {
    bool active = false;
    for (auto& pending : w.by_model) pending.clear();
    for (int e = w.first; e < w.end; ++e) {
      decisions_[e].clear();
      outputs_[e].clear();
      record_of_output_[e].clear();
      probes_[e].clear();
      if (dropped_[e] || states_[e]->IsTerminal()) continue;
      decisions_[e] = states_[e]->PendingDecisions();
      // Where nobody decides, the game runs its own rules until someone must, or it ends.
      while (decisions_[e].empty() && !states_[e]->IsTerminal() && states_[e]->Advance()) {
        decisions_[e] = states_[e]->PendingDecisions();
      }
      if (decisions_[e].empty()) continue;
      active = true;
      outputs_[e].resize(decisions_[e].size());
      record_of_output_[e].assign(outputs_[e].size(), SIZE_MAX);
      for (size_t k = 0; k < decisions_[e].size(); ++k) Decide(w, e, k);
    }
    return active;
  }

  // Per seat of an episode of `group`: the snapshot playing it, or -1; empty when none plays.
  std::vector<int> SeatSnapshots(int group, size_t seats) const {
    if (group >= static_cast<int>(options_.seat_snapshots.size())) return {};
    std::vector<int> row = options_.seat_snapshots[group];
    if (row.empty()) return row;
    if (row.size() != seats) throw Error("snapshot play names " + std::to_string(row.size()) + " seats, not " + std::to_string(seats));
    for (int p : row) {
      if (p >= static_cast<int>(options_.snapshots.size())) throw Error("snapshot play names snapshot " + std::to_string(p) + " of " + std::to_string(options_.snapshots.size()));
    }
    return row;
  }

  void Decide(Wave& w, int e, size_t k) {
    const Decision& d = decisions_[e][k];
    const int snapshot = seat_snapshots_[e].empty() ? -1 : seat_snapshots_[e][d.seat];
    // A snapshot plays as the role its model learnt; otherwise the seat's role plays.
    const int role = snapshot >= 0 ? options_.snapshots[snapshot].role : seat_roles_[e][d.seat];
    const RoleInfo& info = w_.roles[role];
    outputs_[e][k].seat = d.seat;
    if (!info.trained()) {
      outputs_[e][k].words = r_.strategies_[role]->Act(*states_[e], d, rng_);
      if (options_.persuasion) ProbeScripted(e, k, role);
      return;
    }
    if (teacher_ && info.learns() && snapshot < 0) {  // a demonstration: the teacher answers for a learning seat (frozen ones play)
      outputs_[e][k].words = teacher_->Act(*states_[e], d, rng_);
      CallRecord rec = r_.NewRecord(e, options_.group_size, role, d.seat, states_[e]->Turn(), d.phase);
      PromptParts prompt = r_.Prompt(role, d, &sent_[e]);
      rec.prompt = std::move(prompt.tokens);
      rec.soft_inputs = std::move(prompt.soft);
      rec.soft_width = prompt.soft_width;
      rec.response = w_.Codec(role).Answer(outputs_[e][k].words, d.max_words);
      Keep(e, k, std::move(rec));
      return;
    }
    const PromptCodec& codec = w_.Codec(role);
    Pending p{e,
              k,
              role,
              r_.Prompt(role, d, &sent_[e]),
              codec.MaxNewTokens(d.max_words),
              d.phase,
              options_.guided ? codec.FirstTokens(d.options) : std::vector<int>{}};
    // A guided one-word choice among whole tokens is that token: nothing after it to misread.
    if (options_.guided && d.max_words == 1 && codec.OneTokenEach(d.options)) p.max_new_tokens = 1;
    if (d.message && info.message_mode != config::TEXT) {
      // A latent message: K vectors after <bot>, then <eot> and the words its readers see
      // (LATENT: one, for the game's rules only).
      p.prompt.tokens.push_back(r_.bot_);
      p.latent_steps = info.latent_vectors;
      p.max_new_tokens = std::min(d.max_words, std::max(1, info.text_words));
    }
    p.snapshot = snapshot;
    p.target = snapshot >= 0 ? r_.policy_.size() + snapshot : info.model;
    if (options_.persuasion) ProbeModel(w, e, k, p);
    w.by_model[p.target].push_back(std::move(p));
  }

  // A scripted seat's persuasion probe: its strategy answers the unheard decision in the unheard state.
  void ProbeScripted(int e, size_t k, int role) {
    std::optional<PersuasionProbe> probe = states_[e]->Persuasion(decisions_[e][k]);
    if (!probe) return;
    const ScriptedStrategy& strategy = *r_.strategies_[role];
    Probe& p = probes_[e][k];
    p.recommended = probe->recommended;
    p.unheard = strategy.Act(*probe->unheard_state, probe->unheard, probe_rng_);
    p.unheard_again = strategy.Act(*probe->unheard_state, probe->unheard, probe_rng_);
  }

  // A model seat's persuasion probe: two more queries, like `seat`'s but for the unheard decision.
  void ProbeModel(Wave& w, int e, size_t k, const Pending& seat) {
    std::optional<PersuasionProbe> probe = states_[e]->Persuasion(decisions_[e][k]);
    if (!probe) return;
    probes_[e][k] = {probe->recommended, {}, {}};
    Pending p = seat;
    p.prompt = r_.Prompt(seat.role, probe->unheard, &sent_[e]);
    for (int sample : {1, 2}) {
      p.probe = sample;
      w.by_model[seat.target].push_back(p);
    }
  }

  // Each model's queries for the wave's pending decisions.
  void BuildQueries(Wave& w) {
    for (size_t m = 0; m < w.by_model.size(); ++m) {
      w.queries[m].clear();
      for (const auto& p : w.by_model[m]) {
        // A probe stays out of its episode's conversation (prefix cache) and shares no sample.
        GenerateQuery q{w_.roles[p.role].slot, &p.prompt.tokens, p.max_new_tokens,
                        p.options.empty() ? nullptr : &p.options, p.probe > 0 ? -1 : static_cast<int64_t>(p.episode)};
        if (!p.prompt.soft.empty()) {
          q.soft_inputs = &p.prompt.soft;
          q.soft_width = p.prompt.soft_width;
        }
        q.latent_steps = p.latent_steps;
        q.latent_end = r_.eot_;
        w.queries[m].push_back(q);
      }
    }
  }

  // One batched generation per model for everything pending; each answer becomes a record.
  void Generate(Wave& w) {
    BuildQueries(w);
    Answer(w, r_.GenerateTick(w.queries, options_, rng_, &batch_));
  }

  void Answer(Wave& w, std::vector<std::vector<Generation>> gens) {
    for (size_t m = 0; m < w.by_model.size(); ++m) {
      for (size_t i = 0; i < w.by_model[m].size(); ++i) Answered(w.by_model[m][i], gens[m][i]);
    }
  }

  void Answered(Pending& p, Generation& g) {
    if (g.lost) {
      dropped_[p.episode] = true;
      return;
    }
    if (p.probe > 0) {
      Probe& probe = probes_[p.episode][p.output];
      (p.probe == 1 ? probe.unheard : probe.unheard_again) = w_.Codec(p.role).Words(g.tokens);
      return;
    }
    SeatOutput& out = outputs_[p.episode][p.output];
    const Decision& d = decisions_[p.episode][p.output];
    out.words = w_.Codec(p.role).Words(g.tokens);
    CallRecord rec = r_.NewRecord(p.episode, options_.group_size, p.role, d.seat, states_[p.episode]->Turn(), p.phase);
    if (p.snapshot >= 0) {  // the seat's role, played by the snapshot's model as `p.role`
      rec.role = seat_roles_[p.episode][d.seat];
      rec.snapshot = p.snapshot;
    }
    if (d.message) cost_[p.episode].Add(w_.roles[p.role], out.words, g.latents);
    if (p.latent_steps > 0) {
      // Readers get a reference to the message (its vectors and text). The record keeps
      // the call's own slots (between <bot> and <eot>) for the trainer to recompute.
      out.latent_message = static_cast<int>(sent_[p.episode].size());
      sent_[p.episode].push_back({p.role, g.latents, w_.roles[p.role].latent_width, out.words});
      p.prompt.tokens.insert(p.prompt.tokens.end(), p.latent_steps, Vocab::kSoft);
      p.prompt.tokens.push_back(r_.eot_);
      rec.latent_steps = p.latent_steps;
      rec.latents = std::move(g.latents);
    }
    rec.prompt = std::move(p.prompt.tokens);
    rec.soft_inputs = std::move(p.prompt.soft);
    rec.soft_width = p.prompt.soft_width;
    rec.response = std::move(g.tokens);
    rec.logprobs = std::move(g.logprobs);
    rec.first_options = p.options;
    Keep(p.episode, p.output, std::move(rec));
  }

  void Keep(int e, size_t k, CallRecord rec) {
    record_of_output_[e][k] = batch_.records.size();
    episode_records_[e].push_back(batch_.records.size());
    batch_.records.push_back(std::move(rec));
  }

  // The tick's outputs to each game; what parsed and what was inert goes on the records.
  void Apply(const Wave& w) {
    for (int e = w.first; e < w.end; ++e) {
      if (outputs_[e].empty() || dropped_[e]) continue;
      const int turn = states_[e]->Turn();  // the turn the outputs belong to
      std::vector<bool> valid = states_[e]->Apply(outputs_[e]);
      const bool detailed = observer_ && observer_->Detailed(e);
      for (size_t k = 0; k < valid.size(); ++k) {
        const size_t r = record_of_output_[e][k];
        if (r != SIZE_MAX) {
          batch_.records[r].valid = valid[k];
          batch_.records[r].format = valid[k] ? 0.0 : -1.0;
          batch_.records[r].inert = states_[e]->Inert(outputs_[e][k].seat);
          batch_.invalid += !valid[k];
        }
        const auto probe = probes_[e].find(k);
        if (probe != probes_[e].end()) Tally(e, k, probe->second);
        if (!detailed) continue;
        const Decision& d = decisions_[e][k];
        if (r != SIZE_MAX) {
          if (probe != probes_[e].end()) {
            batch_.records[r].recommended = probe->second.recommended;
            batch_.records[r].unheard = probe->second.unheard;
          }
          observer_->Acted(e, batch_.records[r], outputs_[e][k].words, false);
        } else {
          CallRecord scripted = r_.NewRecord(e, options_.group_size, seat_roles_[e][d.seat], d.seat, turn, d.phase);
          scripted.valid = valid[k];
          scripted.format = valid[k] ? 0.0 : -1.0;
          if (probe != probes_[e].end()) {
            scripted.recommended = probe->second.recommended;
            scripted.unheard = probe->second.unheard;
          }
          // What a model in this seat would have read: a recorded session can then teach one (trainer.sft.session).
          if (d.latent_messages.empty()) scripted.prompt = r_.Prompt(seat_roles_[e][d.seat], d.observation).tokens;
          observer_->Acted(e, scripted, outputs_[e][k].words, true);
        }
      }
      if (detailed) observer_->StateChanged(e, *states_[e]);
    }
  }

  // A probed answer: a case when the unheard answer differs from the recommendation; followed when the answer is
  // it; by chance when the second unheard answer is.
  void Tally(int e, size_t k, const Probe& probe) {
    // The recommended option as the game spells it; a text model's answers come back lower-cased.
    auto recommends = [&](const std::vector<std::string>& words) {
      return !words.empty() && SameWordAnyCase(words[0], probe.recommended);
    };
    if (recommends(probe.unheard)) return;
    Persuasion& t = persuasion_[e][seat_roles_[e][outputs_[e][k].seat]];
    ++t.cases;
    t.followed += recommends(outputs_[e][k].words);
    t.by_chance += recommends(probe.unheard_again);
  }

  // Rewards of every call, and each episode's metrics and final state.
  void Summarize() {
    for (int e = 0; e < E_; ++e) {
      EpisodeSummary s;
      s.dropped = dropped_[e];
      if (!dropped_[e]) {
        for (size_t r : episode_records_[e]) {
          CallRecord& rec = batch_.records[r];
          rec.reward = CallReward(w_, rec, states_[e].get(), 0.0, &rec.role_reward);
        }
        s.metrics = states_[e]->Metrics();
        // With matchups, which one the episode played: their means are the matchups' shares.
        if (!w_.matchups.empty()) {
          const int played = w_.MatchupOf(GroupGameSeed(options_.seed, e / std::max(1, options_.group_size)));
          for (size_t k = 0; k < w_.matchups.size(); ++k)
            s.metrics["matchup/" + w_.matchups[k].name] = static_cast<int>(k) == played ? 1.0 : 0.0;
        }
        if (!options_.seat_signal.empty()) {
          for (size_t seat = 0; seat < seat_roles_[e].size(); ++seat)
            s.seat_signal.push_back(states_[e]->Signal(options_.seat_signal, static_cast<int>(seat)));
        }
        if (cost_[e].messages > 0) cost_[e].Report(&s.metrics);
        for (const auto& [role, t] : persuasion_[e]) {
          const std::string& name = w_.roles[role].name;
          s.metrics["persuadability/" + name] = static_cast<double>(t.followed) / t.cases;
          s.metrics["persuasion_chance/" + name] = static_cast<double>(t.by_chance) / t.cases;
          s.metrics["persuasion_cases/" + name] = t.cases;
        }
        batch_.turns = std::max<int64_t>(batch_.turns, states_[e]->Turn());
      }
      s.final_state = states_[e]->ToString();
      batch_.episodes.push_back(std::move(s));
    }
  }

  Rollout& r_;
  const RolloutSpec& w_;
  const RolloutOptions& options_;
  Rng& rng_;
  const int E_;
  RolloutObserver* observer_;
  std::unique_ptr<ScriptedStrategy> teacher_;
  RolloutBatch batch_;
  std::vector<std::unique_ptr<State>> states_;
  std::vector<std::vector<int>> seat_roles_;  // per episode: who plays each seat (RolloutSpec::SeatRoles)
  std::vector<std::vector<int>> seat_snapshots_;  // per episode: the snapshot playing each seat, -1 none; empty: none at all
  std::vector<std::vector<size_t>> episode_records_;
  std::vector<bool> dropped_;
  std::vector<std::vector<LatentMessage>> sent_;  // per episode
  std::vector<MessageCost> cost_;
  Rng probe_rng_;                                    // scripted seats' probe answers (the game's draws stay as without)
  std::vector<std::map<size_t, Probe>> probes_;      // per episode: this tick's probes, by output
  struct Persuasion {
    int cases = 0, followed = 0, by_chance = 0;
  };
  std::vector<std::map<int, Persuasion>> persuasion_;  // per episode and role
  // Each episode's current tick.
  std::vector<std::vector<Decision>> decisions_;
  std::vector<std::vector<SeatOutput>> outputs_;
  std::vector<std::vector<size_t>> record_of_output_;
  std::vector<Wave> waves_;
  // Last: destroyed first, so a batch still in flight (an exception left it) ends before the buffers it reads.
  std::unique_ptr<BackgroundCall> background_;
};

RolloutBatch Rollout::RunGame(const RolloutOptions& options, Rng& rng) { return GameRun(*this, options, rng).Run(); }

}  // namespace troupe
