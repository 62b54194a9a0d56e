// Red-Black rules as the spec states them: payoffs, multipliers, deliberation
// order, votes, visibility, strategies and the best-response search.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <set>

#include "core/game.h"
#include "games/red_black/red_black.h"
#include "games/red_black/red_black_state.h"

using namespace troupe;
using namespace troupe::red_black;

namespace {

std::unique_ptr<Game> Make(std::map<std::string, ParamValue> p = {}) { return MakeGame("red_black", p); }

// Answers every pending decision with the same words per phase.
std::vector<SeatOutput> Answer(const State& s, const std::string& will, const std::string& speak,
                               const std::string& vote_a, const std::string& vote_b, int team_size = 5) {
  std::vector<SeatOutput> out;
  for (const auto& d : s.PendingDecisions()) {
    SeatOutput o{d.seat, {}};
    if (d.phase == "will") o.words = {will};
    else if (d.phase == "speak") o.words = {speak, "we", "trust"};
    else o.words = {d.seat < team_size ? vote_a : vote_b};
    out.push_back(o);
  }
  return out;
}

void PlayRound(State& s, const std::string& vote_a, const std::string& vote_b) {
  const int turn = s.Turn();
  while (!s.IsTerminal() && s.Turn() == turn) s.Apply(Answer(s, "1", "black", vote_a, vote_b));
}

}  // namespace

TEST_CASE("payoff table matches the spec", "[red_black]") {
  CHECK(BasePayoff(Choice::kBlack, Choice::kBlack) == 3);
  CHECK(BasePayoff(Choice::kRed, Choice::kRed) == -3);
  CHECK(BasePayoff(Choice::kRed, Choice::kBlack) == 6);
  CHECK(BasePayoff(Choice::kBlack, Choice::kRed) == -6);
}

TEST_CASE("rounds 5, 8 and 10 are multiplied by 3, 5 and 10", "[red_black]") {
  auto game = Make();
  auto* rb = dynamic_cast<RedBlackGame*>(game.get());
  REQUIRE(rb != nullptr);
  std::vector<int> m;
  for (int r = 0; r < 10; ++r) m.push_back(rb->Multiplier(r));
  CHECK(m == std::vector<int>{1, 1, 1, 1, 3, 1, 1, 5, 1, 10});
  CHECK(rb->BestCombined() == 150);
}

TEST_CASE("all-black game reaches the best combined score and efficiency 1", "[red_black]") {
  auto game = Make();
  auto s = game->NewInitialState(1);
  while (!s->IsTerminal()) PlayRound(*s, "black", "black");
  auto m = s->Metrics();
  CHECK(m["team_a_score"] == 75);
  CHECK(m["combined_score"] == 150);
  CHECK(m["efficiency"] == Approx(1.0));
  CHECK(m["game_cooperation"] == Approx(1.0));
  CHECK(m["invalid_outputs"] == 0);
}

TEST_CASE("defecting against cooperation pays 6 times the multiplier", "[red_black]") {
  auto game = Make();
  auto s = game->NewInitialState(1);
  for (int r = 0; r < 4; ++r) PlayRound(*s, "black", "black");
  PlayRound(*s, "red", "black");  // round 5, x3
  CHECK(s->Signal("team_score", 0) == 4 * 3 + 18);
  CHECK(s->Signal("team_score", 5) == 4 * 3 - 18);
  CHECK(s->TurnSignal("round_payoff", 0, 4) == 18);
}

TEST_CASE("the most willing agent speaks first and ties are broken by the seed", "[red_black]") {
  auto game = Make();
  auto s = game->NewInitialState(3);
  auto pending = s->PendingDecisions();
  REQUIRE(pending.size() == 10);
  std::vector<SeatOutput> out;
  for (const auto& d : pending) out.push_back({d.seat, {d.seat == 3 ? "3" : d.seat == 7 ? "2" : "0"}});
  s->Apply(out);
  auto speakers = s->PendingDecisions();
  REQUIRE(speakers.size() == 2);
  CHECK(speakers[0].phase == "speak");
  CHECK(speakers[0].seat == 3);
  CHECK(speakers[1].seat == 7);

  // All tied: the choice depends on the seed only.
  auto order_for = [&](uint64_t seed) {
    auto t = game->NewInitialState(seed);
    std::vector<SeatOutput> o;
    for (const auto& d : t->PendingDecisions()) o.push_back({d.seat, {"1"}});
    t->Apply(o);
    return t->PendingDecisions()[0].seat;
  };
  CHECK(order_for(11) == order_for(11));
  std::set<int> firsts;
  for (uint64_t seed = 0; seed < 30; ++seed) firsts.insert(order_for(seed));
  CHECK(firsts.size() > 1);
}

TEST_CASE("vote majority decides the team choice", "[red_black]") {
  auto game = Make();
  auto s = game->NewInitialState(1);
  while (s->PendingDecisions().front().phase != "vote") s->Apply(Answer(*s, "1", "black", "", ""));
  std::vector<SeatOutput> votes;
  for (const auto& d : s->PendingDecisions()) {
    const bool red = (d.seat < 5 && d.seat < 3) || (d.seat >= 5 && d.seat < 7);  // A: 3 red; B: 2 red
    votes.push_back({d.seat, {red ? "red" : "black"}});
  }
  s->Apply(votes);
  auto* rb = dynamic_cast<RedBlackState*>(s.get());
  REQUIRE(rb->history().size() == 1);
  CHECK(rb->history()[0].choice[0] == Choice::kRed);
  CHECK(rb->history()[0].choice[1] == Choice::kBlack);
}

TEST_CASE("an unparseable vote counts as the configured default and is counted", "[red_black]") {
  auto game = Make({{"invalid_choice", std::string("red")}});
  auto s = game->NewInitialState(1);
  while (s->PendingDecisions().front().phase != "vote") s->Apply(Answer(*s, "x", "maybe", "", ""));
  std::vector<SeatOutput> votes;
  for (const auto& d : s->PendingDecisions()) votes.push_back({d.seat, {"purple"}});
  auto valid = s->Apply(votes);
  CHECK(std::count(valid.begin(), valid.end(), false) == 10);
  auto* rb = dynamic_cast<RedBlackState*>(s.get());
  CHECK(rb->history()[0].choice[0] == Choice::kRed);
  auto m = s->Metrics();
  CHECK(m["invalid_vote"] == 10);
  CHECK(m["invalid_will"] > 0);
  CHECK(m["invalid_speak"] == 10);
}

TEST_CASE("agents never see the other team's deliberation", "[red_black]") {
  auto game = Make();
  auto s = game->NewInitialState(1);
  // First speakers: A recommends black, B recommends red.
  std::vector<SeatOutput> will;
  for (const auto& d : s->PendingDecisions()) will.push_back({d.seat, {"1"}});
  s->Apply(will);
  std::vector<SeatOutput> speak;
  for (const auto& d : s->PendingDecisions()) {
    speak.push_back(
        {d.seat, d.seat < 5 ? std::vector<std::string>{"black", "trust"} : std::vector<std::string>{"red", "betray"}});
  }
  s->Apply(speak);
  for (const auto& d : s->PendingDecisions()) {
    const auto& o = d.observation;
    const auto now = std::find(o.begin(), o.end(), "now");
    REQUIRE(now != o.end());
    const std::vector<std::string> said(now + 1, o.end());
    if (d.seat < 5) {
      CHECK(std::find(said.begin(), said.end(), "betray") == said.end());
      CHECK(std::find(said.begin(), said.end(), "trust") != said.end());
    } else {
      CHECK(std::find(said.begin(), said.end(), "trust") == said.end());
      CHECK(std::find(said.begin(), said.end(), "betray") != said.end());
    }
  }
}

TEST_CASE("observations show round, rounds left, multiplier, scores and both teams' history", "[red_black]") {
  auto game = Make();
  auto s = game->NewInitialState(1);
  for (int r = 0; r < 4; ++r) PlayRound(*s, r == 1 ? "red" : "black", "black");
  const auto d = s->PendingDecisions().front();
  const std::vector<std::string> tail(d.observation.end() - 9, d.observation.end());
  CHECK(tail == std::vector<std::string>{"round", "#5", "of", "#10", "left", "#5", "x", "#3", "will"});
  // Scores: A 3 + 6 + 3 + 3 = 15, B 3 - 6 + 3 + 3 = 3.
  const auto us = std::find(d.observation.begin(), d.observation.end(), "us");
  REQUIRE(us != d.observation.end());
  CHECK(std::vector<std::string>(us, us + 5) == std::vector<std::string>{"us", "1", "5", "them", "3"});
  // Round 2 from team A's side: A red, B black, A +6, B -6 (both teams' points, as the spec says).
  REQUIRE(d.observation.front() == "history");
  CHECK(std::vector<std::string>(d.observation.begin() + 5, d.observation.begin() + 9) ==
        std::vector<std::string>{"red", "black", "+6", "-6"});
  // Team B sees the same round from its side.
  const auto b = s->PendingDecisions().back();
  REQUIRE(b.seat >= 5);
  CHECK(std::vector<std::string>(b.observation.begin() + 5, b.observation.begin() + 9) ==
        std::vector<std::string>{"black", "red", "-6", "+6"});
}

TEST_CASE("scripted strategies choose as the spec says", "[red_black][strategies]") {
  auto choices = [](const std::string& name, const std::vector<Choice>& other) {
    auto s = StrategyFactory::Get().Create(name);
    auto* rb = dynamic_cast<RedBlackStrategy*>(s.get());
    Rng rng(0);
    std::string out;
    RoundView v;
    v.rounds = 10;
    const std::vector<int> mult = {1, 1, 1, 1, 3, 1, 1, 5, 1, 10};
    for (int r = 0; r < 10; ++r) {
      v.round = r;
      v.multiplier = mult[r];
      const Choice c = rb->Choose(v, rng);
      out += c == Choice::kBlack ? 'B' : 'R';
      v.own.push_back(c);
      v.other.push_back(other[r]);
    }
    return out;
  };
  const std::vector<Choice> B(10, Choice::kBlack);
  std::vector<Choice> alt;
  for (int r = 0; r < 10; ++r) alt.push_back(r == 2 || r == 5 || r == 6 ? Choice::kRed : Choice::kBlack);
  CHECK(choices("always_cooperate", B) == "BBBBBBBBBB");
  CHECK(choices("mostly_cooperate", B) == "BBBBBBBBBR");
  CHECK(choices("always_defect", B) == "RRRRRRRRRR");
  CHECK(choices("defect_critical", B) == "BBBBRBBRBR");
  CHECK(choices("tit_for_tat", alt) == "BBBRBBRRBB");
  CHECK(choices("early_exploiter", B) == "BRRRBBBBBB");
  CHECK(choices("mid_exploiter", B) == "BBBBRRBBBB");
  CHECK(choices("late_betrayer", B) == "BBBBBBRRRR");
  CHECK(choices("alternating", B) == "BRBRBRBRBR");
  CHECK(choices("forgiver", alt) == "BBBBBBBRBB");
}

TEST_CASE("best response against tit_for_tat is found by search", "[red_black]") {
  auto game = Make();
  std::map<int, std::string> tft, defect;
  for (int s = 5; s < 10; ++s) {
    tft[s] = "tit_for_tat";
    defect[s] = "always_defect";
  }
  // Cooperate, defect in round 8 (x5), take the punishment, defect again in round 10.
  CHECK(game->BestAchievable("team_score", 0, tft).value() == 111);
  CHECK(game->BestAchievable("team_score", 0, defect).value() == -75);
  CHECK(game->BestAchievable("combined_score", 0, defect).value() == 0);
  CHECK_FALSE(game->BestAchievable("team_score", 0, {}).has_value());
}

TEST_CASE("bad parameters are rejected with the parameter's name", "[red_black]") {
  CHECK_THROWS_WITH(Make({{"team_size", int64_t{0}}}), Catch::Contains("team_size"));
  CHECK_THROWS_WITH(Make({{"rounds", std::string("ten")}}), Catch::Contains("takes a int"));
  CHECK_THROWS_WITH(Make({{"multipliers", std::string("12:3")}}), Catch::Contains("outside 1..10"));
  CHECK_THROWS_WITH(Make({{"invalid_choice", std::string("blue")}}), Catch::Contains("invalid_choice"));
  CHECK_THROWS_WITH(MakeGame("chess", {}), Catch::Contains("unknown game 'chess'"));
}

TEST_CASE("a vote is inert exactly when flipping it would not change the team's choice", "[red_black]") {
  auto game = Make();
  auto s = game->NewInitialState(1);
  while (s->PendingDecisions().front().phase != "vote") s->Apply(Answer(*s, "1", "black", "", ""));
  std::vector<SeatOutput> votes;
  for (const auto& d : s->PendingDecisions()) {
    // Team A splits 3 red : 2 black; team B votes 4 black : 1 red.
    const bool red = d.seat < 5 ? d.seat < 3 : d.seat == 9;
    votes.push_back({d.seat, {red ? "red" : "black"}});
  }
  s->Apply(votes);
  for (int seat : {0, 1, 2}) CHECK_FALSE(s->Inert(seat));       // a majority voter of 3-2 is pivotal
  for (int seat : {3, 4}) CHECK(s->Inert(seat));                // a minority vote changes nothing
  for (int seat = 5; seat < 10; ++seat) CHECK(s->Inert(seat));  // 4-1: nobody is pivotal
}

TEST_CASE("a latent message reaches teammates as a typed reference instead of its words and survives serialisation",
          "[red_black]") {
  auto g = Make();
  auto s = g->NewInitialState(4);
  bool spoke = false;
  while (!spoke) {
    std::vector<SeatOutput> out = Answer(*s, "1", "red", "black", "black");
    for (size_t k = 0; k < out.size(); ++k) {
      const Decision d = s->PendingDecisions()[k];
      CHECK(d.message == (d.phase == "speak"));
      if (d.phase == "speak" && d.seat < 5) {
        out[k].latent_message = 3;
        spoke = true;
      }
    }
    s->Apply(out);
  }
  auto seen = [](const State& st) {
    for (const auto& d : st.PendingDecisions()) {
      if (d.seat < 5) return d;
    }
    return Decision{};
  };
  const Decision view = seen(*s);
  auto says = std::find(view.observation.begin(), view.observation.end(), "says");
  REQUIRE(says != view.observation.end());
  // The message's words are not in the view; a reference to handle 3 stands right after "says".
  CHECK(std::find(view.observation.begin(), view.observation.end(), "trust") == view.observation.end());
  REQUIRE(view.latent_messages.size() == 1);
  CHECK(view.latent_messages[0].handle == 3);
  CHECK(view.latent_messages[0].position == static_cast<size_t>(says - view.observation.begin()) + 1);
  // Team B sees no reference to team A's message.
  for (const auto& d : s->PendingDecisions()) {
    if (d.seat >= 5) CHECK(d.latent_messages.empty());
  }
  // The game keeps what the speaker said, and the handle.
  CHECK(s->Serialize().find("red we trust = 3") != std::string::npos);
  auto copy = g->Deserialize(s->Serialize());
  CHECK(seen(*copy).observation == view.observation);
  CHECK(seen(*copy).latent_messages == view.latent_messages);
  CHECK(g->MessagePhases() == std::vector<std::string>{"speak"});
}

TEST_CASE("the silent control hides every message from every seat", "[red_black]") {
  auto g = Make({{"silent", ParamValue{true}}});
  auto s = g->NewInitialState(4);
  bool spoke = false;
  for (int step = 0; step < 40 && !s->IsTerminal(); ++step) {
    for (const auto& d : s->PendingDecisions()) {
      CHECK(std::find(d.observation.begin(), d.observation.end(), "says") == d.observation.end());
      spoke = spoke || d.phase == "vote";
    }
    s->Apply(Answer(*s, "1", "red", "black", "black"));
  }
  CHECK(spoke);  // votes came after speeches, and saw none of them
}

TEST_CASE("no decision of a played game is longer than the game's longest decision of its phase",
          "[red_black][max_len]") {
  // Team A always red against team B always black, then the reverse: scores of three digits with a sign.
  for (int discussion : {0, 1}) {
    auto game =
        Make({{"team_size", int64_t{4}}, {"discussion_rounds", int64_t{discussion}}, {"reason_words", int64_t{2}}});
    std::map<std::string, size_t> longest;
    for (const auto& d : game->LongestDecisions(0)) longest[d.phase] = d.observation.size();
    REQUIRE(longest.size() == 3);
    std::map<std::string, size_t> seen;
    for (const char* a : {"red", "black"}) {
      auto s = game->NewInitialState(11);
      while (!s->IsTerminal()) {
        for (const auto& d : s->PendingDecisions()) {
          INFO(d.phase << " in round " << s->Turn() + 1);
          CHECK(d.observation.size() <= longest.at(d.phase));
          seen[d.phase] = std::max(seen[d.phase], d.observation.size());
        }
        s->Apply(Answer(*s, "1", "black", a, std::string(a) == "red" ? "black" : "red", 4));
      }
    }
    // Played games reach the worst case but for the digits of the scores (at most a sign and 3 digits each).
    for (const auto& [phase, n] : longest) {
      INFO(phase << " discussion " << discussion);
      CHECK(seen[phase] + 8 >= n);
    }
  }
  // A latent message in a reader's view (<bot> K vectors <eot> and a word) is longer than a text one.
  auto game = Make();
  CHECK(game->LongestDecisions(8).back().observation.size() > game->LongestDecisions(0).back().observation.size());
}

TEST_CASE("Red-Black names its headline metrics and the metric of each signal from a seat's side", "[red_black]") {
  auto game = Make();
  CHECK(game->HeadlineMetrics(0) ==
        std::vector<std::string>{"team_a_score", "team_a_cooperation", "combined_score", "efficiency"});
  CHECK(game->HeadlineMetrics(7) ==
        std::vector<std::string>{"team_b_score", "team_b_cooperation", "combined_score", "efficiency"});
  CHECK(game->MetricOfSignal("team_score", 0) == "team_a_score");
  CHECK(game->MetricOfSignal("round_payoff", 9) == "team_b_score");
  CHECK(game->MetricOfSignal("opponent_score", 0) == "team_b_score");
  CHECK(game->MetricOfSignal("combined_score", 3) == "combined_score");
  CHECK(game->MetricOfSignal("nonsense", 3).empty());
  // Every headline metric is one the game reports.
  auto s = game->NewInitialState(1);
  while (!s->IsTerminal()) s->Apply(Answer(*s, "1", "black", "black", "red"));
  for (const auto& h : game->HeadlineMetrics(0)) CHECK(s->Metrics().count(h) == 1);
}

TEST_CASE("the text view states the rules, each past round, the scores, teammates' messages and the question",
          "[red_black][text]") {
  auto game = Make({{"team_size", int64_t{2}}, {"rounds", int64_t{3}}, {"multipliers", std::string("3:3")}});
  REQUIRE(game->RendersText());
  auto s = game->NewInitialState(1);
  const std::string first = s->PendingDecisions().front().text;
  CHECK(first.find("Both black: +3 each. Both red: -3 each.") != std::string::npos);
  CHECK(first.find("You are on team A.") != std::string::npos);
  CHECK(first.find("Now round 1 of 3 (2 left after it), multiplier x1. Score: us 0, them 0.") != std::string::npos);
  CHECK(first.find("Round 1 (") == std::string::npos);  // no history yet
  while (s->Turn() == 0) s->Apply(Answer(*s, "1", "black", "red", "black", 2));  // A defects on a cooperating B
  // Round 2: team A speaks first; then its second speaker reads the message.
  std::vector<Decision> d = s->PendingDecisions();
  REQUIRE(d.front().phase == "will");
  CHECK(d.front().text.rfind("How much do you want to speak next, from 0 to 3?") != std::string::npos);
  CHECK(d.back().text.find("You are on team B.") != std::string::npos);
  CHECK(d.back().text.find("Round 1 (x1): we black, they red; we -6, they +6.") != std::string::npos);
  s->Apply(Answer(*s, "1", "black", "red", "black", 2));  // willingness: the speakers are set
  d = s->PendingDecisions();
  REQUIRE(d.front().phase == "speak");
  CHECK(d.front().text.find("Round 1 (x1): we red, they black; we +6, they -6.") != std::string::npos);
  CHECK(d.front().text.find("Score: us 6, them -6.") != std::string::npos);
  CHECK(d.front().text.find("Teammates said") == std::string::npos);
  CHECK(d.front().text.find("Recommend red or black, then say why in a few words.") != std::string::npos);
  std::vector<SeatOutput> speak;
  for (const auto& x : d) speak.push_back({x.seat, {"black", "we", "trustworthiness-everywhere"}});
  s->Apply(speak);
  d = s->PendingDecisions();
  REQUIRE(d.front().phase == "speak");
  // A word a model said is shown up to ten letters, so the longest prompt is known before a run.
  CHECK(d.front().text.find("Teammates said: \"black, we trustworth\".") != std::string::npos);
}

TEST_CASE("the longest decisions' text views are at least as long as any a game gives", "[red_black][text]") {
  auto game = Make({{"team_size", int64_t{3}}, {"rounds", int64_t{4}}, {"reason_words", int64_t{2}}});
  std::map<std::string, size_t> longest;
  for (const Decision& d : game->LongestDecisions(0)) longest[d.phase] = std::max(longest[d.phase], d.text.size());
  REQUIRE(longest.size() == 3);
  auto s = game->NewInitialState(3);
  while (!s->IsTerminal()) {
    std::vector<SeatOutput> out;
    for (const Decision& d : s->PendingDecisions()) {
      INFO(d.phase << ": " << d.text);
      CHECK(d.text.size() <= longest.at(d.phase));
      if (d.phase == "will") out.push_back({d.seat, {"2"}});
      else out.push_back({d.seat, {"red", "multiplication", "abcdefghijklmnop"}});
    }
    s->Apply(out);
  }
}
