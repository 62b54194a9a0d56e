// Group-normalised (GRPO), leave-one-out (RLOO) and running-baseline (REINFORCE) advantages.
#include "core/credit.h"

#include <cmath>
#include <sstream>

#include "core/base/errors.h"

namespace troupe {

const char* EstimatorName(Estimator e) {
  switch (e) {
    case Estimator::kGrpo: return "grpo";
    case Estimator::kPpo: return "ppo";
    case Estimator::kRloo: return "rloo";
    case Estimator::kReinforce: return "reinforce";
  }
  return "?";
}

CreditAssigner::Key CreditAssigner::KeyOf(const CallRecord& r, bool with_group) const {
  Key k{-1, -1, -1, ""};
  for (GroupKey g : config_.group_by) {
    switch (g) {
      case GroupKey::kEpisodeGroup:
        if (with_group) std::get<0>(k) = r.group;
        break;
      case GroupKey::kRole: std::get<1>(k) = r.role; break;
      case GroupKey::kTurn: std::get<2>(k) = r.turn; break;
      case GroupKey::kPhase: std::get<3>(k) = r.phase; break;
    }
  }
  return k;
}

void CreditAssigner::BaselineInert(std::vector<CallRecord>& records) const {
  std::map<Key, std::pair<double, int>> outcome;  // over the calls that could matter
  for (const auto& r : records) {
    if (r.inert) continue;
    auto& [sum, n] = outcome[KeyOf(r, true)];
    sum += r.reward - r.role_reward;
    n += 1;
  }
  for (auto& r : records) {
    if (!r.inert) continue;
    auto it = outcome.find(KeyOf(r, true));
    if (it == outcome.end()) continue;  // no pivotal call in the group: keep the reward
    r.reward = it->second.first / it->second.second + r.role_reward;
  }
}

CreditStats CreditAssigner::Assign(std::vector<CallRecord>& records) {
  CreditStats stats;
  if (config_.baseline_inert) BaselineInert(records);
  if (config_.estimator == Estimator::kPpo) return stats;
  const bool reinforce = config_.estimator == Estimator::kReinforce;
  std::map<Key, std::vector<size_t>> groups;
  for (size_t i = 0; i < records.size(); ++i) groups[KeyOf(records[i], !reinforce)].push_back(i);
  stats.groups = static_cast<int>(groups.size());
  for (const auto& [key, members] : groups) {
    double sum = 0.0, sq = 0.0;
    for (size_t i : members) sum += records[i].reward;
    const double n = static_cast<double>(members.size());
    const double mean = sum / n;
    for (size_t i : members) sq += (records[i].reward - mean) * (records[i].reward - mean);
    const double std = n > 1 ? std::sqrt(sq / (n - 1)) : 0.0;
    for (size_t i : members) {
      double& a = records[i].advantage;
      switch (config_.estimator) {
        case Estimator::kGrpo: a = n > 1 ? (records[i].reward - mean) / (std + config_.eps) : 0.0; break;
        case Estimator::kRloo: a = n > 1 ? records[i].reward - (sum - records[i].reward) / (n - 1) : 0.0; break;
        case Estimator::kReinforce: {
          auto it = baselines_.find(key);
          a = records[i].reward - (it == baselines_.end() ? mean : it->second);
          break;
        }
        case Estimator::kPpo: break;
      }
    }
    if (reinforce) {
      auto it = baselines_.find(key);
      baselines_[key] =
          it == baselines_.end() ? mean : config_.baseline_decay * it->second + (1 - config_.baseline_decay) * mean;
    }
  }
  double s = 0.0, s2 = 0.0;
  for (const auto& r : records) {
    s += r.advantage;
    s2 += r.advantage * r.advantage;
  }
  if (!records.empty()) {
    stats.advantage_mean = s / records.size();
    stats.advantage_std = std::sqrt(std::max(0.0, s2 / records.size() - stats.advantage_mean * stats.advantage_mean));
  }
  return stats;
}

std::string CreditAssigner::SaveState() const {
  std::ostringstream out;
  out.precision(17);
  for (const auto& [k, v] : baselines_) {
    out << std::get<0>(k) << ' ' << std::get<1>(k) << ' ' << std::get<2>(k) << ' '
        << (std::get<3>(k).empty() ? "-" : std::get<3>(k)) << ' ' << v << '\n';
  }
  return out.str();
}

void CreditAssigner::LoadState(const std::string& text) {
  baselines_.clear();
  std::istringstream in(text);
  int g, r, t;
  std::string phase;
  double v;
  while (in >> g >> r >> t >> phase >> v) baselines_[Key{g, r, t, phase == "-" ? "" : phase}] = v;
}

}  // namespace troupe
