// Credit assignment: turns per-call rewards into advantages. GRPO normalises
// within groups keyed by (episode group, role, turn, ...) as in AT-GRPO; RLOO
// uses a leave-one-out baseline in the same groups; REINFORCE subtracts a
// running mean per key. PPO's token-level GAE needs values and runs in the trainer.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/trajectory.h"

namespace troupe {

enum class Estimator { kGrpo, kPpo, kRloo, kReinforce };
enum class GroupKey { kEpisodeGroup, kRole, kTurn, kPhase };

const char* EstimatorName(Estimator e);

struct CreditConfig {
  Estimator estimator = Estimator::kGrpo;
  std::vector<GroupKey> group_by = {GroupKey::kEpisodeGroup, GroupKey::kRole, GroupKey::kTurn};
  double eps = 1e-6;
  double baseline_decay = 0.9;
  // Inert calls (State::Inert) get their group's mean outcome instead of their
  // own: a difference reward, exact for outputs that cannot change the outcome.
  bool baseline_inert = true;
};

struct CreditStats {
  int groups = 0;
  double advantage_mean = 0.0;
  double advantage_std = 0.0;
};

class CreditAssigner {
 public:
  explicit CreditAssigner(CreditConfig config) : config_(std::move(config)) {}

  // Replaces the outcome part of inert records' rewards by their group's mean
  // outcome; then fills `advantage` from `reward` (PPO: the trainer does).
  CreditStats Assign(std::vector<CallRecord>& records);

  const CreditConfig& config() const { return config_; }
  // REINFORCE running baselines, for exact resume.
  std::string SaveState() const;
  void LoadState(const std::string& text);

 private:
  using Key = std::tuple<int, int, int, std::string>;
  Key KeyOf(const CallRecord& r, bool with_group) const;
  void BaselineInert(std::vector<CallRecord>& records) const;

  CreditConfig config_;
  std::map<Key, double> baselines_;
};

}  // namespace troupe
