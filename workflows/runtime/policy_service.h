// PolicyService: what the controller needs from the physical models of a
// workflow: batched generation, training updates (reinforcement learning,
// supervised, hybrid message distillation) and checkpoints. Two
// implementations: LocalPolicy (the models in this thread; tests, benches) and
// WorkerHub (model workers over ZeroMQ, in-process or in other processes).
// Both run the same ModelServer per model, so they give identical results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/models/hybrid_comm.h"
#include "core/models/model_pool.h"
#include "core/models/trainer.h"
#include "core/trajectory.h"

namespace troupe {

// Every pending request for one physical model in one tick.
struct GenerateBatch {
  int model = 0;
  std::vector<GenerateQuery> queries;
  uint64_t seed = 0;  // sampling seed of this batch (workers keep no sampling state)
  double temperature = 1.0;
  bool greedy = false;
  bool share_identical = false;
  // A frozen snapshot of the model (a checkpoint folder of its parameters,
  // PolicyService::SaveSnapshot) answers instead of the model; empty: the model.
  // Servers load each snapshot once, when first asked.
  std::string snapshot;
};

class PolicyService {
 public:
  virtual ~PolicyService() = default;
  virtual int size() const = 0;
  virtual const ModelConfig& config(int model) const = 0;
  // One result per batch, rows in query order; the models may work in parallel.
  virtual std::vector<std::vector<Generation>> Generate(const std::vector<GenerateBatch>& batches) = 0;
  // One policy update per model from the records that name it.
  virtual std::vector<ModelTrainStats> Update(const std::vector<CallRecord>& records) = 0;
  virtual std::vector<ModelTrainStats> Supervised(const std::vector<CallRecord>& demos, int steps) = 0;
  // One distillation step of hybrid messages (trainer.hybrid) per model, from
  // the examples that name it; a model named by none is left as it is.
  virtual std::vector<HybridStepStats> HybridStep(const HybridBatch& batch, const HybridSettings& settings) = 0;
  // Models and optimiser states of every model, into or from a checkpoint folder.
  virtual void Save(const std::string& dir) = 0;
  virtual void Load(const std::string& dir, bool with_optimizer) = 0;
  // One model's parameters, into a folder a GenerateBatch::snapshot can name.
  virtual void SaveSnapshot(int model, const std::string& dir) = 0;
  // Model forward passes so far, all models.
  virtual int64_t forward_calls() const = 0;
  // Token positions those passes encoded, all models (ModelPool::encoded_positions).
  virtual int64_t encoded_positions() const = 0;
};

}  // namespace troupe
