// Training runs end to end on tiny configs: determinism, exact resume,
// checkpoint safety, every estimator, the pipeline and the custom game example,
// and the TensorBoard event file.
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "comms/proto/tensorboard_event.pb.h"
#include "core/base/record_file.h"
#include "core/checkpoint.h"
#include "core/models/torch_files.h"
#include "tests/test_support.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "tests/workflows/train_support.h"
#include "workflows/run/train_run.h"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

const std::string kTiny = testing::TinyRedBlack(
    5, "trainer { iterations: 4 episodes_per_iteration: 8 minibatch: 64 checkpoint_every: 2 eval_episodes: 8 }");

std::string Temp(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("troupe-train-" + name);
  fs::remove_all(p);
  return p.string();
}

CompiledWorkflow Tiny(const std::vector<std::string>& sets = {}, const std::string& text = kTiny) {
  LoadedWorkflow w = ParseWorkflowText(text, "tiny.textproto");
  for (const auto& s : sets) ApplyOverride(w, s);
  return CompileWorkflow(w);
}

// Options for a run into `dir` that prints no progress and skips the final evaluation.
TrainOptions Quiet(const std::string& dir) {
  TrainOptions o;
  o.out_dir = dir;
  o.progress = false;
  o.final_eval = false;
  return o;
}

TrainResult Run(const CompiledWorkflow& w, const std::string& dir, bool resume = false) {
  return testing::TrainQuietly(w, dir, resume);
}

// metrics.jsonl without its wall-clock fields.
std::vector<std::string> Metrics(const std::string& dir) {
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    std::string kept;
    std::stringstream fields(line.substr(1, line.size() - 2));
    std::string f;
    while (std::getline(fields, f, ',')) {
      if (f.find("\"time/") == 0) continue;
      kept += f + ",";
    }
    lines.push_back(kept);
  }
  return lines;
}

// metrics.jsonl as JSON objects, one per iteration.
std::vector<nlohmann::json> MetricsJson(const std::string& dir) {
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// A metric that must be there and be a finite number.
double Number(const nlohmann::json& line, const std::string& key) {
  INFO("metric " << key);
  REQUIRE(line.contains(key));
  REQUIRE(line.at(key).is_number());
  const double v = line.at(key).get<double>();
  REQUIRE(std::isfinite(v));
  return v;
}

// Every one of `keys` is a finite number in [low, high].
void CheckWithin(const nlohmann::json& line, const std::vector<std::string>& keys, double low, double high) {
  for (const auto& key : keys) {
    INFO(key);
    const double v = Number(line, key);
    CHECK(v >= low);
    CHECK(v <= high);
  }
}

}  // namespace

TEST_CASE("the same seed gives identical metrics from two runs", "[training][determinism]") {
  const auto a = Temp("det-a"), b = Temp("det-b");
  Run(Tiny(), a);
  Run(Tiny(), b);
  const auto ma = Metrics(a), mb = Metrics(b);
  REQUIRE(ma.size() == 4);
  CHECK(ma == mb);
  const auto other = Temp("det-c");
  Run(Tiny({"seed=6"}), other);
  CHECK(Metrics(other) != ma);  // the seed matters
}

TEST_CASE("a run split by a resume equals an unsplit run", "[training][resume]") {
  const auto whole = Temp("whole"), split = Temp("split");
  Run(Tiny(), whole);
  Run(Tiny({"trainer.iterations=2"}), split);
  REQUIRE(Metrics(split).size() == 2);
  TrainResult r = Run(Tiny(), split, true);
  CHECK(r.iterations == 4);
  CHECK(Metrics(split) == Metrics(whole));
}

TEST_CASE("a Llama-family role model trains from config and resumes exactly from its Hugging Face checkpoint",
          "[training][resume][llama]") {
  std::string text = kTiny;
  const std::string transformer = "transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 64 }";
  text.replace(text.find(transformer), transformer.size(),
               "llama { hidden_size: 16 heads: 2 kv_heads: 1 layers: 1 intermediate_size: 32 max_len: 64 }");
  const std::vector<std::string> sets = {"trainer.kl_coef=0.05"};
  const auto whole = Temp("llama-whole"), split = Temp("llama-split");
  Run(Tiny(sets, text), whole);
  auto first = sets;
  first.push_back("trainer.iterations=2");
  Run(Tiny(first, text), split);
  const auto checkpoint = FindCheckpoint(split);
  REQUIRE(checkpoint);
  for (const char* file : {"config.json", "model.safetensors", "troupe.safetensors"}) {
    INFO(file);
    CHECK(fs::exists(fs::path(*checkpoint) / "model-m" / file));
  }
  Run(Tiny(sets, text), split, true);
  const auto lines = MetricsJson(whole);
  REQUIRE(lines.size() == 4);
  for (const auto& line : lines) {
    CHECK(Number(line, "grad_norm/m") > 0);
    CHECK(Number(line, "kl/m") >= 0);
  }
  CHECK(Metrics(split) == Metrics(whole));
}

TEST_CASE("the supervised warm start learns from a recorded session and from a JSONL file of demonstrations",
          "[training][sft]") {
  // A recorded session (guided choices: every call's answer is readable): its text calls carry their prompts.
  const auto recorded = Temp("sft-record");
  TrainOptions o = Quiet(recorded);
  o.record = recorded + ".session";
  std::ostringstream sink;
  Train(Tiny({"trainer.iterations=2", "trainer.guided_choices=true"}), o, sink);
  const CompiledWorkflow from_session = Tiny({"trainer.sft.session=" + o.record});
  const auto& demos = from_session.run.sft_demonstrations;
  REQUIRE(demos.size() >= 8);
  for (const Demonstration& d : demos) {
    CHECK(from_session.rollout.roles[d.role].name == "a");
    CHECK_FALSE(d.prompt.empty());
  }
  // The same demonstrations as JSONL, every answer made one word the model must learn to give.
  const std::string answer = demos.front().response.front();
  const std::string jsonl = recorded + ".jsonl";
  {
    std::ofstream out(jsonl);
    for (const Demonstration& d : demos) {
      std::string prompt;
      for (const auto& w : d.prompt) prompt += (prompt.empty() ? "" : " ") + w;
      out << nlohmann::json{{"role", "a"}, {"prompt", prompt}, {"response", answer}}.dump() << "\n";
    }
  }
  const CompiledWorkflow from_file = Tiny({"trainer.sft.jsonl=" + jsonl, "trainer.sft.steps=60"});
  REQUIRE(from_file.run.sft_demonstrations.size() == demos.size());
  const auto dir = Temp("sft-jsonl");
  o.out_dir = dir;
  o.record.clear();
  std::ostringstream log;
  Train(Tiny({"trainer.sft.jsonl=" + jsonl, "trainer.sft.steps=60", "trainer.iterations=1"}), o, log);
  INFO(log.str());
  const std::string line = log.str().substr(log.str().find("sft warm start: "));
  CHECK_THAT(line, Catch::Contains(std::to_string(demos.size()) + " demonstrations from " + jsonl));
  const double loss = std::stod(line.substr(line.find("final loss ") + 11));
  CHECK(loss < 0.5);  // from about ln(vocabulary) = 4.4: it learnt the answer

  // Bad lines are refused at their line.
  const std::string word = demos.front().prompt.front();
  std::ofstream(jsonl) << nlohmann::json{{"role", "a"}, {"prompt", word}, {"response", answer}}.dump() << "\n"
                       << nlohmann::json{{"role", "zz"}, {"prompt", word}, {"response", answer}}.dump() << "\n";
  CHECK_THROWS_WITH(Tiny({"trainer.sft.jsonl=" + jsonl}),
                    Catch::Contains(jsonl + ":2:1") && Catch::Contains("'zz' is not a trained role"));
  std::ofstream(jsonl) << nlohmann::json{{"role", "a"}, {"prompt", word}, {"response", "purple"}}.dump() << "\n";
  CHECK_THROWS_WITH(Tiny({"trainer.sft.jsonl=" + jsonl}),
                    Catch::Contains(jsonl + ":1:1") && Catch::Contains("'purple' is not a word"));
}

TEST_CASE("an interrupted checkpoint never replaces the last complete one", "[training][checkpoint]") {
  const auto dir = Temp("ckpt");
  Run(Tiny({"trainer.iterations=2"}), dir);
  auto found = FindCheckpoint(dir);
  REQUIRE(found.has_value());
  CHECK(fs::path(*found).filename() == "iter-000002");
  // A save that died half-way leaves only a temporary folder behind.
  fs::create_directories(fs::path(dir) / "checkpoints" / ".tmp-iter-000004" / "state");
  std::ofstream(fs::path(dir) / "checkpoints" / ".tmp-iter-000004" / "model-m.safetensors") << "partial";
  CHECK(FindCheckpoint(dir) == found);
  TrainResult r = Run(Tiny(), dir, true);  // resumes from iteration 2 and overwrites the debris
  CHECK(r.iterations == 4);
  CHECK(fs::path(*FindCheckpoint(dir)).filename() == "iter-000004");
}

TEST_CASE("a checkpoint whose files do not match their checksums is never loaded; resume takes the one before",
          "[training][checkpoint]") {
  const auto dir = Temp("ckpt-damaged");
  Run(Tiny({"trainer.iterations=2", "trainer.checkpoint_every=1"}), dir);
  const fs::path newest = fs::path(dir) / "checkpoints" / "iter-000002";
  REQUIRE(fs::exists(newest / "manifest.crc32c"));
  CHECK(CheckpointProblem(newest.string()).empty());
  // One byte of the model file flipped, as a bad disk or a torn copy would.
  const fs::path model = newest / "model-m.safetensors";
  std::string bytes = testing::ReadFile(model.string());
  REQUIRE(bytes.size() > 100);
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(model, std::ios::binary) << bytes;
  CHECK_THAT(CheckpointProblem(newest.string()), Catch::Contains("model-m.safetensors is damaged (CRC-32C"));
  CHECK_THROWS_WITH(LoadCheckpoint(newest.string(), [](const std::string&) {}),
                    Catch::Contains(newest.string()) && Catch::Contains("model-m.safetensors is damaged"));
  std::vector<std::string> skipped;
  CHECK(fs::path(*FindCheckpoint(dir, &skipped)).filename() == "iter-000001");
  REQUIRE(skipped.size() == 1);
  CHECK_THAT(skipped[0], Catch::Contains("iter-000002: model-m.safetensors is damaged"));
  // A resumed run says which it skipped and why, and continues from iteration 1.
  std::ostringstream log;
  TrainResult r = testing::TrainQuietly(Tiny({"trainer.iterations=3", "trainer.checkpoint_every=1"}), dir, true, "", &log);
  CHECK_THAT(log.str(), Catch::Contains("resume: skipping the damaged checkpoint") &&
                            Catch::Contains("iter-000002: model-m.safetensors is damaged"));
  CHECK(r.iterations == 3);
  CHECK(MetricsJson(dir).size() == 3);
  // A truncated file and a missing one are found as well.
  const fs::path third = fs::path(dir) / "checkpoints" / "iter-000003";
  fs::resize_file(third / "state" / "iteration", 0);
  CHECK_THAT(CheckpointProblem(third.string()), Catch::Contains("state/iteration has 0 bytes, the manifest says 1"));
  fs::remove(third / "model-m.safetensors");
  CHECK_THAT(CheckpointProblem(third.string()), Catch::Contains("model-m.safetensors is missing"));
  // A manifest may only name files inside its checkpoint.
  std::ofstream(third / "manifest.crc32c") << "00000000 0 ../../../outside\n";
  CHECK_THAT(CheckpointProblem(third.string()), Catch::Contains("names a file outside the checkpoint: '../../../outside'"));
}

TEST_CASE("a checkpoint holding a model of another size, or a damaged older LibTorch file, is refused by name",
          "[training][checkpoint]") {
  const auto small = Temp("ckpt-small"), large = Temp("ckpt-large");
  Run(Tiny({"trainer.iterations=1"}), small);
  Run(Tiny({"trainer.iterations=1", "model[0].transformer.d_model=48"}), large);
  const fs::path from = *FindCheckpoint(large), into = *FindCheckpoint(small);
  // The larger model's file in a checkpoint without a manifest (as written before
  // checksums): nothing but the shapes can tell.
  fs::copy_file(from / "model-m.safetensors", into / "model-m.safetensors", fs::copy_options::overwrite_existing);
  fs::remove(into / "manifest.crc32c");
  REQUIRE(CheckpointProblem(into.string()).empty());
  std::ostringstream log;
  CHECK_THROWS_WITH(testing::TrainQuietly(Tiny({"trainer.iterations=2"}), small, true, "", &log),
                    Catch::Contains((into / "model-m.safetensors").string() + ": tensor '") &&
                        Catch::Contains(", 48], the model needs [") && Catch::Contains(", 16]"));
  // A checkpoint of an older troupe holds model-m.pt, read by LibTorch: an archive its
  // TorchScript reader refuses with its own exception type (found by fuzzing) is named.
  fs::remove(into / "model-m.safetensors");
  fs::copy_file(testing::SourceDir() + "/fuzz/corpus/torch_archive/regression-jit-error-report", into / "model-m.pt");
  CHECK_THROWS_WITH(testing::TrainQuietly(Tiny({"trainer.iterations=2"}), small, true, "", &log),
                    Catch::Contains("cannot load " + (into / "model-m.pt").string() + ": Unknown type name"));
  // LibTorch takes an archive's tensors whatever their shapes; LoadTorchFile does not.
  const std::string linear = Temp("linear.pt");
  torch::save(torch::nn::Linear(4, 3), linear);
  torch::nn::Linear wider(5, 3);
  CHECK_THROWS_WITH(LoadTorchFile(wider, linear),
                    Catch::Contains("cannot load " + linear) && Catch::Contains("other shapes than the model's"));
  torch::nn::Linear same(4, 3);
  CHECK_NOTHROW(LoadTorchFile(same, linear));
}

TEST_CASE("a full disk during a checkpoint is an error naming it; the last checkpoint stays and --resume continues",
          "[training][checkpoint][faults]") {
  // A real full disk: a 4 MiB tmpfs, mounted for the test (root only).
  const std::string mount = testing::FreshTempPath("troupe-full-disk");
  fs::create_directories(mount);
  if (::geteuid() != 0 || ::mount("tmpfs", mount.c_str(), "tmpfs", 0, "size=4m") != 0) {
    WARN("skipped: mounting a small tmpfs needs root (" << std::strerror(errno) << ")");
    return;
  }
  struct Unmount {
    std::string at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{mount};
  const std::string dir = mount + "/run";
  Run(Tiny({"trainer.iterations=1", "trainer.checkpoint_every=1"}), dir);
  const fs::path first = fs::path(dir) / "checkpoints" / "iter-000001";
  uintmax_t checkpoint_bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(first)) {
    if (e.is_regular_file()) checkpoint_bytes += e.file_size();
  }
  // Fill the disk until half a checkpoint is left: the metrics lines fit, the next checkpoint does not.
  struct statvfs disk {};
  REQUIRE(::statvfs(mount.c_str(), &disk) == 0);
  const uintmax_t free_bytes = static_cast<uintmax_t>(disk.f_bavail) * disk.f_frsize;
  REQUIRE(free_bytes > checkpoint_bytes);
  {
    std::ofstream filler(mount + "/filler", std::ios::binary);
    const std::string block(4096, 'x');
    for (uintmax_t n = 0; n + checkpoint_bytes / 2 + block.size() < free_bytes; n += block.size()) filler << block;
  }
  const CompiledWorkflow two = Tiny({"trainer.iterations=2", "trainer.checkpoint_every=1"});
  CHECK_THROWS_WITH(Run(two, dir, true), Catch::Contains("cannot write checkpoint " + dir + "/checkpoints/iter-000002"));
  // The previous checkpoint is whole and still the one to resume from; no half-written folder stays.
  CHECK(CheckpointProblem(first.string()).empty());
  CHECK(FindCheckpoint(dir) == first.string());
  CHECK_FALSE(fs::exists(fs::path(dir) / "checkpoints" / ".tmp-iter-000002"));
  // Space again: --resume continues from iteration 1.
  fs::remove(mount + "/filler");
  TrainResult r = Run(two, dir, true);
  CHECK(r.iterations == 2);
  CHECK(fs::path(*FindCheckpoint(dir)).filename() == "iter-000002");
  CHECK(MetricsJson(dir).size() == 2);
}

TEST_CASE("a run refuses to overwrite an earlier run unless resuming", "[training]") {
  const auto dir = Temp("twice");
  Run(Tiny({"trainer.iterations=1"}), dir);
  CHECK_THROWS_WITH(Run(Tiny({"trainer.iterations=1"}), dir), Catch::Contains("--resume"));
}

TEST_CASE("training removes unparseable outputs (format reward)", "[training][learning]") {
  const auto dir = Temp("learn");
  Run(Tiny({"trainer.iterations=25", "trainer.checkpoint_every=25"}), dir);
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<double> invalid;
  std::string line;
  while (std::getline(in, line)) {
    const auto k = line.find("\"invalid_rate/a\":");
    invalid.push_back(std::stod(line.substr(k + 17)));
  }
  REQUIRE(invalid.size() == 25);
  INFO("first " << invalid.front() << " last " << invalid.back());
  CHECK(invalid.front() > 0.8);  // an untrained model rarely says a valid word
  CHECK(invalid.back() < 0.5 * invalid.front());
}

TEST_CASE("every credit estimator trains from config and reports its losses", "[training][estimators]") {
  for (const char* est : {"GRPO", "PPO", "RLOO", "REINFORCE"}) {
    INFO(est);
    const auto dir = Temp(std::string("est-") + est);
    Run(Tiny({std::string("credit.estimator=") + est, "trainer.iterations=2", "trainer.epochs=2"}), dir);
    const auto lines = MetricsJson(dir);
    REQUIRE(lines.size() == 2);
    const bool ppo = std::string(est) == "PPO";
    for (const auto& line : lines) {
      CHECK(Number(line, "grad_norm/m") > 0);  // the update moved the model
      CHECK(Number(line, "entropy/m") > 0);
      const double clipped = Number(line, "clip_fraction/m");
      CHECK(clipped >= 0);
      CHECK(clipped <= 1);
      const double policy = Number(line, "policy_loss/m"), loss = Number(line, "loss/m");
      if (ppo) {
        const double value = Number(line, "value_loss/m");
        CHECK(value > 0);
        // loss = policy + value_coef (0.5) * value - entropy_coef (0) * entropy
        CHECK(loss == Approx(policy + 0.5 * value).margin(1e-4));
      } else {
        CHECK_FALSE(line.contains("value_loss/m"));
        CHECK(loss == Approx(policy).margin(1e-5));
      }
    }
  }
}

TEST_CASE("the KL term to a frozen reference is reported when enabled", "[training]") {
  const auto dir = Temp("kl");
  Run(Tiny({"trainer.kl_coef=0.1", "trainer.iterations=3", "trainer.epochs=2"}), dir);
  const auto lines = MetricsJson(dir);
  REQUIRE(lines.size() == 3);
  // The first epoch starts at the reference; the second has moved away from it.
  for (const auto& line : lines) CHECK(Number(line, "kl/m") > 0);
  const auto off = Temp("kl-off");
  Run(Tiny({"trainer.iterations=1"}), off);
  CHECK(Number(MetricsJson(off).at(0), "kl/m") == 0);
}

TEST_CASE("after a supervised warm start the KL term is measured against the warm-started model",
          "[training][sft]") {
  // One optimiser step an iteration: its KL is the policy's against the
  // reference before any update moves it, so 0 exactly when the reference is
  // the warm-started model (the untrained model would be far from it).
  const auto dir = Temp("kl-sft");
  Run(Tiny({"trainer.kl_coef=0.1", "trainer.iterations=1", "trainer.epochs=1", "trainer.minibatch=100000",
            "trainer.sft.episodes=4", "trainer.sft.teacher=always_defect", "trainer.sft.steps=30"}),
      dir);
  const auto lines = MetricsJson(dir);
  REQUIRE(lines.size() == 1);
  CHECK(Number(lines.at(0), "kl/m") == Approx(0).margin(1e-6));
}

TEST_CASE("a run folder holds the resolved config, metrics, checkpoints and TensorBoard events",
          "[training][outputs]") {
  const auto dir = Temp("outputs");
  Run(Tiny({"trainer.iterations=2"}), dir);
  CHECK(fs::exists(fs::path(dir) / "workflow.resolved.textproto"));
  CHECK(testing::ReadFile(dir + "/workflow.resolved.textproto").find("episodes_per_iteration: 8") != std::string::npos);
  std::string events;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) events = e.path().string();
  }
  REQUIRE_FALSE(events.empty());
  RecordReader reader(events);
  tensorboard::Event first;
  REQUIRE(first.ParseFromString(reader.Next().value()));
  CHECK(first.file_version() == "brain.Event:2");
  tensorboard::Event scalars;
  REQUIRE(scalars.ParseFromString(reader.Next().value()));
  CHECK(scalars.step() == 1);
  bool has_reward = false;
  for (const auto& v : scalars.summary().value()) has_reward = has_reward || v.tag() == "reward/a";
  CHECK(has_reward);
  CHECK(reader.error().empty());
}

TEST_CASE("all three sharing modes train from config alone", "[training][sharing]") {
  const std::string roles_shared = R"(role { name: "a0" seats: "a0" model: "m" }
role { name: "a1" seats: "a1" seats: "a2" model: "m" }
)";
  std::string base = kTiny;
  const std::string single_role = "role { name: \"a\" seats: \"a*\" model: \"m\" }\n";
  base.replace(base.find(single_role), single_role.size(), roles_shared);
  std::string separate = base;
  separate.replace(separate.find("seats: \"a2\" model: \"m\""), 22, "seats: \"a2\" model: \"m2\"");
  separate += "model { name: \"m2\" transformer { d_model: 16 heads: 2 layers: 1 max_len: 64 } }\n";
  std::string partial = base;
  partial.replace(partial.find("seats: \"a0\" model: \"m\""), 22, "seats: \"a0\" model: \"m\" adapter: LORA");
  partial.replace(partial.find("seats: \"a2\" model: \"m\""), 22, "seats: \"a2\" model: \"m\" adapter: LORA");
  const std::vector<std::pair<std::string, std::vector<std::string>>> modes = {
      {base, {"m"}}, {separate, {"m", "m2"}}, {partial, {"m"}}};
  const std::vector<std::string> sharing = {"shared (2 roles, told apart by role tokens)", "separate",
                                            "partial (shared trunk, per-role LoRA r=4)"};
  for (size_t n = 0; n < modes.size(); ++n) {
    const auto& [text, models] = modes[n];
    const auto dir = Temp("mode-" + std::to_string(n));
    CompiledWorkflow w = Tiny({"trainer.iterations=2"}, text);
    REQUIRE(w.models.size() == models.size());
    INFO(sharing[n]);
    for (const auto& mode : w.sharing) CHECK(mode == sharing[n]);
    Run(w, dir);
    const auto lines = MetricsJson(dir);
    REQUIRE(lines.size() == 2);
    for (const auto& line : lines) {
      // Each role's reward: 0.1 x team score to go (a round pays at most 3 x 3 x 3 here) + format (0 or -1).
      CheckWithin(line, {"reward/a0", "reward/a1"}, -1 - 0.1 * 27, 0.1 * 27);
      // One update per physical model, and each moved its parameters.
      for (const auto& m : models) CHECK(Number(line, "grad_norm/" + m) > 0);
      CHECK_FALSE(line.contains("grad_norm/m3"));
    }
  }
}

TEST_CASE("a game defined outside games/ is registered and trains from its own workflow", "[training][extending]") {
  CHECK(GameFactory::Get().Has("signal_game"));
  CHECK(StrategyFactory::Get().Has("literal_listener"));
  LoadedWorkflow w = LoadWorkflowFile(troupe::testing::SourceDir() + "/examples/custom_game/signal_game.textproto");
  ApplyOverride(w, "trainer.iterations=2");
  const auto dir = Temp("custom");
  Run(CompileWorkflow(w), dir);
  const auto lines = Metrics(dir);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].find("\"reward/speaker\":") != std::string::npos);
  CHECK(lines[1].find("\"game/success\":") != std::string::npos);
}

TEST_CASE("the node-driven proposer -> critic pipeline validates and runs", "[training][pipeline]") {
  LoadedWorkflow w = LoadWorkflowFile(troupe::testing::SourceDir() + "/workflows/shipped/proposer_critic.textproto");
  ApplyOverride(w, "trainer.iterations=2");
  CompiledWorkflow c = CompileWorkflow(w);
  CHECK(c.rollout.pipeline->has_cycle);
  const auto dir = Temp("pipeline");
  Run(c, dir);
  const auto lines = MetricsJson(dir);
  REQUIRE(lines.size() == 2);
  for (const auto& line : lines) {
    // score in [0, 1] plus 0.5 x format (0 or -1).
    CheckWithin(line, {"reward/proposer", "reward/critic"}, -0.5, 1.0);
    CheckWithin(line, {"game/score"}, 0, 1);
    // Every episode stops by the step bound at the latest, after one step at least.
    const double steps = Number(line, "game/steps");
    CHECK(steps >= 1);
    CHECK(steps <= c.rollout.pipeline->max_steps);
  }
}

TEST_CASE("the progress line and the end table show the headline metrics the game declares for the trained side",
          "[training][outputs]") {
  // Team B trained against a scripted team A: the game names team B's figures.
  std::string text = kTiny;
  auto swap = [&text](const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  };
  swap("role { name: \"a\" seats: \"a*\" model: \"m\" }",
       "role { name: \"a\" seats: \"a*\" scripted: \"tit_for_tat\" }");
  swap("role { name: \"b\" seats: \"b*\" scripted: \"tit_for_tat\" }",
       "role { name: \"b\" seats: \"b*\" model: \"m\" }");
  CompiledWorkflow w = Tiny({"trainer.iterations=1"}, text);
  CHECK(w.headline_metrics ==
        std::vector<std::string>{"team_b_score", "team_b_cooperation", "combined_score", "efficiency"});
  TrainOptions o;
  o.out_dir = Temp("headline");
  std::ostringstream out;
  TrainResult r = Train(w, o, out);
  INFO(out.str());
  CHECK_THAT(out.str(), Catch::Contains("team_b_score=") && Catch::Contains("team_b_cooperation="));
  CHECK_THAT(out.str(), !Catch::Contains("team_a_score="));
  const std::string table = ResultTable(r);
  std::vector<std::string> rows;
  std::istringstream lines(table);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) rows.push_back(line.substr(0, line.find(' ')));
  CHECK(rows == std::vector<std::string>{"team_b_score", "team_b_cooperation", "combined_score", "efficiency",
                                         "invalid_outputs"});
  // The best reply to tit-for-tat stands beside the trained side's own score.
  CHECK_THAT(table, Catch::Contains("% of best"));
  REQUIRE(r.best.has_value());
  CHECK(r.best->metric == "team_b_score");
}

TEST_CASE("a resumed run reads its untrained evaluation back, and refuses one that is not JSON", "[training][resume]") {
  const auto dir = Temp("resume-eval");
  TrainOptions o;
  o.out_dir = dir;
  o.progress = false;
  o.stop_at = 2;  // stop as if interrupted after two iterations
  std::ostringstream sink;
  TrainResult first = Train(Tiny(), o, sink);
  REQUIRE(first.iterations == 2);
  REQUIRE(first.before.has_value());
  const fs::path untrained = fs::path(dir) / "eval_untrained.json";
  std::ofstream(untrained) << "{\"episodes\":8,\"team_a_score\":";  // cut short
  o.resume = true;
  o.stop_at = 0;
  CHECK_THROWS_WITH(Train(Tiny(), o, sink), Catch::Contains(untrained.string() + " is not JSON"));
  std::ofstream(untrained) << "{\"episodes\":8,\"team_a_score\":1.5,\"forward_calls_per_turn\":3}\n";
  TrainResult resumed = Train(Tiny(), o, sink);
  CHECK(resumed.iterations == 4);
  REQUIRE(resumed.before.has_value());
  CHECK(resumed.before->episodes == 8);
  CHECK(resumed.before->metrics.at("team_a_score") == 1.5);
  CHECK(resumed.before->metrics.count("episodes") == 0);
}

TEST_CASE("a run stopped right after its warm start keeps the warm-started models, and --resume does not redo it",
          "[training][resume][sft]") {
  const auto dir = Temp("stop-after-warm-start");
  TrainOptions o = Quiet(dir);
  const std::atomic<bool> stop{true};  // Ctrl-C during the warm start: seen before the first iteration
  o.stop = &stop;
  const CompiledWorkflow w = Tiny({"trainer.sft.teacher=tit_for_tat", "trainer.sft.episodes=2", "trainer.sft.steps=20"});
  std::ostringstream first;
  const TrainResult stopped = Train(w, o, first);
  INFO(first.str());
  CHECK_THAT(first.str(), Catch::Contains("sft warm start: ") && Catch::Contains("interrupted: saving a checkpoint at iteration 0"));
  CHECK(stopped.iterations == 0);
  const auto checkpoint = FindCheckpoint(dir);
  REQUIRE(checkpoint.has_value());
  CHECK(fs::path(*checkpoint).filename() == CheckpointFolderName(0));
  o.stop = nullptr;
  o.resume = true;
  std::ostringstream resumed_log;
  const TrainResult resumed = Train(w, o, resumed_log);
  INFO(resumed_log.str());
  CHECK_THAT(resumed_log.str(), !Catch::Contains("sft warm start"));
  CHECK(resumed.iterations == 4);
  CHECK(MetricsJson(dir).size() == 4);
}

TEST_CASE("negotiators train on Sugarscape from a warm start on the MRS negotiator, evaluated with intervals",
          "[training][sugarscape]") {
  LoadedWorkflow l =
      LoadWorkflowFile(troupe::testing::SourceDir() + "/workflows/shipped/sugarscape_negotiate.textproto");
  for (const char* s : {"trainer.iterations=2", "trainer.episodes_per_iteration=8", "trainer.eval_episodes=8",
                        "trainer.sft.episodes=4", "trainer.sft.teacher=mrs_negotiator", "trainer.sft.steps=10"}) {
    ApplyOverride(l, s);
  }
  CompiledWorkflow w = CompileWorkflow(l);
  TrainOptions o;
  o.out_dir = Temp("negotiate");
  std::ostringstream out;
  TrainResult r = Train(w, o, out);
  INFO(out.str());
  CHECK_THAT(out.str(), Catch::Contains("demonstrations from mrs_negotiator"));
  REQUIRE(r.before.has_value());
  REQUIRE(r.after.has_value());
  for (const EvalResult* e : {&*r.before, &*r.after}) {
    CHECK(e->metrics.at("encounters") > 0);
    CHECK(e->ci95.count("trade_success_rate") == 1);
  }
  const std::string table = ResultTable(r);
  INFO(table);
  CHECK_THAT(table, Catch::StartsWith("metric") && Catch::Contains("trade_success_rate") &&
                        Catch::Contains("welfare_gain_learner") && Catch::Contains(" +-"));
}

TEST_CASE("a frozen model is never updated while the model beside it trains, and all its seats play the one copy",
          "[training][frozen]") {
  std::string text = kTiny;
  const std::string single_role = "role { name: \"a\" seats: \"a*\" model: \"m\" }\n";
  text.replace(text.find(single_role), single_role.size(),
               "role { name: \"a0\" seats: \"a0\" model: \"m\" }\n"
               "role { name: \"pop\" seats: \"a1\" seats: \"a2\" model: \"population\" }\n");
  text += "model { name: \"population\" frozen: true transformer { d_model: 16 heads: 2 layers: 1 max_len: 64 } }\n";
  const CompiledWorkflow w = Tiny({"trainer.iterations=3", "trainer.checkpoint_every=1"}, text);
  REQUIRE(w.models.size() == 2);
  CHECK(w.models[1].frozen);
  CHECK(w.rollout.roles[w.RoleIndex("pop")].frozen);
  CHECK(w.rollout.roles[w.RoleIndex("pop")].seats.size() == 2);
  const auto dir = Temp("frozen");
  Run(w, dir);
  // Its weights are the same bytes after every update; the trained model's move; it has no optimiser state.
  const std::string first = dir + "/checkpoints/iter-000002", last = dir + "/checkpoints/iter-000003";
  REQUIRE(fs::exists(first + "/model-population.safetensors"));
  CHECK(testing::ReadFile(first + "/model-population.safetensors") == testing::ReadFile(last + "/model-population.safetensors"));
  CHECK(testing::ReadFile(first + "/model-m.safetensors") != testing::ReadFile(last + "/model-m.safetensors"));
  CHECK_FALSE(fs::exists(last + "/optimizer-population.safetensors"));
  CHECK(fs::exists(last + "/optimizer-m.safetensors"));
  for (const auto& line : MetricsJson(dir)) {
    CHECK(Number(line, "grad_norm/m") > 0);
    CHECK(Number(line, "grad_norm/population") == 0);
  }
  // A resumed run reads it back.
  Run(Tiny({"trainer.iterations=4", "trainer.checkpoint_every=1"}, text), dir, true);
  CHECK(testing::ReadFile(last + "/model-population.safetensors") ==
        testing::ReadFile(dir + "/checkpoints/iter-000004/model-population.safetensors"));
}

TEST_CASE("a reward or a warm start only a frozen model would receive is refused, as is a run with nothing to train",
          "[training][frozen]") {
  std::string text = kTiny;
  text.replace(text.find("seats: \"a*\" model: \"m\""), 22, "seats: \"a0\" model: \"m\"");
  text +=
      "role { name: \"pop\" seats: \"a1\" seats: \"a2\" model: \"population\" }\n"
      "model { name: \"population\" frozen: true transformer { d_model: 16 heads: 2 layers: 1 max_len: 64 } }\n"
      "reward { level: TRAJECTORY signal: \"team_score\" roles: \"pop\" }\n";
  CHECK_THROWS_WITH(Tiny({}, text),
                    Catch::Contains("tiny.textproto:14:49") && Catch::Contains("plays on frozen model 'population'"));
  // Demonstrations for a role on a frozen model would teach it nothing.
  text.erase(text.rfind("reward {"));
  const std::string jsonl = Temp("frozen-demos.jsonl");
  std::ofstream(jsonl) << nlohmann::json{{"role", "pop"}, {"prompt", "history now"}, {"response", "black"}}.dump()
                       << "\n";
  CHECK_THROWS_WITH(Tiny({"trainer.sft.jsonl=" + jsonl}, text), Catch::Contains("on a frozen model"));
  // Every model frozen: the workflow plays (troupe run, eval) but has nothing to train.
  std::string all_frozen = kTiny;
  all_frozen.replace(all_frozen.find("optimizer { lr: 0.01 }"), 22, "frozen: true");
  const CompiledWorkflow w = Tiny({}, all_frozen);
  std::ostringstream sink;
  TrainOptions o;
  o.out_dir = Temp("all-frozen");
  CHECK_THROWS_WITH(Train(w, o, sink), Catch::Contains("nothing to train"));
}
