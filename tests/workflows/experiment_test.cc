// `troupe experiment`: every cell and seed of a grid trained and evaluated on
// the same games, kept when done so a stopped experiment goes on, a table that
// matches a computation by hand from the cells' own games, the same results
// from side-by-side processes, and experiment files that cannot run refused
// at their position.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "tests/test_paths.h"
#include "tests/test_support.h"
#include "workflows/config/config_loader.h"
#include "workflows/run/experiment.h"
#include "workflows/run/crossplay.h"
#include "workflows/run/experiment_results.h"
#include "workflows/report/interval_chart.h"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

fs::path Temp(const std::string& name) {
  const fs::path p = testing::FreshTempPath("troupe-experiment-" + name);
  fs::create_directories(p);
  return p;
}

// A folder with the tiny Red-Black workflow and an experiment over team B's strategy.
fs::path Setup(const std::string& name, const std::string& experiment) {
  const fs::path dir = Temp(name);
  std::ofstream(dir / "tiny.textproto")
      << testing::TinyRedBlack(5, "trainer { iterations: 1 episodes_per_iteration: 8 minibatch: 64 }");
  std::ofstream(dir / "grid.textproto") << experiment;
  return dir;
}

const char kGrid[] = R"(name: "grid"
experiment {
  workflow: "tiny.textproto"
  seeds: 2
  eval_episodes: 6
  metric: "team_a_score"
  axis {
    name: "opponent"
    value { label: "tit_for_tat" }
    value { label: "always_defect" set: "role[1].scripted=always_defect" }
  }
  baseline: "opponent=tit_for_tat"
}
)";

CompiledExperiment Compile(const fs::path& dir) {
  return CompileExperiment(LoadWorkflowFile((dir / "grid.textproto").string()));
}

// Each game's team_a_score of one cell and seed, by episode.
std::map<int, double> Scores(const fs::path& out, const std::string& cell, int seed) {
  std::ifstream in(out / "cells" / cell / ("seed-" + std::to_string(seed)) / "eval.episodes.jsonl");
  std::map<int, double> s;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    s[j.at("episode").get<int>()] = j.at("team_a_score").get<double>();
  }
  return s;
}

// Runs every cell and seed into `out`, without progress lines.
ExperimentResult RunQuietly(const CompiledExperiment& x, const fs::path& out) {
  ExperimentOptions o;
  o.out_dir = out.string();
  o.progress = false;
  std::ostringstream log;
  return RunExperiment(x, o, log);
}

std::string ErrorOf(const std::string& experiment) {
  const fs::path dir = Setup("errors", experiment);
  try {
    Compile(dir);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an experiment trains and evaluates every cell and seed once, and its table is the cells' games",
          "[experiment]") {
  const fs::path dir = Setup("grid", kGrid);
  const CompiledExperiment x = Compile(dir);
  REQUIRE(x.cells.size() == 2);
  CHECK(x.cells[1].name == "opponent=always_defect");
  ExperimentOptions o;
  o.out_dir = (dir / "out").string();
  o.progress = false;
  std::ostringstream log;
  ExperimentResult r = RunExperiment(x, o, log);
  CHECK(r.ran == 4);
  CHECK(r.kept == 0);
  REQUIRE(r.finished);
  const fs::path out = o.out_dir;
  // By hand: the mean of every game of both seeds, and the paired difference game by game.
  const std::string base = x.cells[0].folder, defect = x.cells[1].folder;
  double sum = 0, diff = 0;
  int n = 0;
  for (int k = 0; k < 2; ++k) {
    const auto b = Scores(out, base, k), d = Scores(out, defect, k);
    REQUIRE(b.size() == 6);
    REQUIRE(d.size() == 6);
    for (const auto& [episode, score] : d) sum += score, diff += score - b.at(episode), ++n;
  }
  const std::vector<CellSummary> s = SummarizeExperiment(x, o.out_dir);
  CHECK(s[1].games == 12);
  CHECK(s[1].mean.at("team_a_score") == Approx(sum / n));
  CHECK(s[1].diff.at("team_a_score") == Approx(diff / n));
  CHECK(s[1].interval.at("team_a_score").lo <= s[1].mean.at("team_a_score"));
  CHECK(s[1].interval.at("team_a_score").hi >= s[1].mean.at("team_a_score"));
  CHECK_FALSE(s[0].diff.count("team_a_score"));  // the baseline is not compared with itself
  // The evaluation games are the same in both cells: team B's strategy is what differs, and it shows.
  CHECK(s[1].mean.at("team_a_score") != s[0].mean.at("team_a_score"));
  std::ifstream results(out / "results.jsonl");
  std::string first, second;
  std::getline(results, first);
  std::getline(results, second);
  CHECK(nlohmann::json::parse(second).at("team_a_score").get<double>() == Approx(sum / n));
  CHECK_THAT(r.table, Catch::Contains("| opponent | team_a_score | team_a_score - baseline |") &&
                          Catch::Contains("| tit_for_tat |") && Catch::Contains("baseline"));
  CHECK(fs::exists(out / "plots" / "team_a_score.png"));
  CHECK(fs::exists(out / "plots" / "team_a_score.gp"));
  CHECK(fs::exists(out / "cells" / defect / "seed-1" / "run" / "workflow.resolved.textproto"));
  // Each seed's log.txt shows its training as it goes, a line an iteration, then its evaluation.
  std::ifstream seed_log(out / "cells" / defect / "seed-1" / "log.txt");
  std::stringstream logged;
  logged << seed_log.rdbuf();
  CHECK_THAT(logged.str(), Catch::Contains("[it 1/") && Catch::Contains("evaluating on 6 games") &&
                               Catch::EndsWith("evaluated\n"));

  // Run again: nothing to do. Remove one seed's evaluation: that one alone runs, and the table is the same.
  r = RunExperiment(x, o, log);
  CHECK(r.ran == 0);
  CHECK(r.kept == 4);
  fs::remove(out / "cells" / defect / "seed-1" / "eval.json");
  r = RunExperiment(x, o, log);
  CHECK(r.ran == 1);
  CHECK(r.kept == 3);
  CHECK(SummarizeExperiment(x, o.out_dir)[1].mean.at("team_a_score") == Approx(sum / n));
}

TEST_CASE("troupe experiment --jobs 2 runs cells in processes of their own, to the same results", "[experiment][cli]") {
  const fs::path dir = Setup("jobs", kGrid);
  const fs::path one = dir / "one", two = dir / "two";
  const auto a = testing::RunCommand(testing::TroupeBinary() + " experiment " + (dir / "grid.textproto").string() +
                                     " --out " + one.string() + " --quiet");
  INFO(a.output);
  REQUIRE(a.status == 0);
  const auto b = testing::RunCommand(testing::TroupeBinary() + " experiment " + (dir / "grid.textproto").string() +
                                     " --out " + two.string() + " --jobs 2");
  INFO(b.output);
  REQUIRE(b.status == 0);
  CHECK_THAT(b.output, Catch::Contains("[4/4]") && Catch::Contains("| opponent |"));
  CHECK(testing::ReadFile((one / "results.jsonl").string()) == testing::ReadFile((two / "results.jsonl").string()));
}

TEST_CASE("an override's {seed} names each training seed's own setting, and a metric some cells lack shows none",
          "[experiment]") {
  // Scripted teams only (nothing trains): seed k plays games of 1k rounds (10, 11); the teacher's draw is 0 in
  // one cell, so its role's persuadability is missing there.
  const fs::path dir = Temp("seed-mark");
  std::ofstream(dir / "scripted.textproto") << R"(name: "scripted" seed: 3
game { name: "red_black" param { name: "team_size" int: 3 } param { name: "rounds" int: 4 } }
role { name: "teacher" seats: "a*" draw: 1 scripted: "teacher" }
role { name: "pop" seats: "a*" scripted: "conformist" }
role { name: "b" seats: "b*" scripted: "always_defect" }
)";
  std::ofstream(dir / "grid.textproto") << R"(name: "seed_mark"
experiment {
  workflow: "scripted.textproto"
  train: false
  seeds: 2
  eval_episodes: 4
  persuasion: true
  set: "game.param[1].int=1{seed}"
  metric: "decisions"
  metric: "persuadability/pop"
  axis { name: "teachers" value { label: "0" set: "role[0].draw=0" } value { label: "1" } }
}
)";
  const CompiledExperiment x = Compile(dir);
  const ExperimentResult r = RunQuietly(x, dir / "out");
  REQUIRE(r.finished);
  // Seed 1's games have a round more than seed 0's: more decisions in every game.
  auto decisions = [&](int seed) {
    std::ifstream in(dir / "out/cells/teachers-1" / ("seed-" + std::to_string(seed)) / "eval.json");
    return nlohmann::json::parse(in).at("decisions").get<double>();
  };
  CHECK(decisions(1) > decisions(0));
  // Conformists among themselves echo each other: no case, so no persuadability without the teacher.
  CHECK_THAT(r.table, Catch::Contains("| 0 |") && Catch::Contains("| none |"));
  std::ifstream results(dir / "out/results.jsonl");
  std::string line;
  int with = 0;
  while (std::getline(results, line)) with += nlohmann::json::parse(line).contains("persuadability/pop");
  CHECK(with == 1);
}

TEST_CASE("experiment files that cannot run are refused at their position", "[experiment][config]") {
  std::string text = kGrid;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  CHECK_THAT(ErrorOf(with("tiny.textproto", "missing.textproto")),
             Catch::Contains("grid.textproto:3:") && Catch::Contains("no workflow file"));
  CHECK_THAT(ErrorOf(with("role[1].scripted=always_defect", "role[1].scripted=no_such_strategy")),
             Catch::Contains("grid.textproto:10:") && Catch::Contains("cell opponent=always_defect") &&
                 Catch::Contains("no_such_strategy"));
  CHECK_THAT(ErrorOf(with("opponent=tit_for_tat", "opponent=nobody")),
             Catch::Contains("'opponent=nobody' is no axis=label") && Catch::Contains("opponent: tit_for_tat always_defect"));
  CHECK_THAT(ErrorOf(with("baseline:", "plot_x: \"nothing\"\n  baseline:")), Catch::Contains("plot_x 'nothing' is no axis"));
  CHECK_THAT(ErrorOf(with("name: \"grid\"", "name: \"grid\" seed: 3")),
             Catch::Contains("grid.textproto:1:") && Catch::Contains("not seed"));
  CHECK_THAT(ErrorOf(with("value { label: \"tit_for_tat\" }", "value { label: \"always_defect\" }")),
             Catch::Contains("each value needs a label of its own"));
}

TEST_CASE("Elo ratings order players by their wins and stay finite for one who wins everything", "[experiment][crossplay]") {
  // 0 beats 1 in 8 of 10 and 2 in 10 of 10; 1 beats 2 in 6 of 10.
  const std::vector<double> elo = EloRatings(3, {{0, 1, 8, 10}, {0, 2, 10, 10}, {1, 2, 6, 10}});
  REQUIRE(elo.size() == 3);
  CHECK(elo[0] > elo[1]);
  CHECK(elo[1] > elo[2]);
  CHECK(std::isfinite(elo[0]));
  CHECK(std::fabs((elo[0] + elo[1] + elo[2]) / 3 - 1500) < 1e-6);
  // Equal records, equal ratings.
  const std::vector<double> even = EloRatings(2, {{0, 1, 5, 10}});
  CHECK(std::fabs(even[0] - even[1]) < 1e-6);
}

TEST_CASE("a cross-play experiment writes the payoff matrix, who won, ratings and a heatmap", "[experiment][crossplay]") {
  const fs::path dir = Setup("crossplay", R"(name: "crossplay"
experiment {
  workflow: "tiny.textproto"
  train: false
  eval_episodes: 6
  metric: "team_a_score"
  axis {
    name: "team_a"
    value { label: "always_cooperate" set: "role[0].scripted=always_cooperate" set: "role[0].model=" }
    value { label: "always_defect" set: "role[0].scripted=always_defect" set: "role[0].model=" }
  }
  axis {
    name: "team_b"
    value { label: "always_cooperate" set: "role[1].scripted=always_cooperate" }
    value { label: "always_defect" set: "role[1].scripted=always_defect" }
  }
  crossplay { row_metric: "team_a_score" column_metric: "team_b_score" }
}
)");
  // Both teams scripted: the tiny workflow's model then serves no role, so it goes.
  std::string tiny = testing::ReadFile((dir / "tiny.textproto").string());
  const size_t model = tiny.find("model {");
  tiny.erase(model, tiny.find('\n', model) - model);
  std::ofstream(dir / "tiny.textproto") << tiny;
  const CompiledExperiment x = Compile(dir);
  const ExperimentResult r = RunQuietly(x, dir / "out");
  REQUIRE(r.finished);
  const std::string out = (dir / "out").string();
  const CrossplayMatrix m = Crossplay(x, ReadExperimentGames(x, out));
  REQUIRE(m.players == std::vector<std::string>{"always_cooperate", "always_defect"});
  // Red-Black's payoffs: a defector against a cooperator wins every game, two alike tie.
  CHECK(m.win_rate[1][0] == 1.0);
  CHECK(m.win_rate[0][1] == 0.0);
  CHECK(m.win_rate[0][0] == 0.5);
  CHECK(m.payoff[1][0] > m.payoff[0][0]);
  CHECK(m.payoff_interval[1][0].lo <= m.payoff[1][0]);
  CHECK(m.elo[1] > m.elo[0]);
  CHECK(m.games[0][0] == 6);
  const std::string md = testing::ReadFile(out + "/results.md");
  CHECK_THAT(md, Catch::Contains("## Cross-play") && Catch::Contains("| always_defect |"));
  CHECK(fs::exists(out + "/crossplay.jsonl"));
  CHECK(fs::exists(out + "/crossplay.gp"));
  CHECK(fs::exists(out + "/crossplay.png") == OnPath("gnuplot"));
}
