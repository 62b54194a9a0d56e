// A workflow after validation: names resolved to indices, defaults applied
// (from the one table in workflows/config/defaults.cc: the structs below hold
// no defaults of their own),
// the game (or pipeline task) built, the vocabulary and model configs fixed.
// Everything the runtime needs; nothing in it can still be wrong.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comms/proto/workflow.pb.h"
#include "core/credit.h"
#include "core/models/model_pool.h"
#include "core/models/trainer.h"
#include "workflows/config/rollout_spec.h"
#include "workflows/config/sft_data.h"
#include "workflows/specs/runtime_settings.h"

namespace troupe {

struct RunSettings {
  int iterations = 0;
  int episodes_per_iteration = 0;
  int group_size = 0;
  int eval_episodes = 0;
  double max_minutes = 0.0;
  int checkpoint_every = 0;
  int threads = 0;
  bool correlated_team_sampling = false;
  bool overlap_environment = false;
  bool guided_choices = false;
  bool greedy_eval = false;  // the run's evaluations decode greedily
  int sft_episodes = 0;
  int sft_steps = 0;
  std::string sft_teacher;
  std::vector<Demonstration> sft_demonstrations;  // from trainer.sft.jsonl and .session
};

// A model's snapshots (ModelSpec.snapshots); every 0: it takes none.
struct SnapshotSchedule {
  int every = 0;
  int keep = 0;
};

// A role's pool (RoleSpec.pool), resolved: workflows/run/snapshot_pools.h plays it.
struct PoolPlan {
  int role = -1;                // the role whose seats a snapshot plays
  double share = 0.0;           // of episode groups with a snapshot in play
  double seat_share = 0.0;      // of the role's seats in such a group
  std::vector<int> from;        // learning roles whose models' snapshots form the pool (played as those roles)
  config::PoolSampling sampling = config::UNIFORM;
  double recency = 0.0;         // RECENT
  double priority_power = 0.0;  // PRIORITIZED
  std::string signal;           // trajectory signal that tells who beat whom
};

// The whole compiled workflow: the rollout's spec and everything else. Its
// consumers take the narrow piece they need: Rollout the RolloutSpec
// (`rollout`), WorkerHub a HubSpec and each model worker a ModelServeSpec
// (workflows/specs/, made by serve_specs.h); the training run and the
// session's description take it whole.
struct CompiledWorkflow {
  RolloutSpec rollout;
  std::string file;
  config::Workflow proto;  // with defaults filled in: the resolved config
  uint64_t seed = 0;

  std::vector<ModelConfig> models;
  std::vector<std::string> sharing;  // per model: "shared", "separate", "partial (LoRA r=4)"...
  std::vector<SnapshotSchedule> snapshots;  // per model
  std::vector<PoolPlan> pools;              // the roles with a pool
  CreditConfig credit;
  TrainerConfig trainer;
  RunSettings run;
  RuntimeSettings runtime;
  // trainer.hybrid (messages trained by distillation, workflows/run/distill_objective.cc):
  // its settings are proto.trainer().hybrid(), resolved; the one derived value
  // is the mode every channel shares.
  bool hybrid() const { return proto.trainer().has_hybrid(); }
  config::ChannelMode hybrid_mode = config::TEXT;

  // The episode metrics the run is judged by (Game::HeadlineMetrics from the
  // first trained seat's side, or the pipeline task's); empty: show them all.
  std::vector<std::string> headline_metrics;

  int RoleIndex(const std::string& name) const;
  // Some role sends LATENT or HYBRID messages through the reinforcement-learning runtime.
  bool LatentMessages() const;
  // Seat -> strategy for every scripted seat (for best-response search).
  std::map<int, std::string> ScriptedSeats() const;
};

class LoadedWorkflow;

// Validates the whole workflow and builds what the runtime needs.
// Throws ConfigError with file:line:col (or the offending role/seat/model).
CompiledWorkflow CompileWorkflow(const LoadedWorkflow& workflow);

// A one-paragraph human summary: game, roles -> models, sharing modes, estimator.
std::string DescribeWorkflow(const CompiledWorkflow& workflow);

}  // namespace troupe
