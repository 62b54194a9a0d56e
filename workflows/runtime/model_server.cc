// ModelServer and LocalPolicy.
#include "workflows/runtime/model_server.h"

#include <cstdint>

#include "core/base/errors.h"
#include "workflows/specs/model_spec.h"

namespace troupe {

ModelServer::ModelServer(const wire::ModelServeSpec& spec)
    : model_index_(spec.model_index()),
      pool_({ModelConfigOf(spec)}, spec.seed()),
      trainer_(pool_, TrainerConfigOf(spec), Rng::Mix(spec.seed(), 500 + static_cast<uint64_t>(spec.model_index()))) {
  if (spec.hybrid()) hybrid_ = std::make_unique<HybridCommTrainer>(pool_);
}

ModelServer::~ModelServer() = default;

std::vector<Generation> ModelServer::Generate(const GenerateBatch& batch) {
  Rng rng(batch.seed);
  if (batch.snapshot.empty()) {
    return pool_.Generate(0, batch.queries, rng, batch.temperature, batch.greedy, batch.share_identical);
  }
  ModelPool& snapshot = Snapshot(batch.snapshot);
  const int64_t calls = snapshot.forward_calls(0), positions = snapshot.encoded_positions(0);
  std::vector<Generation> out =
      snapshot.Generate(0, batch.queries, rng, batch.temperature, batch.greedy, batch.share_identical);
  snapshot_forward_calls_ += snapshot.forward_calls(0) - calls;
  snapshot_positions_ += snapshot.encoded_positions(0) - positions;
  return out;
}

ModelPool& ModelServer::Snapshot(const std::string& dir) {
  for (auto it = snapshots_.begin(); it != snapshots_.end(); ++it) {
    if (it->first != dir) continue;
    snapshots_.splice(snapshots_.begin(), snapshots_, it);
    return *snapshots_.front().second;
  }
  ModelConfig c = config();
  c.frozen = true;  // parameters only: no optimiser, no gradients
  c.hf_dir.clear();
  c.init = nullptr;  // its parameters come from the folder
  auto pool = std::make_unique<ModelPool>(std::vector<ModelConfig>{c}, 0);
  try {
    pool->Load(dir);
  } catch (const std::exception& e) {
    throw CheckpointError("model '" + c.name + "': cannot load its snapshot " + dir + ": " + e.what());
  }
  snapshots_.emplace_front(dir, std::move(pool));
  if (snapshots_.size() > static_cast<size_t>(kSnapshotsHeld)) snapshots_.pop_back();
  return *snapshots_.front().second;
}

std::vector<CallRecord> ModelServer::Mine(const std::vector<CallRecord>& records) const {
  std::vector<CallRecord> mine;
  for (const auto& r : records) {
    if (r.model != model_index_) continue;
    mine.push_back(r);
    mine.back().model = 0;  // this server's pool holds one model
  }
  return mine;
}

ModelTrainStats ModelServer::StepInLearnerGroup(const LearnerGroupSpec& learners,
                                                const std::function<ModelTrainStats()>& step) {
  // In a group, all or nothing: a lost peer fails a collective midway, after some steps.
  const bool group = learners.world > 1;
  const std::string weights = group ? pool_.SaveBytes(0) : std::string(), state = group ? trainer_.SaveState() : std::string();
  try {
    trainer_.JoinLearners(learners);
    ModelTrainStats st = step();
    if (group) st.parameter_digest = pool_.ParameterDigest(0);  // the hub checks the learners agree
    return st;
  } catch (...) {
    if (!group) throw;
    trainer_.JoinLearners({});  // the group is broken: the next update forms a new one
    pool_.LoadBytes(0, weights);
    trainer_.LoadState(state);
    throw;
  }
}

ModelTrainStats ModelServer::Update(const std::vector<CallRecord>& records, const LearnerGroupSpec& learners) {
  const std::vector<CallRecord> mine = Mine(records);
  return StepInLearnerGroup(learners, [&] { return trainer_.Update(mine).at(0); });
}

ModelTrainStats ModelServer::Supervised(const std::vector<CallRecord>& demos, int steps,
                                        const LearnerGroupSpec& learners) {
  const std::vector<CallRecord> mine = Mine(demos);
  return StepInLearnerGroup(learners, [&] { return trainer_.Supervised(mine, steps).at(0); });
}

HybridStepStats ModelServer::HybridStep(const HybridBatch& batch, const HybridSettings& settings) {
  if (!hybrid_) throw ModelError("model '" + config().name + "' is not served for trainer.hybrid");
  const HybridBatch mine = ExamplesOfModel(batch, model_index_, 0);  // this server's pool holds one model
  if (mine.empty() || config().frozen) return {};
  return hybrid_->Step(mine, settings);
}

void ModelServer::Save(const std::string& dir) const {
  pool_.Save(dir);
  trainer_.Save(dir);
  if (hybrid_) hybrid_->Save(dir);
}

void ModelServer::Load(const std::string& dir, bool with_optimizer) {
  pool_.Load(dir);
  if (!with_optimizer) return;
  trainer_.Load(dir);
  if (hybrid_) hybrid_->Load(dir);
}

void ModelServer::SaveSnapshot(const std::string& dir) const { pool_.Save(dir); }

std::string ModelServer::SaveWeights() const { return pool_.SaveBytes(0); }
void ModelServer::LoadWeights(const std::string& bytes) { pool_.LoadBytes(0, bytes); }

LocalPolicy::LocalPolicy(const std::vector<wire::ModelServeSpec>& models) {
  for (const auto& spec : models) servers_.push_back(std::make_unique<ModelServer>(spec));
}

std::vector<std::vector<Generation>> LocalPolicy::Generate(const std::vector<GenerateBatch>& batches) {
  std::vector<std::vector<Generation>> out;
  for (const auto& b : batches) out.push_back(servers_.at(b.model)->Generate(b));
  return out;
}

std::vector<ModelTrainStats> LocalPolicy::Update(const std::vector<CallRecord>& records) {
  std::vector<ModelTrainStats> out;
  for (auto& s : servers_) out.push_back(s->Update(records));
  return out;
}

std::vector<ModelTrainStats> LocalPolicy::Supervised(const std::vector<CallRecord>& demos, int steps) {
  std::vector<ModelTrainStats> out;
  for (auto& s : servers_) out.push_back(s->Supervised(demos, steps));
  return out;
}

std::vector<HybridStepStats> LocalPolicy::HybridStep(const HybridBatch& batch, const HybridSettings& settings) {
  std::vector<HybridStepStats> out;
  for (auto& s : servers_) out.push_back(s->HybridStep(batch, settings));
  return out;
}

void LocalPolicy::Save(const std::string& dir) {
  for (auto& s : servers_) s->Save(dir);
}

void LocalPolicy::Load(const std::string& dir, bool with_optimizer) {
  for (auto& s : servers_) s->Load(dir, with_optimizer);
}

int64_t LocalPolicy::forward_calls() const {
  int64_t n = 0;
  for (const auto& s : servers_) n += s->forward_calls();
  return n;
}

int64_t LocalPolicy::encoded_positions() const {
  int64_t n = 0;
  for (const auto& s : servers_) n += s->encoded_positions();
  return n;
}

}  // namespace troupe
