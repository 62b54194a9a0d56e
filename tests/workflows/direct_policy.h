// A test's policy service that calls the workflow's models directly (no
// worker), with their trainers in reach: for checks that compare what a
// rollout sampled with what the trainer scores.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/models/model_pool.h"
#include "core/models/trainer.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/rollout/rollout.h"
#include "workflows/runtime/policy_service.h"

namespace troupe::testing {

// The workflow's models called directly (no worker), with their trainers in reach.
class DirectPolicy : public PolicyService {
 public:
  explicit DirectPolicy(const CompiledWorkflow& w) : pool(w.models, w.seed), trainer(pool, w.trainer, w.seed) {}
  int size() const override { return pool.size(); }
  const ModelConfig& config(int model) const override { return pool.config(model); }
  std::vector<std::vector<Generation>> Generate(const std::vector<GenerateBatch>& batches) override {
    std::vector<std::vector<Generation>> out;
    for (const auto& b : batches) {
      if (!b.snapshot.empty()) throw std::logic_error("DirectPolicy plays no snapshots");
      Rng rng(b.seed);
      out.push_back(pool.Generate(b.model, b.queries, rng, b.temperature, b.greedy, b.share_identical));
    }
    return out;
  }
  std::vector<ModelTrainStats> Update(const std::vector<CallRecord>& records) override {
    return trainer.Update(records);
  }
  std::vector<ModelTrainStats> Supervised(const std::vector<CallRecord>& d, int steps) override {
    return trainer.Supervised(d, steps);
  }
  std::vector<HybridStepStats> HybridStep(const HybridBatch&, const HybridSettings&) override {
    throw std::logic_error("DirectPolicy serves rollouts and updates only");
  }
  void Save(const std::string&) override {}
  void Load(const std::string&, bool) override {}
  void SaveSnapshot(int, const std::string&) override { throw std::logic_error("DirectPolicy takes no snapshots"); }
  int64_t forward_calls() const override { return pool.total_forward_calls(); }
  int64_t encoded_positions() const override {
    int64_t n = 0;
    for (int m = 0; m < pool.size(); ++m) n += pool.encoded_positions(m);
    return n;
  }
  ModelPool pool;
  Trainer trainer;
};

// A seeded rollout batch of `episodes` episodes (GRPO groups of `group_size`) on `policy`.
inline RolloutBatch DirectRollout(const CompiledWorkflow& w, DirectPolicy& policy, int episodes, int group_size) {
  Rollout rollout(w.rollout, policy);
  RolloutOptions o;
  o.episodes = episodes;
  o.group_size = group_size;
  o.seed = 3;
  Rng rng(9);
  return rollout.Run(o, rng);
}

// The largest difference between the log-probabilities the trainer scores
// for `records` and `reference` (one vector per record, token by token).
inline double LargestLogProbGap(Trainer& trainer, const std::vector<CallRecord>& records,
                                const std::vector<std::vector<float>>& reference) {
  const std::vector<std::vector<float>> logp = trainer.ResponseLogProbs(records);
  double gap = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (logp[i].size() != reference[i].size()) return INFINITY;  // scored another number of tokens
    for (size_t t = 0; t < logp[i].size(); ++t) {
      gap = std::max<double>(gap, std::abs(logp[i][t] - reference[i][t]));
    }
  }
  return gap;
}

// The log-probabilities each record's response was sampled with.
inline std::vector<std::vector<float>> SampledLogProbs(const std::vector<CallRecord>& records) {
  std::vector<std::vector<float>> out;
  for (const auto& r : records) out.push_back(r.logprobs);
  return out;
}

// `records` whose vectors read at soft slots are others (each scaled by -3).
inline std::vector<CallRecord> WithOtherVectors(std::vector<CallRecord> records) {
  for (auto& r : records) {
    for (auto& v : r.soft_inputs) v = -3 * v;
  }
  return records;
}

}  // namespace troupe::testing
