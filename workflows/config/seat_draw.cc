// Seats drawn per episode group (RolloutSpec::SeatRoles).
#include "core/rng.h"
#include "workflows/config/rollout_spec.h"

namespace troupe {

std::vector<int> RolloutSpec::SeatRoles(uint64_t seed) const {
  std::vector<int> roles = seat_role;
  if (seat_draws.empty()) return roles;
  Rng rng(Rng::Mix(seed, 0x5EA7));
  std::vector<bool> taken(roles.size(), false);
  for (const SeatDraw& d : seat_draws) {
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
