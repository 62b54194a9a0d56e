// The conformance suite every registered game passes: load with defaults,
// random playouts terminate, clones are independent, serialisation round-trips,
// observations use only the game's vocabulary, signals are defined.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>

#include "core/game.h"
#include "core/pipeline_task.h"

using namespace troupe;

namespace {

// Random words from the game's vocabulary (often unparseable, on purpose).
std::vector<SeatOutput> RandomOutputs(const State& s, const std::vector<std::string>& vocab, Rng& rng) {
  std::vector<SeatOutput> out;
  for (const auto& d : s.PendingDecisions()) {
    SeatOutput o{d.seat, {}};
    const int n = 1 + rng.Below(d.max_words);
    for (int i = 0; i < n; ++i) o.words.push_back(vocab[rng.Below(static_cast<int>(vocab.size()))]);
    out.push_back(o);
  }
  return out;
}

}  // namespace

TEST_CASE("every registered game passes the conformance suite", "[conformance]") {
  const auto names = GameFactory::Get().Names();
  REQUIRE_FALSE(names.empty());
  // Every game with its defaults, and the variants that change who decides.
  std::vector<std::pair<std::string, std::map<std::string, ParamValue>>> variants;
  for (const auto& name : names) variants.push_back({name, {}});
  variants.push_back({"sugarscape",
                      {{"preset", std::string("seed_study")}, {"size", int64_t{20}}, {"population", int64_t{40}},
                       {"steps", int64_t{6}}, {"trade_mode", std::string("negotiate")}, {"fraud", true}}});
  for (const auto& [name, params] : variants) {
    INFO("game " << name << " with " << params.size() << " parameters set");
    auto game = MakeGame(name, params);
    const auto vocab = game->Vocabulary();
    const std::set<std::string> words(vocab.begin(), vocab.end());
    Rng rng(5);
    for (int episode = 0; episode < 20; ++episode) {
      auto s = game->NewInitialState(static_cast<uint64_t>(episode));
      int steps = 0;
      std::unique_ptr<State> midway;
      while (!s->IsTerminal()) {
        auto pending = s->PendingDecisions();
        if (pending.empty()) {  // a simulation step: the game's own rules run
          REQUIRE(s->Advance());
          if (++steps == 7) midway = s->Clone();
          continue;
        }
        for (const auto& d : pending) {
          REQUIRE(d.max_words >= 1);
          for (const auto& w : d.observation) REQUIRE(words.count(w) == 1);
        }
        s->Apply(RandomOutputs(*s, vocab, rng));
        if (++steps == 7) midway = s->Clone();
        REQUIRE(steps < 100000);
      }
      CHECK(s->PendingDecisions().empty());
      // Serialisation round trip reproduces the state exactly.
      auto copy = game->Deserialize(s->Serialize());
      CHECK(copy->ToString() == s->ToString());
      CHECK(copy->Metrics() == s->Metrics());
      // A clone taken midway is independent of the original's later moves.
      if (midway) {
        CHECK_FALSE(midway->IsTerminal());
        CHECK(midway->ToString() != s->ToString());
      }
      for (const auto& signal : game->SignalNames()) CHECK_NOTHROW(s->Signal(signal, 0));
      for (const auto& signal : game->TurnSignalNames()) CHECK_NOTHROW(s->TurnSignal(signal, 0, 0));
    }
  }
}

TEST_CASE("every shipped game, strategy, task and tool is registered", "[registry]") {
  for (const char* g : {"red_black", "split_facts", "sugarscape"}) CHECK(GameFactory::Get().Has(g));
  for (const char* s : {"oracle", "silent"}) CHECK(StrategyFactory::Get().Has(s));
  for (const char* s : {"always_cooperate", "mostly_cooperate", "always_defect", "defect_critical", "tit_for_tat",
                        "early_exploiter", "mid_exploiter", "late_betrayer", "alternating", "forgiver"}) {
    INFO("strategy " << s);
    CHECK(StrategyFactory::Get().Has(s));
  }
  CHECK(PipelineTaskFactory::Get().Has("reverse_digits"));
  CHECK(PipelineToolFactory::Get().Has("reverse_checker"));
}
