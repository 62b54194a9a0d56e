// ModelServer: one physical model with its trainer: what a model worker runs,
// wherever it runs. LocalPolicy: a ModelServer per model, called directly.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "comms/proto/runtime.pb.h"
#include "workflows/runtime/policy_service.h"

namespace troupe {

class ModelServer {
 public:
  // Builds the model a spec describes (initialised from the workflow seed and its index).
  explicit ModelServer(const wire::ModelServeSpec& spec);
  ~ModelServer();

  std::vector<Generation> Generate(const GenerateBatch& batch);
  // Records of other models are ignored. With `learners` of world N > 1 this
  // server is one of N data-parallel learners (Trainer::JoinLearners); an
  // update that fails midway (a peer lost) leaves the parameters and optimiser
  // as they were before it, and the error propagates.
  ModelTrainStats Update(const std::vector<CallRecord>& records, const LearnerGroupSpec& learners = {});
  ModelTrainStats Supervised(const std::vector<CallRecord>& demos, int steps, const LearnerGroupSpec& learners = {});
  // Examples of other models are ignored.
  HybridStepStats HybridStep(const HybridBatch& batch, const HybridSettings& settings);
  void Save(const std::string& dir) const;
  void Load(const std::string& dir, bool with_optimizer);
  // The model's parameters only, into `dir` (a snapshot GenerateBatch::snapshot can name).
  void SaveSnapshot(const std::string& dir) const;
  std::string SaveWeights() const;
  void LoadWeights(const std::string& bytes);
  // The model's log-probabilities of each record's response tokens (Trainer::ResponseLogProbs).
  std::vector<std::vector<float>> ResponseLogProbs(const std::vector<CallRecord>& records) {
    return trainer_.ResponseLogProbs(Mine(records));
  }

  int model_index() const { return model_index_; }
  const ModelConfig& config() const { return pool_.config(0); }
  // The model's and its snapshots' together.
  int64_t forward_calls() const { return pool_.forward_calls(0) + snapshot_forward_calls_; }
  int64_t encoded_positions() const { return pool_.encoded_positions(0) + snapshot_positions_; }
  // Snapshots held in memory now (at most kSnapshotsHeld, the least recently used leave first).
  int snapshots_held() const { return static_cast<int>(snapshots_.size()); }
  static constexpr int kSnapshotsHeld = 16;

 private:
  std::vector<CallRecord> Mine(const std::vector<CallRecord>& records) const;
  ModelTrainStats StepInLearnerGroup(const LearnerGroupSpec& learners, const std::function<ModelTrainStats()>& step);
  // The snapshot in `dir`, loaded on first use: the model's architecture, frozen, with the folder's parameters.
  ModelPool& Snapshot(const std::string& dir);
  int model_index_;
  ModelPool pool_;
  // Snapshots by folder, the most recently used first.
  std::list<std::pair<std::string, std::unique_ptr<ModelPool>>> snapshots_;
  int64_t snapshot_forward_calls_ = 0, snapshot_positions_ = 0;
  Trainer trainer_;
  std::unique_ptr<HybridCommTrainer> hybrid_;  // when the spec says trainer.hybrid
};

class LocalPolicy : public PolicyService {
 public:
  explicit LocalPolicy(const std::vector<wire::ModelServeSpec>& models);
  int size() const override { return static_cast<int>(servers_.size()); }
  const ModelConfig& config(int model) const override { return servers_.at(model)->config(); }
  std::vector<std::vector<Generation>> Generate(const std::vector<GenerateBatch>& batches) override;
  std::vector<ModelTrainStats> Update(const std::vector<CallRecord>& records) override;
  std::vector<ModelTrainStats> Supervised(const std::vector<CallRecord>& demos, int steps) override;
  std::vector<HybridStepStats> HybridStep(const HybridBatch& batch, const HybridSettings& settings) override;
  void Save(const std::string& dir) override;
  void Load(const std::string& dir, bool with_optimizer) override;
  void SaveSnapshot(int model, const std::string& dir) override { servers_.at(model)->SaveSnapshot(dir); }
  int64_t forward_calls() const override;
  int64_t encoded_positions() const override;

 private:
  std::vector<std::unique_ptr<ModelServer>> servers_;
};

}  // namespace troupe
