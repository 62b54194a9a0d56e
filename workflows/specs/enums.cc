// Proto enum <-> C++ enum switches.
#include "workflows/specs/enums.h"

namespace troupe {

std::optional<Estimator> EstimatorOf(int proto_value) {
  switch (proto_value) {
    case config::GRPO: return Estimator::kGrpo;
    case config::PPO: return Estimator::kPpo;
    case config::RLOO: return Estimator::kRloo;
    case config::REINFORCE: return Estimator::kReinforce;
    default: return std::nullopt;
  }
}

std::optional<GroupKey> GroupKeyOf(int proto_value) {
  switch (proto_value) {
    case config::BY_EPISODE_GROUP: return GroupKey::kEpisodeGroup;
    case config::BY_ROLE: return GroupKey::kRole;
    case config::BY_TURN: return GroupKey::kTurn;
    case config::BY_PHASE: return GroupKey::kPhase;
    default: return std::nullopt;
  }
}

config::GroupKey ToProto(GroupKey k) {
  switch (k) {
    case GroupKey::kEpisodeGroup: return config::BY_EPISODE_GROUP;
    case GroupKey::kRole: return config::BY_ROLE;
    case GroupKey::kTurn: return config::BY_TURN;
    case GroupKey::kPhase: return config::BY_PHASE;
  }
  return config::BY_EPISODE_GROUP;  // unreachable: every GroupKey is listed above
}

}  // namespace troupe
