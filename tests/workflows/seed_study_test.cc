// The seed study's shipped files, end to end in miniature (tiny budgets by
// --set, the same files and commands a user runs): the population learns
// from the personas by a warm start alone, the seed starts from it and trains
// beside it frozen, and the propagation experiment evaluates both over seed
// counts and opponents into its table; the other shipped experiments validate.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_paths.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using troupe::testing::RunCommand;

TEST_CASE("the seed study's workflows and experiment run end to end in miniature", "[seed_study][cli]") {
  const fs::path root = troupe::testing::FreshTempPath("troupe-seed-study");
  fs::create_directories(root);
  const std::string troupe = "cd " + root.string() + " && " + troupe::testing::TroupeBinary();
  const std::string shipped = troupe::testing::SourceDir() + "/workflows/shipped/seed_study/";
  const auto population = RunCommand(troupe + " train " + shipped + "population.textproto --out runs/seed_study/population "
                                     "--quiet --no-eval --set trainer.sft.episodes=16 --set trainer.sft.steps=20");
  INFO(population.output);
  REQUIRE(population.status == 0);
  REQUIRE(fs::exists(root / "runs/seed_study/population/checkpoints/latest"));
  const auto seed = RunCommand(troupe + " train " + shipped + "seed.textproto --out runs/seed_study/seed --quiet "
                               "--set trainer.iterations=2 --set trainer.episodes_per_iteration=8 "
                               "--set trainer.sft.episodes=8 --set trainer.sft.steps=10 --set trainer.eval_episodes=8");
  INFO(seed.output);
  REQUIRE(seed.status == 0);
  CHECK_THAT(seed.output, Catch::Contains("from checkpoint") && Catch::Contains("frozen"));
  // The experiment with eight games a cell.
  std::string experiment =
      troupe::testing::ReadFile(troupe::testing::SourceDir() + "/workflows/experiments/seed_propagation.textproto");
  experiment.replace(experiment.find("eval_episodes: 200"), 18, "eval_episodes: 8");
  experiment.replace(experiment.find("../shipped/seed_study/"), 22, shipped);
  std::ofstream(root / "propagation.textproto") << experiment;
  const auto grid = RunCommand(troupe + " experiment propagation.textproto --out runs/propagation --jobs 2");
  INFO(grid.output);
  REQUIRE(grid.status == 0);
  CHECK_THAT(grid.output, Catch::Contains("| seeds | opponent | team_a_cooperation | combined_score | "
                                          "persuadability/population |"));
  std::ifstream results(root / "runs/propagation/results.jsonl");
  int cells = 0;
  std::string line;
  while (std::getline(results, line)) {
    const auto j = nlohmann::json::parse(line);
    ++cells;
    CHECK(j.at("games").get<int>() == 8);
    CHECK(j.at("team_a_cooperation").get<double>() >= 0.0);
    CHECK(j.at("team_a_cooperation").get<double>() <= 1.0);
    // Every cell but the zero-seed ones is compared with its opponent's zero-seed cell.
    CHECK(j.contains("diff/team_a_cooperation") == (j.at("axis/seeds") != "0"));
    // The population's persuadability, where a population agent plays (not with five seeds).
    CHECK(j.contains("persuadability/population") == (j.at("axis/seeds") != "5"));
    if (j.contains("persuadability/population")) {
      CHECK(j.at("persuadability/population").get<double>() >= 0.0);
      CHECK(j.at("persuadability/population").get<double>() <= 1.0);
    }
  }
  CHECK(cells == 10);
  // The other shipped experiments compile every cell against these runs.
  for (const char* other : {"seed_propagation_scenarios", "seed_topology", "seed_scale"}) {
    const auto valid = RunCommand(troupe + " validate " + troupe::testing::SourceDir() + "/workflows/experiments/" +
                                  other + ".textproto");
    INFO(valid.output);
    CHECK(valid.status == 0);
    CHECK_THAT(valid.output, Catch::EndsWith("valid\n"));
  }
}

TEST_CASE("the seed study's text-model workflows and experiments run end to end on a stand-in base model",
          "[seed_study][cli][text]") {
  // A base model of seconds in ROOT/runs/base_model/model; games of three rounds keep its prompts short.
  const fs::path root = troupe::testing::MakeStandInBaseModel("troupe-seed-study-text");
  const std::string troupe = "cd " + root.string() + " && " + troupe::testing::TroupeBinary();
  const std::string shipped = troupe::testing::SourceDir() + "/workflows/shipped/seed_study/";
  const std::string small = " --quiet --no-eval --set game.param[1].int=3 --set trainer.minibatch=4";
  const auto population = RunCommand(troupe + " train " + shipped + "text_population.textproto --out "
                                     "runs/seed_study/text_population --set trainer.sft.episodes=2 "
                                     "--set trainer.sft.steps=2" + small);
  INFO(population.output);
  REQUIRE(population.status == 0);
  const auto seed = RunCommand(troupe + " train " + shipped + "text_seed.textproto --out runs/seed_study/text_seed "
                               "--set trainer.sft.episodes=2 --set trainer.sft.steps=2 --set trainer.iterations=1 "
                               "--set trainer.episodes_per_iteration=4" + small);
  INFO(seed.output);
  REQUIRE(seed.status == 0);
  CHECK_THAT(seed.output, Catch::Contains("from checkpoint") && Catch::Contains("text prompts"));
  // Each experiment with two games a cell (and three rounds), from the same files.
  auto experiment = [&](const std::string& name, const std::string& extra_set) {
    std::string text =
        troupe::testing::ReadFile(troupe::testing::SourceDir() + "/workflows/experiments/" + name + ".textproto");
    text.replace(text.find("../shipped/seed_study/"), 22, shipped);
    const size_t at = text.find("eval_episodes: ");
    text.replace(at, text.find('\n', at) - at, "eval_episodes: 2\n  set: \"" + extra_set + "\"");
    std::ofstream(root / (name + ".textproto")) << text;
    const auto run = RunCommand(troupe + " experiment " + name + ".textproto --out runs/" + name);
    INFO(run.output);
    REQUIRE(run.status == 0);
    std::vector<nlohmann::json> cells;
    std::ifstream results(root / "runs" / name / "results.jsonl");
    std::string line;
    while (std::getline(results, line)) cells.push_back(nlohmann::json::parse(line));
    return cells;
  };
  const auto propagation = experiment("seed_propagation_text", "game.param[1].int=3");
  REQUIRE(propagation.size() == 3);
  for (const auto& j : propagation) {
    CHECK(j.at("games").get<int>() == 2);
    CHECK(j.at("team_a_cooperation").get<double>() >= 0.0);
    CHECK(j.at("team_a_cooperation").get<double>() <= 1.0);
  }
  const auto transfer = experiment("seed_transfer", "game.param[3].int=2");
  REQUIRE(transfer.size() == 3);
  for (const auto& j : transfer) {
    INFO(j.dump());
    CHECK(j.at("games").get<int>() == 2);
    CHECK(j.at("trade_success_rate").get<double>() >= 0.0);
    CHECK(j.at("trade_success_rate").get<double>() <= 1.0);
  }
  // The scripted MRS negotiator as the reference trades.
  CHECK(transfer.back().at("axis/negotiator") == "mrs");
  CHECK(transfer.back().at("trade_success_rate").get<double>() > 0.0);
}
