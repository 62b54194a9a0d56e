// The controller's rollout loop: runs many episodes at once and, per tick,
// gathers every pending decision for the same physical model into one batched
// Generate call (never one forward per agent per episode). Scripted seats
// answer without a model. Produces one CallRecord per model call, with rewards.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/trajectory.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/runtime/policy_service.h"

namespace troupe {

struct EpisodeSummary {
  std::map<std::string, double> metrics;
  std::string final_state;  // the game's ToString of the last state
  bool dropped = false;     // a worker serving it was lost: no records, not in the means
  std::vector<double> seat_signal;  // per seat, RolloutOptions::seat_signal's value at the end; empty when not asked
};

struct RolloutBatch {
  std::vector<CallRecord> records;
  std::vector<EpisodeSummary> episodes;
  int64_t generate_calls = 0;  // batched Generate calls, all models
  int64_t forward_calls = 0;   // model forward passes, all models
  int64_t encoded_positions = 0;  // token positions those passes encoded (forward FLOPs ~ 2 x parameters each)
  double generate_seconds = 0.0;   // wall time waiting for the models' answers (the rest: games, prompts, records)
  int64_t turns = 0;           // game rounds played by the longest episode
  int64_t invalid = 0;         // unparseable model outputs
  int64_t dropped = 0;         // episodes lost with a worker
};

// Sees what a rollout does (for session events); called on the controller thread.
class RolloutObserver {
 public:
  virtual ~RolloutObserver() = default;
  // Whether to report this episode's calls and states (they cost bandwidth).
  virtual bool Detailed(int episode) const = 0;
  // `seat_roles`: who plays each seat in it (RolloutSpec::SeatRoles); empty for pipelines.
  virtual void EpisodeStarted(int episode, int group, const std::vector<int>& seat_roles) = 0;
  // Episodes where snapshots play (RolloutOptions::seat_snapshots), just before EpisodeStarted: per seat,
  // the snapshot playing it (RolloutOptions::SnapshotPlayer::label), "" for the current model.
  virtual void SnapshotsPlaying(int episode, const std::vector<std::string>& seat_snapshot) {}
  // A seat or node acted (scripted acts come without tokens); detailed episodes only.
  virtual void Acted(int episode, const CallRecord& call, const std::vector<std::string>& words, bool scripted) = 0;
  // A pipeline's tool node ran (detailed episodes only): its inputs and outputs.
  virtual void ToolRan(int episode, const std::string& node, int step, const std::vector<std::string>& inputs,
                       const std::map<std::string, std::vector<std::string>>& outputs, bool ok) {}
  // The game state after a tick; detailed episodes only.
  virtual void StateChanged(int episode, const State& state) = 0;
  virtual void EpisodeEnded(int episode, const EpisodeSummary& summary) = 0;
};

// A frozen snapshot of a model that plays seats (snapshot pools, workflows/run/snapshot_pools.h).
struct SnapshotPlayer {
  int role = -1;      // it plays as this role of its model (role token, adapter, prompts)
  std::string dir;    // the snapshot's checkpoint folder (GenerateBatch::snapshot)
  std::string label;  // "model@iter-N", for observers
};

struct RolloutOptions {
  int episodes = 32;
  int group_size = 8;  // episodes sharing a game seed form a GRPO group
  uint64_t seed = 0;   // game seeds derive from it
  double temperature = 1.0;
  bool greedy = false;
  bool correlated = false;            // agents of a role seeing the same observation share a sample
  bool guided = false;                // restrict first tokens to the decision's options
  // Each episode is a conversation whose prompts' shared prefixes the models
  // encode once (GenerateQuery::cache_key); off: every call encodes its prompt
  // from the start (same results up to float rounding).
  bool prefix_cache = true;
  // Games step while the models answer: the episodes form two waves, and while
  // one wave's decisions are being generated the controller applies the other
  // wave's answers and collects its next decisions. Each tick then sends two
  // half-size batches instead of one (same results in distribution, not the same draws).
  bool overlap_environment = false;
  // Persuasion probes (State::Persuasion): every seat's sway-able decision is
  // asked again, twice, as if it had heard no message, and each episode
  // reports per role "persuadability/<role>", the share of its cases (the
  // teammates' recommendation differed from the first unheard answer) in
  // which it followed the recommendation; "persuasion_chance/<role>", the
  // share in which the second unheard answer landed on it anyway (sampling
  // alone: the level persuadability is to be read against); and
  // "persuasion_cases/<role>". Models answer two more queries per probe, in
  // the tick's batch; scripted seats answer from their own random stream.
  bool persuasion = false;
  bool scripted_for_trained = false;  // demonstrations: trained roles act as `teacher`
  std::string teacher;
  // Pipelines: >= 0 plays the task's evaluation set (a test split) from this
  // query on, one query per episode; -1 draws training queries.
  int eval_first = -1;
  RolloutObserver* observer = nullptr;
  // Snapshot play: per episode group, per seat, the index in `snapshots` of
  // the snapshot playing it, or -1 for who plays it otherwise. Groups past the
  // end, or empty rows, play no snapshot. A snapshot's calls are records with
  // CallRecord::snapshot set: played, never to be trained on.
  std::vector<SnapshotPlayer> snapshots;
  std::vector<std::vector<int>> seat_snapshots;
  // A trajectory signal each episode reports per seat (EpisodeSummary::seat_signal); empty: none.
  std::string seat_signal;
};

// A LATENT or HYBRID message an agent sent in an episode; the game shows its
// reference (SeatOutput::latent_message, Decision::latent_messages) and each
// reader's prompt gets the vectors and text.
struct LatentMessage {
  int role = 0;
  std::vector<float> latents;  // [K, width]
  int width = 0;
  std::vector<std::string> text;
};

// A prompt: tokens, with the vectors read at its Vocab::kSoft slots.
struct PromptParts {
  std::vector<int> tokens;
  std::vector<float> soft;
  int soft_width = 0;
};

// The game seed of an episode group in a rollout of `seed` (RolloutOptions::seed).
inline uint64_t GroupGameSeed(uint64_t seed, int group) { return Rng::Mix(seed, static_cast<uint64_t>(group)); }

class Rollout {
 public:
  Rollout(const RolloutSpec& workflow, PolicyService& policy);
  RolloutBatch Run(const RolloutOptions& options, Rng& rng);
  // A role's prompt for an observation, as its model reads it: <bos>, the role
  // token, the words, and at each of `latent` (where latent messages stand)
  // <bot>, the message's vectors as soft slots, <eot> and its first words.
  // `sent`: the episode's latent messages, which the handles index.
  PromptParts Prompt(int role, const std::vector<std::string>& observation, const std::vector<LatentRef>& latent = {},
                     const std::vector<LatentMessage>* sent = nullptr) const;
  // A trained role's prompt for a decision, as its model reads it: the words
  // above, or the decision's text view through its model's codec.
  PromptParts Prompt(int role, const Decision& decision, const std::vector<LatentMessage>* sent) const;

 private:
  class GameRun;      // one RunGame call's episodes and ticks (rollout.cc)
  class PipelineRun;  // one RunPipeline call's episodes and ticks (pipeline_rollout.cc)
  RolloutBatch RunGame(const RolloutOptions& options, Rng& rng);
  RolloutBatch RunPipeline(const RolloutOptions& options, Rng& rng);
  CallRecord NewRecord(int episode, int group_size, int role, int seat, int turn, const std::string& phase) const;
  // One tick's batches: each generation target's queries as one batch, with the tick's seeds drawn from `rng`.
  // Targets are the models (by index), then options.snapshots; `targets` receives each batch's.
  std::vector<GenerateBatch> TickBatches(std::vector<std::vector<GenerateQuery>>& per_target,
                                         const RolloutOptions& options, Rng& rng, std::vector<int>* targets) const;
  // The answers to the batches (as Generate returned them) per target; none for targets without queries.
  static std::vector<std::vector<Generation>> ByTarget(const std::vector<int>& targets,
                                                       std::vector<std::vector<Generation>> results, size_t count);
  // One tick's model work: each model's queries as one batch, all sent together.
  std::vector<std::vector<Generation>> GenerateTick(std::vector<std::vector<GenerateQuery>>& per_model,
                                                    const RolloutOptions& options, Rng& rng, RolloutBatch* batch);
  // Drops the records of lost episodes and reports every episode's end.
  void Finish(const RolloutOptions& options, const std::vector<std::vector<size_t>>& episode_records,
              RolloutBatch* batch);

  const RolloutSpec& workflow_;
  PolicyService& policy_;
  std::vector<std::unique_ptr<ScriptedStrategy>> strategies_;  // per role (null when trained)
  int bot_ = Vocab::kUnk, eot_ = Vocab::kUnk;                  // the tokens around a message's vectors
  int64_t conversation_base_ = 0, next_conversation_ = 0;       // prefix-cache keys of this Run's episodes
};

// Sums the workflow's reward terms for one call record of a finished episode.
// `role_part`, when given, receives the ROLE-level part of the sum.
// `receivers`, per reward term, the episode's calls it applies to (split terms divide by it).
double CallReward(const RolloutSpec& workflow, const CallRecord& record, const State* state, double task_score,
                  double* role_part = nullptr, const std::vector<int>* receivers = nullptr);

// Whether reward term `term` applies to calls of `role`.
bool TermApplies(const RewardTerm& term, int role);

}  // namespace troupe
