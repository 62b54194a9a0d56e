// Seats drawn per episode group (RolloutSpec::SeatRoles).
#include "core/rng.h"
#include "workflows/config/rollout_spec.h"

namespace troupe {

int RolloutSpec::MatchupOf(uint64_t seed) const {
  if (matchups.empty()) return -1;
  double total = 0.0;
  for (const Matchup& m : matchups) total += m.weight;
  double u = Rng(Rng::Mix(seed, 0x3A7C)).Uniform() * total;
  for (size_t k = 0; k < matchups.size(); ++k) {
    if (u < matchups[k].weight) return static_cast<int>(k);
    u -= matchups[k].weight;
  }
  return static_cast<int>(matchups.size()) - 1;
}

std::vector<int> RolloutSpec::SeatRoles(uint64_t seed) const {
  const int matchup = MatchupOf(seed);
  const std::vector<SeatDraw>& draws = matchup < 0 ? seat_draws : matchups[matchup].seat_draws;
  std::vector<int> roles = matchup < 0 ? seat_role : matchups[matchup].seat_role;
  if (draws.empty()) return roles;
  Rng rng(Rng::Mix(seed, 0x5EA7));
  std::vector<bool> taken(roles.size(), false);
  for (const SeatDraw& d : draws) {
    std::vector<int> free;
    for (int s : d.seats) {
      if (!taken[s]) free.push_back(s);
    }
    // The first `count` of a partial shuffle (compilation checks that enough are free).
    for (int k = 0; k < d.count && k < static_cast<int>(free.size()); ++k) {
      std::swap(free[k], free[k + rng.Below(static_cast<int>(free.size()) - k)]);
      roles[free[k]] = d.role;
      taken[free[k]] = true;
    }
  }
  return roles;
}

}  // namespace troupe
