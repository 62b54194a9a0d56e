// Red-Black scenarios change the words agents see, never the game: the
// built-in ones parse, each plays exactly as the plain game does choice for
// choice, the text and word views speak the scenario's words, a list is drawn
// per episode, and a malformed scenario file is refused at its position.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "core/game.h"
#include "games/red_black/red_black.h"
#include "games/red_black/red_black_state.h"
#include "games/red_black/scenario.h"

using namespace troupe;
using namespace troupe::red_black;

namespace {

std::unique_ptr<Game> Make(const std::string& scenario, int team_size = 3) {
  return MakeGame("red_black", {{"scenario", scenario}, {"team_size", int64_t{team_size}}});
}

// Plays a whole game in which team A's seats choose by `a(round)` and team B's by `b(round)`, saying the
// episode's labels for them.
void Play(State& s, const std::function<Choice(int)>& a, const std::function<Choice(int)>& b) {
  const auto& rb = dynamic_cast<const RedBlackState&>(s);
  const int n = rb.game().team_size();
  while (!s.IsTerminal()) {
    std::vector<SeatOutput> out;
    for (const Decision& d : s.PendingDecisions()) {
      const Choice c = d.seat < n ? a(s.Turn()) : b(s.Turn());
      SeatOutput o{d.seat, {}};
      if (d.phase == "will") o.words = {"1"};
      else if (d.phase == "speak") o.words = {rb.scenario().Label(c), "we", "trust"};
      else o.words = {rb.scenario().Label(c)};
      out.push_back(o);
    }
    for (bool valid : s.Apply(out)) REQUIRE(valid);
  }
}

std::string TempFile(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("troupe-scenario-" + name);
  std::ofstream(path) << text;
  return path.string();
}

const char* kGood = R"({
  "name": "orchard",
  "title": "Orchard",
  "story": "Two villages share one orchard. Each autumn both decide at once how to pick.",
  "teams": ["the hill village", "the river village"],
  "options": [
    {"label": "X", "means": "pick ripe fruit only", "cooperative": true},
    {"label": "Y", "means": "strip the trees"}
  ],
  "points": "baskets of apples"
})";

}  // namespace

TEST_CASE("the built-in scenarios are the study's five training and three held-out ones", "[red_black][scenario]") {
  std::map<std::string, std::set<std::string>> by_split;
  for (const Scenario& s : BuiltInScenarios()) by_split[s.split].insert(s.name);
  CHECK(by_split["training"] ==
        std::set<std::string>{"climate", "ai_safety", "pandemic_vaccines", "election_crisis", "standards"});
  CHECK(by_split["held_out"] == std::set<std::string>{"plain", "trade_war", "gpu_contention"});
  CHECK(by_split.size() == 2);
  // The cooperative option's label is not always the first one shown.
  std::set<std::string> cooperative_labels;
  for (const Scenario& s : BuiltInScenarios()) {
    if (!s.plain()) cooperative_labels.insert(s.Label(Choice::kBlack));
  }
  CHECK(cooperative_labels == std::set<std::string>{"A", "B"});
  CHECK(ResolveScenarios("training").size() == 5);
  CHECK(ResolveScenarios("held_out, climate").size() == 4);
  CHECK(ResolveScenarios("").front().name == "plain");
}

TEST_CASE("a scenario changes the words, never the payoffs, the multipliers or the rules", "[red_black][scenario]") {
  // The same choices in every scenario: the same points round by round and the same metrics.
  auto a = [](int round) { return round % 3 == 2 ? Choice::kRed : Choice::kBlack; };
  auto b = [](int round) { return round < 4 ? Choice::kBlack : Choice::kRed; };
  auto plain_game = Make("");
  auto plain = plain_game->NewInitialState(5);
  Play(*plain, a, b);
  const auto& plain_history = dynamic_cast<const RedBlackState&>(*plain).history();
  for (const Scenario& scenario : BuiltInScenarios()) {
    INFO(scenario.name);
    auto game = Make(scenario.name);
    auto s = game->NewInitialState(5);
    REQUIRE(dynamic_cast<const RedBlackState&>(*s).scenario().name == scenario.name);
    Play(*s, a, b);
    CHECK(s->Metrics() == plain->Metrics());
    const auto& history = dynamic_cast<const RedBlackState&>(*s).history();
    REQUIRE(history.size() == plain_history.size());
    for (size_t r = 0; r < history.size(); ++r) {
      CHECK(history[r].points == plain_history[r].points);
      CHECK(history[r].multiplier == plain_history[r].multiplier);
    }
    // Scripted strategies say the scenario's labels and so score as in the plain game.
    for (const char* opponent : {"always_defect", "tit_for_tat"}) {
      auto metrics = [&](const std::string& g) {
        auto game_g = Make(g);
        auto state = game_g->NewInitialState(9);
        auto me = StrategyFactory::Get().Create("always_cooperate");
        auto them = StrategyFactory::Get().Create(opponent);
        Rng rng(1);
        while (!state->IsTerminal()) {
          std::vector<SeatOutput> out;
          for (const Decision& d : state->PendingDecisions()) {
            out.push_back({d.seat, (d.seat < 3 ? me : them)->Act(*state, d, rng)});
          }
          for (bool valid : state->Apply(out)) CHECK(valid);
        }
        return state->Metrics();
      };
      CHECK(metrics(scenario.name) == metrics(""));
    }
  }
}

TEST_CASE("the text view tells the scenario's story and names its options by their labels", "[red_black][scenario]") {
  auto game = Make("climate");
  auto s = game->NewInitialState(1);
  const std::vector<Decision> d = s->PendingDecisions();
  REQUIRE(!d.empty());
  const std::string& text = d.front().text;
  CHECK(text.rfind("Two neighbouring regions share one sky", 0) == 0);
  CHECK_THAT(text, Catch::Contains("Climate accord: two teams of 3, the northern region and the southern region, play "
                                   "10 rounds. Each round both teams choose A (joint emission cuts) or B (cheap fossil "
                                   "output) at once. Both A: +3 each. Both B: -3 each. B against A: B +6, A -6. Points "
                                   "(billions in shared prosperity) are times the round's multiplier. You are on the "
                                   "northern region."));
  // The plain game reads as it always has.
  auto plain_game = Make("");
  auto plain = plain_game->NewInitialState(1);
  CHECK(plain->PendingDecisions().front().text.rfind(
            "Red-Black: two teams of 3 play 10 rounds. Each round both teams choose red or black at once. Both black: "
            "+3 each. Both red: -3 each. Red against black: red +6, black -6. Points are times the round's "
            "multiplier. You are on team A.\n",
            0) == 0);
  // Recommendations and votes are the labels, in the scenario's order; past rounds say them too.
  Play(
      *s, [](int) { return Choice::kBlack; }, [](int) { return Choice::kRed; });
  CHECK(s->Metrics().at("team_a_cooperation") == 1.0);
  auto t = game->NewInitialState(1);
  while (t->PendingDecisions().front().phase != "speak") {
    std::vector<SeatOutput> out;
    for (const Decision& x : t->PendingDecisions()) out.push_back({x.seat, {"1"}});
    t->Apply(out);
  }
  const Decision speak = t->PendingDecisions().front();
  CHECK(speak.options == std::vector<std::string>{"A", "B"});
  CHECK_THAT(speak.text, Catch::EndsWith("Recommend A or B, then say why in a few words."));
  // A label of another scenario, or the plain game's word, is not a choice here.
  std::vector<SeatOutput> out;
  for (const Decision& x : t->PendingDecisions()) out.push_back({x.seat, {"black", "we"}});
  for (bool valid : t->Apply(out)) CHECK_FALSE(valid);
}

TEST_CASE("word models read what the options mean before the history, with those words in the vocabulary",
          "[red_black][scenario]") {
  auto game = Make("ai_safety");
  auto s = game->NewInitialState(2);
  const std::vector<std::string> o = s->PendingDecisions().front().observation;
  const std::vector<std::string> preamble = {"A", "race", "ahead", "B", "a", "shared", "safety", "pause", "history"};
  REQUIRE(o.size() > preamble.size());
  CHECK(std::vector<std::string>(o.begin(), o.begin() + preamble.size()) == preamble);
  const std::vector<std::string> vocab = game->Vocabulary();
  for (const std::string& w : preamble) CHECK(std::count(vocab.begin(), vocab.end(), w) == 1);
  // The plain game's observation starts at its history, as before.
  CHECK(Make("")->NewInitialState(2)->PendingDecisions().front().observation.front() == "history");
  // A game of training scenarios and one of held-out ones read the same words, so a word model trained on
  // the one plays the other; the plain game alone keeps its own.
  CHECK(Make("training")->Vocabulary() == Make("held_out")->Vocabulary());
  CHECK(Make("")->Vocabulary() == Make("plain")->Vocabulary());
  CHECK(Make("")->Vocabulary().size() < Make("training")->Vocabulary().size());
  const std::string own =
      TempFile("own_words.json", R"({"name": "own", "title": "Own", "story": "A story of a few words.",
    "teams": ["one", "two"], "options": [{"label": "P", "means": "zebra crossing", "cooperative": true},
    {"label": "Q", "means": "quagga"}], "points": "stripes"})");
  const std::vector<std::string> with_own = Make(own)->Vocabulary();
  CHECK(std::count(with_own.begin(), with_own.end(), "quagga") == 1);
  CHECK(std::count(with_own.begin(), with_own.end(), "tariffs") == 1);
  // Every scenario a game may draw is in its vocabulary and its longest prompts.
  auto both = Make("training,held_out");
  const std::vector<std::string> all = both->Vocabulary();
  for (const char* w : {"tariffs", "fossil", "recount", "node", "red", "black"}) {
    CHECK(std::find(all.begin(), all.end(), w) != all.end());
  }
  size_t longest_text = 0;
  for (const Decision& d : both->LongestDecisions(0)) longest_text = std::max(longest_text, d.text.size());
  for (const Decision& d : Make("gpu_contention")->LongestDecisions(0)) CHECK(d.text.size() <= longest_text);
}

TEST_CASE("an answer names an option in any case, as a text model's lower-cased words do", "[red_black][scenario]") {
  // The orchard's options are "X" (cooperative) and "Y"; text models' answers come back as "x" and "y".
  const auto game = Make(TempFile("case.json", kGood));
  auto s = game->NewInitialState(3);
  while (!s->IsTerminal()) {
    std::vector<SeatOutput> out;
    for (const Decision& d : s->PendingDecisions()) {
      if (d.phase == "will") out.push_back({d.seat, {"1"}});
      else out.push_back({d.seat, {d.seat < 3 ? "x" : "Y", "we", "trust"}});
    }
    for (bool valid : s->Apply(out)) CHECK(valid);
  }
  const auto m = s->Metrics();
  CHECK(m.at("invalid_outputs") == 0);
  CHECK(m.at("team_a_cooperation") == 1.0);
  CHECK(m.at("team_b_cooperation") == 0.0);
}

TEST_CASE("a list of scenarios is drawn per episode, the same one for the same seed", "[red_black][scenario]") {
  auto game = Make("training");
  std::set<std::string> drawn;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    auto s = game->NewInitialState(seed);
    const std::string name = dynamic_cast<const RedBlackState&>(*s).scenario().name;
    drawn.insert(name);
    CHECK(dynamic_cast<const RedBlackState&>(*game->NewInitialState(seed)).scenario().name == name);
    // A replayed episode is the same episode, scenario included.
    Play(
        *s, [](int r) { return r % 2 ? Choice::kRed : Choice::kBlack; }, [](int) { return Choice::kBlack; });
    auto replayed = game->Deserialize(s->Serialize());
    CHECK(dynamic_cast<const RedBlackState&>(*replayed).scenario().name == name);
    CHECK(replayed->Metrics() == s->Metrics());
  }
  CHECK(drawn.size() == 5);
}

TEST_CASE("a user's scenario file is read, and a malformed one is refused at its position", "[red_black][scenario]") {
  const std::string good = TempFile("orchard.json", kGood);
  auto game = Make(good);
  auto s = game->NewInitialState(3);
  CHECK(dynamic_cast<const RedBlackState&>(*s).scenario().name == "orchard");
  CHECK_THAT(s->PendingDecisions().front().text, Catch::Contains("choose X (pick ripe fruit only) or Y"));

  auto refused = [](const std::string& name, const std::string& text) {
    const std::string path = TempFile(name, text);
    try {
      Make(path);
    } catch (const GameError& e) {
      CHECK(e.param() == "scenario");
      return std::string(e.what());
    }
    FAIL("accepted " + name);
    return std::string();
  };
  std::string bad = kGood;
  const std::string cooperative = ", \"cooperative\": true";
  bad.replace(bad.find(cooperative), cooperative.size(), "");
  CHECK_THAT(refused("no_cooperative.json", bad),
             Catch::Contains("no_cooperative.json:6:3: exactly one option is \"cooperative\": true"));
  bad = kGood;
  bad.replace(bad.find("\"points\""), 8, "\"pionts\"");
  CHECK_THAT(refused("typo.json", bad), Catch::Contains("typo.json:10:3: unknown field 'pionts'"));
  bad = kGood;
  bad.replace(bad.find("\"Y\""), 3, "\"x\"");
  CHECK_THAT(refused("same_labels.json", bad), Catch::Contains("same_labels.json:8:6: the two options' labels differ"));
  bad = kGood;
  bad.replace(bad.find("\"label\": \"X\""), 12, "\"label\": \"X 1\"");
  CHECK_THAT(refused("two_words.json", bad), Catch::Contains("two_words.json:7:6: a label is one word of letters"));
  bad = kGood;
  bad.replace(bad.find("\"Orchard\","), 10, "\"Orchard\"");
  CHECK_THAT(refused("not_json.json", bad), Catch::Contains("not_json.json:4:") && Catch::Contains(": not JSON: "));
  CHECK_THROWS_WITH(Make("atlantis"), Catch::Contains("no scenario 'atlantis' (built in: plain, ai_safety"));
  CHECK_THROWS_WITH(Make("/nonexistent/world.json"), Catch::Contains("cannot read '/nonexistent/world.json'"));
}
