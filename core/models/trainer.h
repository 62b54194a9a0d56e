// The trainer: one AdamW optimiser per physical model; PPO-clip / GRPO-style
// clipped policy-gradient losses on per-token advantages, a value loss with GAE
// for PPO, entropy bonus, optional KL to a frozen reference, gradient clipping,
// and supervised fine-tuning (cross-entropy) on recorded calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/credit.h"
#include "core/models/learner_group.h"
#include "core/models/model_pool.h"
#include "core/rng.h"
#include "core/trajectory.h"

namespace troupe {

// The update's settings. No defaults here: a workflow's are in one table
// (workflows/config/defaults.cc), and compilation sets every field.
struct TrainerConfig {
  Estimator estimator = Estimator::kGrpo;
  int epochs = 0;
  int minibatch = 0;       // records per optimiser step
  int update_records = 0;  // records sampled per model for each update; 0 = all
  double clip = 0.0;
  double entropy_coef = 0.0;
  double kl_coef = 0.0;
  double value_coef = 0.0;
  double temperature = 0.0;
  double gamma = 0.0;
  double lambda = 0.0;
  // Calls of a conversation share prefixes: plain calls (no vectors) are
  // scored in rows of prefix trees of about this many positions, each shared
  // prefix encoded once (core/models/prefix_tree_pack.h); 0 scores every call
  // on its own. The same log-probabilities, values and gradients either way.
  int64_t tree_row_budget = 144;
  // A minibatch whose calls encode more positions than this (0: no limit) is
  // scored in passes of fewer calls, halved until each fits, their gradients
  // summed before the one optimiser step: the same update, with the memory of
  // one pass bounded (a pass's activations grow with its positions, its
  // attention with their squares). The same log-probabilities, statistics and
  // gradients either way, up to the order of float sums.
  int64_t pass_positions = 0;
};

struct ModelTrainStats {
  int records = 0;
  int tokens = 0;
  int steps = 0;
  double loss = 0.0;
  double policy_loss = 0.0;
  double value_loss = 0.0;
  double entropy = 0.0;
  double kl = 0.0;
  double clip_fraction = 0.0;
  double grad_norm = 0.0;
  int learners = 1;  // data-parallel learners that shared the update
  int64_t positions = 0;  // token positions the update's forward passes encoded (this learner's)
  uint64_t parameter_digest = 0;  // after the update (set by a model server): learners in step agree
};

class Trainer {
 public:
  Trainer(ModelPool& pool, TrainerConfig config, uint64_t seed);
  ~Trainer();

  // One policy update per model from the records of this iteration.
  std::vector<ModelTrainStats> Update(const std::vector<CallRecord>& records);
  // `steps` optimiser steps of cross-entropy on the responses of `demos`. With
  // a KL term, its reference becomes the model as these steps leave it.
  std::vector<ModelTrainStats> Supervised(const std::vector<CallRecord>& demos, int steps);
  // The current policy's log-probabilities of each record's response tokens, as
  // the update scores them, in batches per model (at temperature 1; for checks
  // against `logprobs`).
  std::vector<std::vector<float>> ResponseLogProbs(const std::vector<CallRecord>& records);

  // Trains as one of spec.world data-parallel learners from the next update
  // on (a new prefix, rank or world forms a new group; world 1 leaves it).
  // Each learner scores its share of every minibatch; gradients are summed
  // over the group before each step, so all learners keep equal parameters,
  // and statistics are the whole batch's.
  void JoinLearners(const LearnerGroupSpec& spec);
  // The optimisers' state and the shuffle RNG in memory (a learner whose
  // update failed midway goes back to where it began).
  std::string SaveState() const;
  void LoadState(const std::string& state);

  // Optimiser state, reference models and the shuffle RNG, for exact resume.
  void Save(const std::string& dir) const;
  void Load(const std::string& dir);

 private:
  std::string RngFile(const std::string& dir) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe
