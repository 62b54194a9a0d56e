// The seed study's scripted players (games/red_black/personas.h): each
// persona votes its prior when nobody speaks, follows a disagreeing
// teammates' majority about as often as its susceptibility says, and the
// teacher recommends cooperation with reasons in the game's words.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <memory>

#include "core/game.h"
#include "games/red_black/personas.h"
#include "games/red_black/red_black.h"
#include "games/red_black/red_black_state.h"

using namespace troupe;
using namespace troupe::red_black;

namespace {

// Team A's seats played by `a` (one strategy name per seat), team B by `b`, to the end.
std::map<std::string, double> Play(const Game& game, const std::vector<std::string>& a, const std::string& b,
                                   uint64_t seed, std::vector<std::pair<Decision, std::vector<std::string>>>* acts) {
  std::vector<std::unique_ptr<ScriptedStrategy>> seats;
  for (const auto& name : a) seats.push_back(StrategyFactory::Get().Create(name));
  for (size_t i = 0; i < a.size(); ++i) seats.push_back(StrategyFactory::Get().Create(b));
  Rng rng(seed);
  auto state = game.NewInitialState(seed);
  while (!state->IsTerminal()) {
    std::vector<SeatOutput> out;
    for (const Decision& d : state->PendingDecisions()) {
      out.push_back({d.seat, seats[d.seat]->Act(*state, d, rng)});
      if (acts) acts->push_back({d, out.back().words});
    }
    state->Apply(out);
  }
  return state->Metrics();
}

std::unique_ptr<Game> FiveASide(bool silent = false) {
  return MakeGame("red_black", {{"team_size", int64_t{5}}, {"silent", silent}});
}

double MeanCooperation(const Game& game, const std::vector<std::string>& a, const std::string& b, int games) {
  double sum = 0;
  for (int g = 0; g < games; ++g) sum += Play(game, a, b, 1000 + g, nullptr).at("team_a_cooperation");
  return sum / games;
}

}  // namespace

TEST_CASE("personas vote their prior when nobody speaks, and give valid answers", "[red_black][personas]") {
  const auto game = FiveASide(true);
  for (const Persona& p : Personas()) {
    INFO(p.name);
    std::vector<std::pair<Decision, std::vector<std::string>>> acts;
    const auto m = Play(*game, std::vector<std::string>(5, p.name), "always_defect", 7, &acts);
    CHECK(m.at("invalid_outputs") == 0);
    // Against always_defect, in silence: a cooperative persona always cooperates, the others defect after round 1.
    if (p.name == "cooperative") CHECK(m.at("team_a_cooperation") == 1.0);
    else CHECK(m.at("team_a_cooperation") < 0.5);
  }
}

TEST_CASE("a teacher's recommendation turns listening personas as often as their susceptibility says",
          "[red_black][personas]") {
  const auto game = FiveASide();
  const int games = 60;
  // Four conformists (susceptibility 0.9) follow the teacher's BLACK against always_defect; without it they defect.
  const double alone = MeanCooperation(*game, std::vector<std::string>(5, "conformist"), "always_defect", games);
  const double taught =
      MeanCooperation(*game, {"teacher", "conformist", "conformist", "conformist", "conformist"}, "always_defect", games);
  CHECK(alone < 0.3);
  CHECK(taught > 0.8);
  // The cautious (0.5) are harder to move than conformists, easier than nobody.
  const double cautious =
      MeanCooperation(*game, {"teacher", "cautious", "cautious", "cautious", "cautious"}, "always_defect", games);
  const double cautious_alone = MeanCooperation(*game, std::vector<std::string>(5, "cautious"), "always_defect", games);
  CHECK(cautious > cautious_alone + 0.1);
  CHECK(cautious < taught);
  // In the silent control the teacher moves nobody.
  const auto silent = FiveASide(true);
  CHECK(MeanCooperation(*silent, {"teacher", "conformist", "conformist", "conformist", "conformist"}, "always_defect",
                        games) < 0.5);
}

TEST_CASE("the teacher speaks first for cooperation with a reason in the game's words and persona_mix varies by seat",
          "[red_black][personas]") {
  const auto game = MakeGame("red_black", {{"team_size", int64_t{5}}, {"reason_words", int64_t{3}}});
  std::vector<std::pair<Decision, std::vector<std::string>>> acts;
  Play(*game, {"persona_mix", "teacher", "persona_mix", "persona_mix", "persona_mix"}, "tit_for_tat", 3, &acts);
  const std::vector<std::string> vocabulary = game->Vocabulary();
  int teacher_speeches = 0;
  for (const auto& [d, words] : acts) {
    if (d.seat != 1 || d.phase != "speak") continue;
    ++teacher_speeches;
    REQUIRE(words.size() == 4);
    CHECK(words[0] == "black");
    for (const auto& w : words) CHECK(std::find(vocabulary.begin(), vocabulary.end(), w) != vocabulary.end());
  }
  CHECK(teacher_speeches > 0);
  // Personas are drawn per seat from the game seed: fixed for a seed, and more than one kind across seats.
  std::set<std::string> kinds;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    for (int seat = 0; seat < 5; ++seat) {
      CHECK(PersonaOf(seed, seat).name == PersonaOf(seed, seat).name);
      kinds.insert(PersonaOf(seed, seat).name);
    }
  }
  CHECK(kinds.size() == Personas().size());
}

TEST_CASE("the deliberation topology says who hears whom: broadcast, ring, fixed and rotating pairs",
          "[red_black][topology]") {
  auto game = [](const std::string& topology) {
    auto g = MakeGame("red_black", {{"team_size", int64_t{5}}, {"topology", topology}});
    return std::unique_ptr<RedBlackGame>(static_cast<RedBlackGame*>(g.release()));
  };
  const auto broadcast = game("broadcast"), ring = game("ring"), pairs = game("pairs"), rotating = game("rotating_pairs");
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) CHECK(broadcast->Hears(i, j, 0));
  }
  CHECK(ring->Hears(0, 1, 0));
  CHECK(ring->Hears(0, 4, 0));
  CHECK_FALSE(ring->Hears(0, 2, 0));
  CHECK(pairs->Hears(0, 1, 3));
  CHECK_FALSE(pairs->Hears(1, 2, 3));
  CHECK(pairs->Hears(2, 4, 0));  // the odd last seat joins the pair before it
  // Rotating pairs: each round a pairing (symmetric, at most one partner), not the same every round.
  std::set<std::vector<int>> pairings;
  for (int r = 0; r < 5; ++r) {
    std::vector<int> partner(5, -1);
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 5; ++j) {
        if (i != j && rotating->Hears(i, j, r)) {
          CHECK(partner[i] == -1);
          partner[i] = j;
          CHECK(rotating->Hears(j, i, r));
        }
      }
    }
    CHECK(std::count(partner.begin(), partner.end(), -1) == 1);  // an odd team: one seat a round hears nobody
    pairings.insert(partner);
  }
  CHECK(pairings.size() == 5);
  CHECK_THROWS_WITH(game("star"), Catch::Contains("topology 'star'"));
}

TEST_CASE("a teacher heard by everyone turns a team further than one heard by a single partner",
          "[red_black][topology][personas]") {
  auto cooperation = [](const std::string& topology) {
    const auto g = MakeGame("red_black", {{"team_size", int64_t{5}}, {"topology", topology}});
    return MeanCooperation(*g, {"teacher", "conformist", "conformist", "conformist", "conformist"}, "always_defect", 60);
  };
  const double broadcast = cooperation("broadcast"), pairs = cooperation("pairs");
  CHECK(broadcast > 0.8);
  CHECK(pairs < broadcast - 0.3);
  // What a seat reads is what it hears: under pairs, seat 2 never reads the teacher's words (seat 0).
  const auto g = MakeGame("red_black", {{"team_size", int64_t{5}}, {"topology", "pairs"}});
  std::vector<std::pair<Decision, std::vector<std::string>>> acts;
  Play(*g, {"teacher", "conformist", "conformist", "conformist", "conformist"}, "always_defect", 5, &acts);
  int votes_seen = 0;
  for (const auto& [d, words] : acts) {
    if (d.seat != 2 || d.phase != "vote") continue;
    ++votes_seen;
    CHECK(d.text.find("Teammates said") != std::string::npos);
    CHECK(d.text.find("together") == std::string::npos);  // the teacher's reasons end so; its partner's echo has none
  }
  CHECK(votes_seen > 0);
}
