// Snapshot pools (ModelSpec.snapshots, RoleSpec.pool): snapshots are frozen
// copies equal to the model they were taken from, they play seats without
// being trained on, the draws follow the configured sampling, and a resumed
// run finds its pool again; matchups (leagues) play their own roles. (In-process
// against tcp: runtime_test.cc.)
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/base/errors.h"
#include "core/checkpoint.h"
#include "core/models/model_pool.h"
#include "tests/test_paths.h"
#include "tests/test_support.h"
#include "tests/workflows/config_test_support.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/run/snapshot_pools.h"
#include "tests/workflows/text_model_support.h"
#include "tests/workflows/train_support.h"
#include "workflows/run/train_run.h"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

std::string Temp(const std::string& name) { return testing::FreshTempPath("troupe-pools-" + name); }

// Both Red-Black teams learn, each on its own model with a pool of its own snapshots.
std::string TwoTeams(const std::string& extra = "") {
  return R"(name: "pools" seed: 5
game { name: "red_black" param { name: "team_size" int: 3 } param { name: "rounds" int: 3 }
       param { name: "multipliers" text: "3:3" } param { name: "reason_words" int: 1 } }
model { name: "ma" transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 64 } optimizer { lr: 0.01 }
        snapshots { every: 1 keep: 2 } }
model { name: "mb" transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 64 } optimizer { lr: 0.01 }
        snapshots { every: 1 keep: 2 } }
role { name: "a" seats: "a*" model: "ma" pool { share: 0.5 } }
role { name: "b" seats: "b*" model: "mb" pool { share: 0.5 } }
reward { level: TURN signal: "round_payoff" to_go: true weight: 0.1 }
reward { level: ROLE signal: "format" weight: 1 }
credit { group_size: 4 }
trainer { iterations: 4 episodes_per_iteration: 16 minibatch: 64 checkpoint_every: 1 }
)" + extra;
}

CompiledWorkflow Compile(const std::string& text, const std::vector<std::string>& sets = {}) {
  LoadedWorkflow w = ParseWorkflowText(text, "pools.textproto");
  for (const auto& s : sets) ApplyOverride(w, s);
  return CompileWorkflow(w);
}

// `text` with the first `from` replaced by `to` (which must be there).
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

TrainResult Run(const CompiledWorkflow& w, const std::string& dir, bool resume = false) {
  return testing::TrainQuietly(w, dir, resume);
}

std::vector<nlohmann::json> MetricsJson(const std::string& dir) {
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    for (auto it = j.begin(); it != j.end();) it = it.key().rfind("time/", 0) == 0 ? j.erase(it) : std::next(it);
    lines.push_back(j);
  }
  return lines;
}

// A model's parameters as a folder of them holds them.
uint64_t DigestOf(const CompiledWorkflow& w, int model, const std::string& dir) {
  ModelPool pool({w.models.at(model)}, w.seed + 99);
  pool.Load(dir);
  return pool.ParameterDigest(0);
}

// A pool's folders on disk: snapshot folders of `model` at `iterations`, as Rescan finds them.
void FakeSnapshots(const std::string& run, const std::string& model, const std::vector<int>& iterations) {
  for (int it : iterations) {
    char name[32];
    std::snprintf(name, sizeof name, "iter-%06d", it);
    const fs::path dir = fs::path(run) / "snapshots" / model / name / "state";
    fs::create_directories(dir);
    std::ofstream(dir / "iteration") << it;
  }
}

// How often each snapshot label plays in `groups` one-episode groups, and how many groups had one.
std::map<std::string, int> CountDraws(const SnapshotPools& pools, int groups, int* with_snapshot, int* seats_played) {
  RolloutOptions o;
  o.episodes = groups;
  o.group_size = 1;
  o.seed = 11;
  Rng rng(3);
  pools.Draw(&o, rng);
  std::map<std::string, int> count;
  *with_snapshot = 0;
  *seats_played = 0;
  for (const auto& row : o.seat_snapshots) {
    if (row.empty()) continue;
    ++*with_snapshot;
    std::string label;
    for (int p : row) {
      if (p < 0) continue;
      ++*seats_played;
      label = o.snapshots.at(p).label;
    }
    ++count[label];
  }
  return count;
}

}  // namespace

TEST_CASE("a snapshot is the model as it was when taken, stays so while the model trains, and plays untrained",
          "[pools]") {
  const std::string dir = Temp("frozen");
  // Snapshots every 2 iterations; checkpoints every iteration (the newest two kept: 3 and 4).
  const CompiledWorkflow w = Compile(TwoTeams(), {"model[0].snapshots.every=2", "model[1].snapshots.every=2"});
  REQUIRE(Run(w, dir).iterations == 4);
  const std::string snapshot = dir + "/snapshots/ma/iter-000002";
  REQUIRE(fs::exists(snapshot + "/state/iteration"));
  REQUIRE(fs::exists(dir + "/checkpoints/iter-000003"));
  // Taken at the start of iteration 3 (two updates done): the model of checkpoint 2, which the
  // run no longer keeps. Compare with a run of the same seed stopped at 2.
  const std::string two = Temp("frozen-two");
  Run(Compile(TwoTeams(), {"model[0].snapshots.every=2", "model[1].snapshots.every=2", "trainer.iterations=2"}), two);
  const uint64_t at_two = DigestOf(w, 0, two + "/checkpoints/iter-000002");
  CHECK(DigestOf(w, 0, snapshot) == at_two);
  // The model trained on after it; the snapshot did not.
  CHECK(DigestOf(w, 0, dir + "/checkpoints/iter-000004") != at_two);
  // A snapshot is an ordinary checkpoint: a model can start from it (cross-play's players do).
  const CompiledWorkflow from = Compile(TwoTeams(), {"model[0].init_from=" + snapshot, "model[0].init_model=ma"});
  CHECK(ModelPool(from.models, from.seed).ParameterDigest(0) == at_two);
  // The first snapshot is the model the run started from.
  CHECK(DigestOf(w, 0, dir + "/snapshots/ma/iter-000000") == ModelPool(w.models, w.seed).ParameterDigest(0));
  const auto lines = MetricsJson(dir);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0]["pool/size/ma"].get<double>() == 1.0);
  CHECK(lines[1]["pool/size/ma"].get<double>() == 1.0);
  CHECK(lines[2]["pool/size/ma"].get<double>() == 2.0);
  // Two pools at share 0.5 over four groups: snapshots played in some groups, their calls kept out of training.
  double share = 0.0, calls = 0.0;
  for (const auto& line : lines) share += line["pool/episodes_share"].get<double>(), calls += line["pool/snapshot_calls"].get<double>();
  CHECK(share > 0.0);
  CHECK(calls > 0.0);
}

TEST_CASE("the pool's draws follow its sampling: uniform, by recency, and by wins against the current model",
          "[pools]") {
  const std::string run = Temp("draws");
  FakeSnapshots(run, "ma", {2, 4, 6, 8});
  auto pools_with = [&](const std::string& pool) {
    return Compile(Replace(TwoTeams(), "pool { share: 0.5 }", pool), {"model[0].snapshots.keep=4"});
  };
  // Records: model 0's snapshots at 2, 4, 6, 8 won 0 of 8, 4 of 8, 8 of 8, 2 of 8.
  const std::string records = "0 2 0 8\n0 4 4 8\n0 6 8 8\n0 8 2 8\n";
  const int groups = 20000;
  struct Case {
    std::string pool;
    std::vector<double> weights;  // of iter 2, 4, 6, 8
  };
  const std::vector<Case> cases = {
      {"pool { share: 1 sampling: UNIFORM }", {1, 1, 1, 1}},
      {"pool { share: 1 sampling: RECENT recency: 0.5 }", {0.125, 0.25, 0.5, 1}},
      {"pool { share: 1 sampling: PRIORITIZED priority_power: 2 }",
       {std::pow(1 / 10.0, 2), std::pow(5 / 10.0, 2), std::pow(9 / 10.0, 2), std::pow(3 / 10.0, 2)}},
  };
  for (const Case& c : cases) {
    INFO(c.pool);
    const CompiledWorkflow w = pools_with(c.pool);
    SnapshotPools pools(w, run);
    pools.LoadState(records, 100);
    REQUIRE(pools.pool(0).size() == 4);
    int with = 0, seats = 0;
    const auto count = CountDraws(pools, groups, &with, &seats);
    CHECK(with == groups);
    CHECK(seats == 3 * groups);  // seat_share 1: the whole team
    double total = 0;
    for (double x : c.weights) total += x;
    const int iterations[] = {2, 4, 6, 8};
    for (int k = 0; k < 4; ++k) {
      char label[32];
      std::snprintf(label, sizeof label, "ma@iter-%06d", iterations[k]);
      const double p = c.weights[k] / total;
      const double seen = count.count(label) ? count.at(label) / static_cast<double>(groups) : 0.0;
      INFO(label << ": expected " << p << ", drawn " << seen);
      CHECK(std::fabs(seen - p) < 4 * std::sqrt(p * (1 - p) / groups) + 1e-9);  // within four standard errors
    }
  }
  // A share of the groups, and a share of the seats in them.
  const CompiledWorkflow w = pools_with("pool { share: 0.3 seat_share: 0.34 }");
  SnapshotPools pools(w, run);
  pools.LoadState(records, 100);
  int with = 0, seats = 0;
  CountDraws(pools, groups, &with, &seats);
  const double p = 0.3;
  CHECK(std::fabs(with / static_cast<double>(groups) - p) < 4 * std::sqrt(p * (1 - p) / groups));
  CHECK(seats == with);  // 0.34 of 3 seats: one
  // Only snapshots taken by then: loading at iteration 5 forgets (and removes) 6 and 8.
  SnapshotPools earlier(w, run);
  earlier.LoadState(records, 5);
  REQUIRE(earlier.pool(0).size() == 2);
  CHECK(earlier.pool(0).back().iteration == 4);
  CHECK(earlier.pool(0).back().wins == 4.0);
  CHECK_FALSE(fs::exists(run + "/snapshots/ma/iter-000006"));
}

TEST_CASE("a resumed run finds its pool and its records again, and drops snapshots taken after its checkpoint",
          "[pools][resume]") {
  const std::string whole = Temp("whole"), split = Temp("split");
  const std::vector<std::string> sampling = {"role[0].pool.sampling=PRIORITIZED", "role[1].pool.sampling=RECENT"};
  Run(Compile(TwoTeams(), sampling), whole);
  std::vector<std::string> first = sampling;
  first.push_back("trainer.iterations=2");
  Run(Compile(TwoTeams(), first), split);
  // A snapshot a run took after its last checkpoint, before it was killed.
  fs::copy(split + "/snapshots/ma/iter-000001", split + "/snapshots/ma/iter-000003", fs::copy_options::recursive);
  const TrainResult r = Run(Compile(TwoTeams(), sampling), split, true);
  CHECK(r.iterations == 4);
  const auto a = MetricsJson(whole), b = MetricsJson(split);
  REQUIRE(a.size() == 4);
  CHECK(a[3]["pool/size/ma"].get<double>() == 2.0);
  CHECK(a == b);
}

TEST_CASE("pools are refused where they cannot work, at the field that says so", "[pools][config]") {
  CHECK(testing::ErrorOf(TwoTeams()).empty());
  // A scripted team may be played in part by another role's snapshots; scripted or frozen snapshots do not exist.
  const std::string mixed = Replace(TwoTeams(), "role { name: \"b\" seats: \"b*\"",
                                    "role { name: \"c\" seats: \"b1\" seats: \"b2\" scripted: \"tit_for_tat\" "
                                    "pool { from: \"a\" } }\nrole { name: \"b\" seats: \"b0\"");
  CHECK(testing::ErrorOf(mixed).empty());
  CHECK_THAT(testing::ErrorOf(Replace(mixed, "pool { from: \"a\" }", "pool { }")), Catch::Contains("which is scripted"));
  CHECK_THAT(testing::ErrorOf(Replace(TwoTeams(), "snapshots { every: 1 keep: 2 } }\nmodel { name: \"mb\"", "}\nmodel { name: \"mb\"")),
             Catch::Contains("takes none: give that model snapshots { every: N }"));
  CHECK_THAT(testing::ErrorOf(Replace(TwoTeams(), "pool { share: 0.5 }", "pool { share: 1.5 }")),
             Catch::Contains("t.textproto:8:") && Catch::Contains("pool.share is a share of episode groups"));
  CHECK_THAT(testing::ErrorOf(Replace(TwoTeams(), "pool { share: 0.5 }", "pool { signal: \"nonsense\" }")),
             Catch::Contains("'nonsense' is not a trajectory signal of red_black"));
  CHECK_THAT(testing::ErrorOf(Replace(TwoTeams(), "pool { share: 0.5 }", "pool { from: \"c\" }")),
             Catch::Contains("pool.from names 'c', which is no role"));
  CHECK_THAT(testing::ErrorOf(Replace(TwoTeams(), "snapshots { every: 1 keep: 2 }", "snapshots { every: 0 }")),
             Catch::Contains("snapshots.every is the iterations between snapshots"));
}

TEST_CASE("each episode group plays one matchup, drawn by its weight, and only that matchup's roles play",
          "[pools][league]") {
  const std::string file = testing::SourceDir() + "/workflows/shipped/red_black_league.textproto";
  const CompiledWorkflow w = CompileWorkflow(LoadWorkflowFile(file));
  REQUIRE(w.rollout.matchups.size() == 3);
  const std::vector<double> expected = {0.5, 0.25, 0.25};
  std::vector<int> count(3, 0);
  const int groups = 20000;
  for (int g = 0; g < groups; ++g) {
    const uint64_t seed = GroupGameSeed(17, g);
    const int k = w.rollout.MatchupOf(seed);
    REQUIRE(k >= 0);
    ++count[k];
    // Team A is the matchup's first role, team B its second.
    const std::vector<int> roles = w.rollout.SeatRoles(seed);
    const std::string first = w.proto.matchup(k).roles(0), second = w.proto.matchup(k).roles(1);
    for (size_t s = 0; s < roles.size(); ++s) {
      INFO(w.rollout.seat_names[s] << " in " << w.proto.matchup(k).name());
      CHECK(w.rollout.roles[roles[s]].name == (w.rollout.seat_names[s][0] == 'a' ? first : second));
    }
  }
  for (int k = 0; k < 3; ++k) {
    const double p = expected[k], seen = count[k] / static_cast<double>(groups);
    INFO(w.proto.matchup(k).name() << ": " << seen);
    CHECK(std::fabs(seen - p) < 4 * std::sqrt(p * (1 - p) / groups));
  }
}

TEST_CASE("a league trains its three models, each in its own matchups, with their pools", "[pools][league]") {
  const std::string file = testing::SourceDir() + "/workflows/shipped/red_black_league.textproto";
  LoadedWorkflow loaded = LoadWorkflowFile(file);
  for (const char* set : {"game.param[0].int=3", "game.param[1].int=3", "game.param[2].text=3:3", "trainer.iterations=3",
                          "trainer.episodes_per_iteration=32", "credit.group_size=4", "model[0].snapshots.every=1",
                          "model[1].snapshots.every=1", "model[2].snapshots.every=1"}) {
    ApplyOverride(loaded, set);
  }
  const CompiledWorkflow w = CompileWorkflow(loaded);
  const std::string dir = Temp("league");
  REQUIRE(Run(w, dir).iterations == 3);
  const auto lines = MetricsJson(dir);
  REQUIRE(lines.size() == 3);
  double shares = 0.0;
  for (const char* m : {"game/matchup/self_play", "game/matchup/main_vs_exploiter", "game/matchup/league_vs_pool"}) {
    INFO(m);
    REQUIRE(lines[2].contains(m));
    shares += lines[2][m].get<double>();
  }
  CHECK(std::fabs(shares - 1.0) < 1e-9);  // every episode played exactly one matchup
  for (const char* m : {"main", "main_exploiter", "league_exploiter"}) {
    INFO(m);
    CHECK(lines[2]["pool/size/" + std::string(m)].get<double>() == 3.0);
    CHECK(fs::exists(dir + "/snapshots/" + m + "/iter-000002/model-" + m + ".safetensors"));
  }
}

TEST_CASE("matchups that cannot be played are refused at the matchup or role", "[pools][league][config]") {
  const std::string league = testing::ReadFile(testing::SourceDir() + "/workflows/shipped/red_black_league.textproto");
  CHECK(testing::ErrorOf(league).empty());
  CHECK_THAT(testing::ErrorOf(Replace(league, "roles: \"league\" roles: \"past\"", "roles: \"league\" roles: \"main\"")),
             Catch::Contains("seat 'a0' is already played by role 'league' in matchup 'league_vs_pool'"));
  CHECK_THAT(testing::ErrorOf(Replace(league, "roles: \"league\" roles: \"past\"", "roles: \"league\" roles: \"nobody\"")),
             Catch::Contains("matchup 'league_vs_pool' names 'nobody', which is no role"));
  CHECK_THAT(testing::ErrorOf(Replace(league, "roles: \"league\" roles: \"past\"", "roles: \"league\"")),
             Catch::Contains("seat 'b0' is played by no role of matchup 'league_vs_pool'"));
  CHECK_THAT(testing::ErrorOf(Replace(league, "matchup { name: \"main_vs_exploiter\" roles: \"main\" roles: \"exploiter\" weight: 0.25 }", "")),
             Catch::Contains("role 'exploiter' is in no matchup"));
  CHECK_THAT(testing::ErrorOf(Replace(league, "weight: 0.5", "weight: 0")), Catch::Contains("weight must be positive"));
}

TEST_CASE("snapshots play in every sharing mode: one model for both teams, with LoRA adapters or per-role heads",
          "[pools]") {
  for (const char* adapter : {"ADAPTER_NONE", "LORA", "HEAD"}) {
    INFO(adapter);
    // Both teams on model ma (mb serves no role and goes), each team's pool its own role's snapshots.
    std::string text = Replace(TwoTeams(), "model: \"mb\" pool", "model: \"ma\" pool");
    const size_t mb = text.find("model { name: \"mb\"");
    text.erase(mb, text.find("role {") - mb);
    text = Replace(text, "model: \"ma\" pool { share: 0.5 }", std::string("model: \"ma\" adapter: ") + adapter + " pool { share: 0.5 }");
    text = Replace(text, "model: \"ma\" pool { share: 0.5 }", std::string("model: \"ma\" adapter: ") + adapter + " pool { share: 0.5 }");
    const CompiledWorkflow w = Compile(text, {"trainer.iterations=2"});
    REQUIRE(w.models.size() == 1);
    const std::string dir = Temp(std::string("sharing-") + adapter);
    REQUIRE(Run(w, dir).iterations == 2);
    const auto lines = MetricsJson(dir);
    REQUIRE(lines.size() == 2);
    CHECK(lines[1]["pool/snapshot_calls"].get<double>() + lines[0]["pool/snapshot_calls"].get<double>() > 0.0);
  }
}

TEST_CASE("snapshots of language models reading text play their seats like word models' snapshots", "[pools][text]") {
  const std::string text = testing::ReadingText(
      TwoTeams(), "transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 64 }");
  const CompiledWorkflow w = Compile(text, {"trainer.iterations=2", "trainer.episodes_per_iteration=8", "trainer.guided_choices=true"});
  REQUIRE(w.models.size() == 2);
  REQUIRE_FALSE(w.models[0].tokenizer_json.empty());
  const std::string dir = Temp("text");
  REQUIRE(Run(w, dir).iterations == 2);
  const auto lines = MetricsJson(dir);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["pool/snapshot_calls"].get<double>() + lines[1]["pool/snapshot_calls"].get<double>() > 0.0);
  // The snapshot is the text model's checkpoint, tokenizer and all: a model can start from it.
  const std::string snapshot = dir + "/snapshots/ma/iter-000001";
  REQUIRE(fs::exists(snapshot));
  const CompiledWorkflow from = Compile(text, {"model[0].init_from=" + snapshot, "model[0].init_model=ma"});
  CHECK(ModelPool(from.models, from.seed).ParameterDigest(0) == DigestOf(w, 0, snapshot));
}
