// Snapshot pools: self-play against past selves. Models with
// ModelSpec.snapshots leave frozen copies of their parameters under the run
// folder (snapshots/<model>/iter-N, ordinary checkpoints) every few
// iterations; roles with RoleSpec.pool have, in a share of episode groups,
// some of their seats played by one of them, drawn uniformly, by recency, or
// by how often it has beaten the current model. Those calls are played, not
// trained on. The rest of the groups play the current model everywhere.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/rng.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/rollout/rollout.h"
#include "workflows/runtime/policy_service.h"

namespace troupe {

// One snapshot in a pool, with its record against the current model.
struct PoolSnapshot {
  int model = -1;
  int iteration = 0;  // the updates its model had had
  std::string dir;    // its checkpoint folder
  double wins = 0.0;  // episodes in which it beat the current model (a tie: a half)
  int games = 0;      // episodes it played
};

// Sampling weights of `candidates` (in each model's order, oldest first) for a pool.
// UNIFORM: 1; RECENT: recency^k, k snapshots newer of its model; PRIORITIZED:
// ((wins + 1) / (games + 2))^priority_power.
std::vector<double> PoolWeights(const PoolPlan& pool, const std::vector<const PoolSnapshot*>& candidates);

class SnapshotPools {
 public:
  SnapshotPools(const CompiledWorkflow& workflow, std::string run_dir);
  bool enabled() const { return enabled_; }

  // Before iteration `iteration` (0-based: that many updates done): takes the
  // snapshots due (at 0, the model the run starts from, then every `every`)
  // and forgets those past each model's `keep`.
  void TakeDue(int iteration, PolicyService& policy);
  // Who plays which seat in a rollout of `options` (its seed, episodes and
  // group size): fills options->snapshots, seat_snapshots and seat_signal.
  void Draw(RolloutOptions* options, Rng& rng) const;
  // After that rollout: each snapshot's record against the current model, and
  // the snapshots' calls taken out of the batch. Adds "pool/..." figures.
  void Tally(const RolloutOptions& options, RolloutBatch* batch, std::map<std::string, double>* figures);

  // The pools' records, for checkpoints; loading drops snapshots taken after `iteration`.
  std::string SaveState() const;
  void LoadState(const std::string& text, int iteration);

  const std::vector<PoolSnapshot>& pool(int model) const { return pools_.at(model); }

 private:
  std::string Root(int model) const;
  // The newest `keep` snapshot folders on disk with iteration <= `upto`, oldest first.
  void Rescan(int model, int upto);

  const CompiledWorkflow& w_;
  std::string run_dir_;
  bool enabled_ = false;
  std::vector<std::vector<PoolSnapshot>> pools_;  // per model, oldest first
};

}  // namespace troupe
