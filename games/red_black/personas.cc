// Scripted players who listen (the seed study's population and teacher;
// ../specs seed_study.md). Unlike the team strategies of strategies.cc, each
// seat acts on its own and its vote can follow what teammates recommended this
// round. A persona's prior is what it votes with no messages; how often it
// follows a teammates' majority that disagrees is its susceptibility, so the
// population's persuadability is known exactly by construction.
#include "games/red_black/personas.h"

#include <algorithm>

#include "games/red_black/red_black_state.h"

namespace troupe::red_black {

namespace {

constexpr Choice B = Choice::kBlack;
constexpr Choice R = Choice::kRed;

bool BetrayedRecently(const RoundView& v) {
  const size_t n = v.other.size();
  return (n >= 1 && v.other[n - 1] == R) || (n >= 2 && v.other[n - 2] == R);
}

const RedBlackState& StateOf(const State& state) {
  const auto* rb = dynamic_cast<const RedBlackState*>(&state);
  if (rb == nullptr) throw GameError("red_black persona given a state of another game");
  return *rb;
}

}  // namespace

const std::vector<Persona>& Personas() {
  static const std::vector<Persona> all = {
      // Votes with the room: tit-for-tat alone, the teammates' majority when there is one.
      {"conformist", 0.9, 0, {"we", "agree"},
       [](const RoundView& v) { return v.other.empty() ? B : v.other.back(); }},
      // Defects for two rounds after a betrayal; hard to talk out of it.
      {"cautious", 0.5, 1, {"they", "betray"}, [](const RoundView& v) { return BetrayedRecently(v) ? R : B; }},
      // Defects when the multiplier is high, otherwise copies the other team.
      {"self_interested", 0.3, 2, {"big", "points"},
       [](const RoundView& v) { return v.multiplier > 1 ? R : (v.other.empty() ? B : v.other.back()); }},
      // Cooperates, and says so.
      {"cooperative", 0.2, 2, {"cooperate", "together"}, [](const RoundView&) { return B; }},
  };
  return all;
}

Choice TeammatesMajority(const std::vector<Message>& messages, int seat, Choice otherwise) {
  int black = 0, red = 0;
  for (const Message& m : messages) {
    if (m.seat == seat || m.latent >= 0) continue;
    (m.recommendation == B ? black : red)++;
  }
  return black > red ? B : red > black ? R : otherwise;
}

std::vector<std::string> PersonaAct(const Persona& p, const State& state, const Decision& d, Rng& rng) {
  const RedBlackState& rb = StateOf(state);
  const int team = rb.game().TeamOf(d.seat);
  const RoundView view = rb.ViewFor(team);
  const Choice prior = p.prior(view);
  const Scenario& s = rb.scenario();
  if (d.phase == "will") return {std::to_string(p.willingness)};
  if (d.phase == "speak") {
    // The easily moved (susceptibility 0.5 or more) echo the room so far; the others say their prior.
    const Choice said = p.susceptibility >= 0.5 ? TeammatesMajority(rb.HeardMessages(d.seat), d.seat, prior) : prior;
    std::vector<std::string> words = {s.Label(said)};
    for (const std::string& w : p.reason) words.push_back(w);
    words.resize(std::min<size_t>(words.size(), static_cast<size_t>(std::max(1, d.max_words))));
    return words;
  }
  const Choice heard = TeammatesMajority(rb.HeardMessages(d.seat), d.seat, prior);
  const bool follows = heard != prior && rng.Uniform() < p.susceptibility;
  return {s.Label(follows ? heard : prior)};
}

namespace {

// One persona for every seat.
template <int kIndex>
struct OnePersona : ScriptedStrategy {
  std::string GameName() const override { return "red_black"; }
  std::vector<std::string> Act(const State& state, const Decision& d, Rng& rng) const override {
    return PersonaAct(Personas()[kIndex], state, d, rng);
  }
  bool Deterministic() const override { return false; }
};

// The population: each seat a persona drawn for the episode from its game seed.
struct PersonaMix : ScriptedStrategy {
  std::string GameName() const override { return "red_black"; }
  std::vector<std::string> Act(const State& state, const Decision& d, Rng& rng) const override {
    return PersonaAct(PersonaOf(StateOf(state).seed(), d.seat), state, d, rng);
  }
  bool Deterministic() const override { return false; }
};

// The teacher: first to speak, always for the cooperative option, with a
// reason about the round: the multiplier when it is high, the last round, or
// trust after a betrayal; and votes for it.
struct Teacher : ScriptedStrategy {
  std::string GameName() const override { return "red_black"; }
  std::vector<std::string> Act(const State& state, const Decision& d, Rng&) const override {
    const RedBlackState& rb = StateOf(state);
    const RoundView view = rb.ViewFor(rb.game().TeamOf(d.seat));
    if (d.phase == "will") return {"3"};
    std::vector<std::string> words = {rb.scenario().Label(B)};
    if (d.phase != "speak") return words;
    if (view.multiplier > 1) {
      words.insert(words.end(), {"multiplier", "points", "together"});
    } else if (view.round == view.rounds - 1) {
      words.insert(words.end(), {"last", "fair", "together"});
    } else if (BetrayedRecently(view)) {
      words.insert(words.end(), {"forgive", "trust", "again"});
    } else {
      words.insert(words.end(), {"we", "cooperate", "together"});
    }
    words.resize(std::min<size_t>(words.size(), static_cast<size_t>(std::max(1, d.max_words))));
    return words;
  }
};

}  // namespace

const Persona& PersonaOf(uint64_t game_seed, int seat) {
  Rng rng(Rng::Mix(game_seed, 0x9E850, static_cast<uint64_t>(seat)));
  return Personas()[rng.Below(static_cast<int>(Personas().size()))];
}

TROUPE_REGISTER_STRATEGY("conformist", OnePersona<0>);
TROUPE_REGISTER_STRATEGY("cautious", OnePersona<1>);
TROUPE_REGISTER_STRATEGY("self_interested", OnePersona<2>);
TROUPE_REGISTER_STRATEGY("cooperative", OnePersona<3>);
TROUPE_REGISTER_STRATEGY("persona_mix", PersonaMix);
TROUPE_REGISTER_STRATEGY("teacher", Teacher);

}  // namespace troupe::red_black
