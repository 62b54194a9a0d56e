// split_facts: the data generator splits the facts so that each agent is asked
// only what the other knows; the oracle team always succeeds and a silent team
// can only guess.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

#include "games/split_facts/split_facts.h"

using namespace troupe;

namespace {

std::unique_ptr<Game> Make(int values = 6) {
  return MakeGame("split_facts", {{"entities", int64_t{6}}, {"values", int64_t{values}}, {"asks", int64_t{2}}});
}

double Play(const Game& game, const std::string& strategy, int episodes) {
  auto player = StrategyFactory::Get().Create(strategy);
  Rng rng(7);
  double sum = 0;
  for (int e = 0; e < episodes; ++e) {
    auto s = game.NewInitialState(static_cast<uint64_t>(e));
    while (!s->IsTerminal()) {
      std::vector<SeatOutput> out;
      for (const auto& d : s->PendingDecisions()) out.push_back({d.seat, player->Act(*s, d, rng)});
      s->Apply(out);
    }
    sum += s->Metrics().at("accuracy");
  }
  return sum / episodes;
}

}  // namespace

TEST_CASE("split_facts asks each agent only about entities the other agent knows", "[split_facts]") {
  auto game = Make();
  const auto& g = dynamic_cast<const SplitFactsGame&>(*game);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    SplitFactsEpisode ep = g.Generate(seed);
    REQUIRE(ep.known[0].size() == 3);
    REQUIRE(ep.known[1].size() == 3);
    for (int seat = 0; seat < 2; ++seat) {
      REQUIRE(ep.asked[seat].size() == 2);
      for (int e : ep.asked[seat]) {
        CHECK(std::count(ep.known[1 - seat].begin(), ep.known[1 - seat].end(), e) == 1);
        CHECK(std::count(ep.known[seat].begin(), ep.known[seat].end(), e) == 0);
      }
    }
  }
  CHECK(g.Generate(3).value_of == g.Generate(3).value_of);
}

TEST_CASE("split_facts: the oracle team is always right, a silent team only guesses", "[split_facts]") {
  auto game = Make();
  CHECK(Play(*game, "oracle", 200) == 1.0);
  const double silent = Play(*game, "silent", 2000);
  CHECK(silent == Approx(1.0 / 6).margin(0.03));
}

TEST_CASE("split_facts observations show the facts, the question and what was heard", "[split_facts]") {
  auto game = Make();
  auto s = game->NewInitialState(1);
  auto d = s->PendingDecisions();
  REQUIRE(d.size() == 2);
  CHECK(d[0].phase == "message");
  CHECK(d[0].observation.front() == "you");
  CHECK(d[0].observation.back() == "message");
  s->Apply({{0, {"red", "blue"}}, {1, {}}});
  d = s->PendingDecisions();
  CHECK(d[1].phase == "answer");
  const auto& o1 = d[1].observation;
  CHECK(std::find(o1.begin(), o1.end(), "heard") != o1.end());
  CHECK(o1[o1.size() - 3] == "red");
  CHECK(d[0].observation[d[0].observation.size() - 2] == "nothing");
  CHECK(d[1].options.size() == 6);
  CHECK(d[1].max_words == 2);
}

TEST_CASE("split_facts text view: the facts known, who is asked what, the message heard and the question",
          "[split_facts][text]") {
  auto game = MakeGame("split_facts", {{"entities", int64_t{4}}, {"values", int64_t{4}}, {"asks", int64_t{2}}});
  REQUIRE(game->RendersText());
  auto s = game->NewInitialState(9);
  const auto* state = dynamic_cast<const SplitFactsState*>(s.get());
  REQUIRE(state != nullptr);
  const SplitFactsEpisode& ep = state->episode();
  const auto& E = SplitFactsGame::EntityNames();
  const auto& V = SplitFactsGame::ValueNames();
  std::vector<Decision> d = s->PendingDecisions();
  const std::string& a = d[0].text;
  CHECK(a.rfind("You are agent A. You know: " + E[ep.known[0][0]] + " is " + V[ep.value_of[ep.known[0][0]]], 0) == 0);
  CHECK(a.find("You are asked about: " + E[ep.asked[0][0]] + ", " + E[ep.asked[0][1]] + ".") != std::string::npos);
  CHECK(a.find("Agent B is asked about: " + E[ep.asked[1][0]]) != std::string::npos);
  CHECK(a.find("Write agent B a message of at most 2 words.") != std::string::npos);
  s->Apply({{0, {"gold", "teal"}}, {1, {}}});
  d = s->PendingDecisions();
  CHECK(d[1].text.find("Agent A says: gold teal.") != std::string::npos);
  CHECK(d[0].text.find("Agent B sent no words.") != std::string::npos);
  CHECK(d[0].text.find("Answer with the value of " + E[ep.asked[0][0]] + ", then " + E[ep.asked[0][1]] + ".") !=
        std::string::npos);
}
