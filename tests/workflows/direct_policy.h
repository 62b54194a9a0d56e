// A test's policy service that calls the workflow's models directly (no
// worker), with their trainers in reach: for checks that compare what a
// rollout sampled with what the trainer scores.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/models/model_pool.h"
#include "core/models/trainer.h"
#include "workflows/config/compiled_workflow.h"
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
  int64_t forward_calls() const override { return pool.total_forward_calls(); }
  ModelPool pool;
  Trainer trainer;
};

}  // namespace troupe::testing
