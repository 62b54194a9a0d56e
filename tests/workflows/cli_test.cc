// The real `troupe` binary in real processes: help, validate's exit status and
// messages, every shipped workflow validating, train then eval --json.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "comms/session_file.h"
#include "tests/test_support.h"
#include "workflows/report/metrics_log.h"

namespace fs = std::filesystem;

namespace {

using Result = troupe::testing::CommandResult;

Result Troupe(const std::string& args) { return troupe::testing::RunCommand(troupe::testing::TroupeBinary() + " " + args); }

std::string Source(const std::string& rel) { return troupe::testing::SourceDir() + "/" + rel; }

const std::string& StandInBaseModel() {
  static const std::string dir = troupe::testing::MakeStandInBaseModel("troupe-cli-base");
  return dir;
}

}  // namespace

TEST_CASE("troupe --help lists the commands and each command has help", "[cli]") {
  Result r = Troupe("--help");
  CHECK(r.status == 0);
  for (const char* command : {"train", "eval", "validate", "worker", "record", "replay", "keys", "view", "help"}) {
    CHECK_THAT(r.output, Catch::Contains(std::string("\n  ") + command + " "));
  }
  CHECK_THAT(Troupe("train --help").output, Catch::Contains("--resume"));
  CHECK_THAT(Troupe("eval --help").output, Catch::Contains("--json"));
  Result bad = Troupe("frobnicate");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.output, Catch::Contains("unknown command 'frobnicate'"));
}

TEST_CASE("every shipped workflow validates", "[cli][workflows]") {
  int count = 0;
  for (const char* folder : {"workflows/shipped"}) {
    for (const auto& e : fs::directory_iterator(Source(folder))) {
      if (e.path().extension() != ".textproto") continue;
      INFO(e.path());
      // Workflows that load troupe's base model find the stand-in (model paths are relative to the working folder).
      Result r = troupe::testing::RunCommand("cd " + StandInBaseModel() + " && " + troupe::testing::TroupeBinary() +
                                             " validate " + e.path().string());
      CHECK(r.status == 0);
      CHECK_THAT(r.output, Catch::EndsWith("valid\n"));
      ++count;
    }
  }
  CHECK(count >= 5);
}

TEST_CASE("validate exits 1 with file:line:col on a broken workflow", "[cli]") {
  const fs::path file = fs::temp_directory_path() / "troupe-cli-broken.textproto";
  std::ofstream(file) << "name: \"x\"\ngame { name: \"red_black\" }\nmodel { name: \"m\" }\n"
                         "role { name: \"a\" seats: \"a*\" model: \"nope\" }\n";
  Result r = Troupe("validate " + file.string());
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::StartsWith(file.string() + ":4:") && Catch::Contains("undefined model 'nope'"));
}

TEST_CASE("train then eval --json reports the game's figures and --episodes-out each episode's", "[cli]") {
  const fs::path dir = fs::temp_directory_path() / "troupe-cli-run";
  fs::remove_all(dir);
  const std::string wf = Source("workflows/shipped/red_black.textproto");
  const std::string small =
      " --set trainer.iterations=1 --set trainer.episodes_per_iteration=8 --set trainer.eval_episodes=4"
      " --set game.param[0].int=2 --set model[0].transformer.d_model=16 --set model[0].transformer.heads=2";
  Result train = Troupe("train " + wf + " --out " + dir.string() + small);
  INFO(train.output);
  REQUIRE(train.status == 0);
  CHECK_THAT(train.output, Catch::Contains("team_a_score") && Catch::Contains("% of best"));
  const fs::path per_episode = dir / "eval_again.episodes.jsonl";
  Result eval = Troupe("eval " + wf + " --checkpoint " + dir.string() + " --episodes 4 --json --episodes-out " +
                       per_episode.string() + small);
  INFO(eval.output);
  REQUIRE(eval.status == 0);
  for (const char* key : {"\"episodes\":4", "\"team_a_score\":", "\"team_b_score\":", "\"team_a_cooperation\":",
                          "\"game_cooperation\":", "\"efficiency\":", "\"invalid_outputs\":"}) {
    CHECK_THAT(eval.output, Catch::Contains(key));
  }
  CHECK(eval.output.front() == '{');
  // One line per episode, numbered 0-3, whose scores average to the summary's.
  const nlohmann::json summary = nlohmann::json::parse(eval.output);
  std::ifstream lines(per_episode);
  std::string line;
  std::vector<nlohmann::json> episodes;
  while (std::getline(lines, line)) episodes.push_back(nlohmann::json::parse(line));
  REQUIRE(episodes.size() == 4);
  double score_sum = 0;
  for (size_t i = 0; i < episodes.size(); ++i) {
    CHECK(episodes[i]["episode"].get<int>() == static_cast<int>(i));
    score_sum += episodes[i]["team_a_score"].get<double>();
  }
  CHECK(score_sum / 4 == Approx(summary["team_a_score"].get<double>()));
}

TEST_CASE("replay refuses a file that is not a session and reads a session cut short to its last event",
          "[cli][session]") {
  const fs::path dir = fs::temp_directory_path() / "troupe-cli-replay";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "empty.session");
  std::ofstream(dir / "junk.session") << "random bytes that no session file starts with, long enough for a header";
  {
    // A TensorBoard event file is made of checksummed records too, and its events parse as protobuf.
    fs::create_directories(dir / "tb");
    troupe::TensorBoardWriter tensorboard((dir / "tb").string());
    tensorboard.Scalars(1, {{"loss", 0.5}, {"reward", 1.0}});
  }
  for (const auto& f : fs::directory_iterator(dir / "tb")) fs::copy_file(f.path(), dir / "tensorboard.session");
  for (const char* name : {"empty.session", "junk.session", "tensorboard.session", "missing.session"}) {
    Result r = Troupe("replay " + (dir / name).string() + " --summary");
    INFO(name << ": " << r.output);
    CHECK(r.status == 3);
    CHECK_THAT(r.output, Catch::Contains((dir / name).string()));
    CHECK_THAT(r.output, Catch::Contains(std::string(name) == "missing.session" ? "cannot open"
                                                                                : "is not a troupe session file"));
  }
  const fs::path cut = dir / "cut.session";
  {
    troupe::SessionWriter writer(cut.string());
    for (int i = 1; i <= 3; ++i) {
      troupe::session::Event e;
      e.mutable_metrics()->set_iteration(i);
      writer.Write(e, true);
    }
  }
  fs::resize_file(cut, fs::file_size(cut) - 3);  // the third event loses its last bytes, as in a crash
  Result r = Troupe("replay " + cut.string() + " --summary");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output,
             Catch::Contains("events: 2") && Catch::Contains("iterations: 1..2") && Catch::Contains("stopped reading"));
}

TEST_CASE("an option that does not apply to a command is an error naming the command", "[cli]") {
  const std::string wf = Source("workflows/shipped/red_black.textproto");
  Result r = Troupe("validate " + wf + " --greedy --resume --summary");
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("troupe validate: --greedy --resume --summary: not options of validate"));
  Result missing = Troupe("eval " + wf);
  CHECK(missing.status == 2);
  CHECK_THAT(missing.output, Catch::Contains("troupe eval: --checkpoint is required"));
  // --set repeats, each taking one value, before or after the file.
  Result ok = Troupe("validate --set trainer.iterations=3 " + wf + " --set model[0].transformer.d_model=64");
  CHECK(ok.status == 0);
  CHECK_THAT(ok.output, Catch::EndsWith("valid\n"));
  // Every option a command takes is in its help.
  const std::string train = Troupe("help train").output;
  for (const char* option : {"--out", "--seed", "--set", "--resume", "--quiet", "--no-eval", "--publish",
                             "--await-subscriber", "--record"}) {
    CHECK_THAT(train, Catch::Contains(option));
  }
  const std::string eval = Troupe("eval --help").output;
  for (const char* option : {"--checkpoint", "--episodes", "--json", "--greedy", "--show", "--seed", "--set"}) {
    CHECK_THAT(eval, Catch::Contains(option));
  }
}

TEST_CASE("troupe view runs troupe-view with its arguments", "[cli][viewer]") {
  Result r = Troupe("view --help");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("usage: troupe-view"));
  Result missing = Troupe("view /no/such.session --screenshot /tmp/troupe-cli-none.png");
  CHECK(missing.status == 1);
  CHECK_THAT(missing.output, Catch::Contains("cannot open /no/such.session"));
}

TEST_CASE("debug messages are logged with --verbose, and neither by default nor with --quiet", "[cli][logging]") {
  const fs::path file = fs::temp_directory_path() / "troupe-cli-tiny.textproto";
  std::ofstream(file) << troupe::testing::TinyRedBlack(3, "trainer { iterations: 1 episodes_per_iteration: 4 }");
  const std::string run = (fs::temp_directory_path() / "troupe-cli-verbose").string();
  const std::string common = "train " + file.string() + " --no-eval --out ";
  fs::remove_all(run);
  Result verbose = Troupe(common + run + " --verbose");
  INFO(verbose.output);
  REQUIRE(verbose.status == 0);
  CHECK_THAT(verbose.output, Catch::Contains("troupe [debug] worker m#0: serving model m"));
  fs::remove_all(run);
  Result plain = Troupe(common + run);
  REQUIRE(plain.status == 0);
  CHECK_THAT(plain.output, !Catch::Contains("[debug]") && Catch::Contains("[it 1/1]"));
  fs::remove_all(run);
  Result quiet = Troupe(common + run + " --quiet");
  REQUIRE(quiet.status == 0);
  CHECK_THAT(quiet.output, !Catch::Contains("[debug]") && !Catch::Contains("[it 1/1]"));
}

namespace {

// A PNG's width and height from its header, or (0, 0) when it is not a PNG.
std::pair<int, int> PngSize(const std::string& path) {
  const std::string bytes = troupe::testing::ReadFile(path);
  if (bytes.size() < 24 || bytes.compare(1, 3, "PNG") != 0) return {0, 0};
  auto be32 = [&](size_t at) {
    int v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

}  // namespace

TEST_CASE("troupe run plays a simulation-only workflow: metrics per step, plots, a summary and JSON per seed",
          "[cli][simulate]") {
  const fs::path out = fs::temp_directory_path() / "troupe-cli-simulate";
  fs::remove_all(out);
  const std::string wf = Source("workflows/shipped/sugarscape_g1mt.textproto");
  Result r = Troupe("run " + wf + " --steps 30 --seeds 3 --out " + out.string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("seed 3: 30 steps") && Catch::Contains("(3 seeds)"));
  // Every step of every seed is a line of metrics.
  std::ifstream metrics(out / "metrics.jsonl");
  int lines = 0;
  std::string line;
  while (std::getline(metrics, line)) ++lines;
  CHECK(lines == 90);
  // The same sink as training's: TensorBoard events too, a run (folder) per seed.
  for (const char* seed : {"seed_1", "seed_2", "seed_3"}) {
    INFO(seed);
    int event_files = 0;
    for (const auto& e : fs::directory_iterator(out / seed)) {
      event_files += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    }
    CHECK(event_files == 1);
  }
  // Drawn by gnuplot where it is installed (its script and data beside, to restyle), else by the built-in chart.
  const bool gnuplot = troupe::testing::RunCommand("command -v gnuplot").status == 0;
  for (const char* plot : {"population_end", "gini_end", "step_trades", "step_price"}) {
    INFO(plot);
    const fs::path base = out / "plots" / plot;
    CHECK(PngSize(base.string() + ".png") ==
          (gnuplot ? std::pair<int, int>{900, 540} : std::pair<int, int>{800, 450}));
    CHECK_THAT(troupe::testing::ReadFile(base.string() + ".gp"), Catch::Contains("with lines"));
    CHECK_THAT(troupe::testing::ReadFile(base.string() + ".dat"), Catch::Contains("# seed 3"));
  }
  CHECK_THAT(troupe::testing::ReadFile((out / "summary.json").string()), Catch::Contains("\"ci95\""));
  // Session events: each seed an iteration, its state after every tick (a recording troupe replay reads).
  const std::string session = (out / "run.session").string();
  REQUIRE(Troupe("run " + wf + " --steps 10 --seeds 2 --quiet --record " + session).status == 0);
  Result replay = Troupe("replay " + session);
  CHECK_THAT(replay.output, Catch::Contains("iterations: 1..2") && Catch::Contains("snapshot: 20") &&
                                Catch::Contains("episode_end: 2"));
  // --json: one object per seed, with the figures the issue of the simulation asks for.
  Result j = Troupe("run " + wf + " --steps 30 --seeds 2 --json");
  REQUIRE(j.status == 0);
  std::istringstream objects(j.output);
  int seeds = 0;
  while (std::getline(objects, line)) {
    if (line.empty() || line[0] != '{') continue;
    ++seeds;
    for (const char* key : {"\"seed\"", "\"steps\":30", "\"population_end\"", "\"trades\"", "\"mean_price\"",
                            "\"gini_end\"", "\"agent_steps\"", "\"seconds\""}) {
      CHECK_THAT(line, Catch::Contains(key));
    }
  }
  CHECK(seeds == 2);
  // The same seed gives the same world (all but the wall-clock time).
  auto figures = [&](const std::string& seed) {
    const std::string o = Troupe("run " + wf + " --steps 30 --json --seed " + seed).output;
    return std::regex_replace(o, std::regex("\"seconds\":[^,]*,"), "");
  };
  CHECK(figures("4") == figures("4"));
  CHECK(figures("4") != figures("5"));
}

TEST_CASE("bad Sugarscape parameters are refused at validation, at the parameter", "[cli][simulate]") {
  const fs::path dir = fs::temp_directory_path() / "troupe-cli-sugarscape";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto validate = [&](const std::string& params) {
    const fs::path file = dir / "s.textproto";
    std::ofstream(file) << "name: \"s\"\ngame {\n  name: \"sugarscape\"\n" << params << "}\n";
    return Troupe("validate " + file.string());
  };
  const std::string file = (dir / "s.textproto").string();
  Result vision = validate("  param { name: \"vision_min\" int: 0 }\n");
  CHECK(vision.status == 1);
  CHECK_THAT(vision.output, Catch::StartsWith(file + ":4:") && Catch::Contains("vision_min"));
  Result crowded = validate("  param { name: \"placement_with_replacement\" flag: false }\n"
                            "  param { name: \"population\" int: 2600 }\n");
  CHECK(crowded.status == 1);
  CHECK_THAT(crowded.output, Catch::StartsWith(file + ":5:") && Catch::Contains("does not fit the 50 x 50"));
  Result missing = validate("  param { name: \"landscape\" text: \"file:/nonexistent/map.txt\" }\n");
  CHECK(missing.status == 1);
  CHECK_THAT(missing.output, Catch::StartsWith(file + ":4:") && Catch::Contains("/nonexistent/map.txt: cannot open"));
  std::ofstream(dir / "bad-map.txt") << "1 2 3\n4 5\n";
  Result malformed = validate("  param { name: \"landscape\" text: \"file:" + (dir / "bad-map.txt").string() + "\" }\n");
  CHECK(malformed.status == 1);
  CHECK_THAT(malformed.output, Catch::StartsWith(file + ":4:") && Catch::Contains("bad-map.txt:2: 2 cells"));
  Result preset = validate("  param { name: \"preset\" text: \"mesa\" }\n");
  CHECK_THAT(preset.output, Catch::StartsWith(file + ":4:") && Catch::Contains("not g1mt or seed_study"));
  CHECK(validate("  param { name: \"preset\" text: \"seed_study\" }\n").status == 0);
}
