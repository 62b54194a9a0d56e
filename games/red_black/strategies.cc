// The scripted Red-Black strategies of the spec. Each is a team-level rule;
// every seat that plays it states a willingness, recommends and votes its choice.
#include <algorithm>

#include "games/red_black/red_black.h"
#include "games/red_black/red_black_state.h"

namespace troupe::red_black {

std::vector<std::string> RedBlackStrategy::Act(const State& state, const Decision& decision, Rng& rng) const {
  const auto* rb = dynamic_cast<const RedBlackState*>(&state);
  if (rb == nullptr) throw GameError("red_black strategy given a state of another game");
  const int team = rb->game().TeamOf(decision.seat);
  if (decision.phase == "will") return {std::to_string(rng.Below(4))};
  const Choice c = Choose(rb->ViewFor(team), rng);
  const std::string& label = rb->scenario().Label(c);  // what the episode's scenario calls the choice
  if (decision.phase == "speak") {
    if (c == Choice::kBlack) return {label, "we", "cooperate", "together"};
    return {label, "we", "defect", "now"};
  }
  return {label};
}

namespace {

constexpr Choice B = Choice::kBlack;
constexpr Choice R = Choice::kRed;

// `round` is 0-based below; the spec's rounds are 1-based.
struct AlwaysCooperate : RedBlackStrategy {
  Choice Choose(const RoundView&, Rng&) const override { return B; }
};
struct MostlyCooperate : RedBlackStrategy {
  Choice Choose(const RoundView& v, Rng&) const override { return v.round == v.rounds - 1 ? R : B; }
};
struct AlwaysDefect : RedBlackStrategy {
  Choice Choose(const RoundView&, Rng&) const override { return R; }
};
struct DefectCritical : RedBlackStrategy {
  Choice Choose(const RoundView& v, Rng&) const override { return v.multiplier > 1 ? R : B; }
};
struct TitForTat : RedBlackStrategy {
  Choice Choose(const RoundView& v, Rng&) const override { return v.other.empty() ? B : v.other.back(); }
};
struct EarlyExploiter : RedBlackStrategy {
  Choice Choose(const RoundView& v, Rng&) const override { return v.round >= 1 && v.round <= 3 ? R : B; }
};
struct MidExploiter : RedBlackStrategy {
  Choice Choose(const RoundView& v, Rng&) const override { return v.round >= 4 && v.round <= 5 ? R : B; }
};
struct LateBetrayer : RedBlackStrategy {
  Choice Choose(const RoundView& v, Rng&) const override { return v.round >= 6 ? R : B; }
};
struct Alternating : RedBlackStrategy {
  Choice Choose(const RoundView& v, Rng&) const override { return v.round % 2 == 0 ? B : R; }
};
// Forgives a single defection; after two in a row it copies the other team.
struct Forgiver : RedBlackStrategy {
  Choice Choose(const RoundView& v, Rng&) const override {
    const size_t n = v.other.size();
    if (n >= 2 && v.other[n - 1] == R && v.other[n - 2] == R) return R;
    return B;
  }
};
// Not in the spec's list: a coin flip each round, for demonstrations and tests.
struct RandomChoice : RedBlackStrategy {
  Choice Choose(const RoundView&, Rng& rng) const override { return rng.Below(2) ? R : B; }
  bool Deterministic() const override { return false; }
};

TROUPE_REGISTER_STRATEGY("always_cooperate", AlwaysCooperate);
TROUPE_REGISTER_STRATEGY("mostly_cooperate", MostlyCooperate);
TROUPE_REGISTER_STRATEGY("always_defect", AlwaysDefect);
TROUPE_REGISTER_STRATEGY("defect_critical", DefectCritical);
TROUPE_REGISTER_STRATEGY("tit_for_tat", TitForTat);
TROUPE_REGISTER_STRATEGY("early_exploiter", EarlyExploiter);
TROUPE_REGISTER_STRATEGY("mid_exploiter", MidExploiter);
TROUPE_REGISTER_STRATEGY("late_betrayer", LateBetrayer);
TROUPE_REGISTER_STRATEGY("alternating", Alternating);
TROUPE_REGISTER_STRATEGY("forgiver", Forgiver);
TROUPE_REGISTER_STRATEGY("random_choice", RandomChoice);

}  // namespace

std::vector<std::string> StrategyNames() {
  return {"always_cooperate", "mostly_cooperate", "always_defect", "defect_critical", "tit_for_tat",
          "early_exploiter",  "mid_exploiter",    "late_betrayer", "alternating",     "forgiver"};
}

}  // namespace troupe::red_black
