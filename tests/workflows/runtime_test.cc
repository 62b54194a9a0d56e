// The star runtime with real processes and real sockets: `troupe train` with
// its model worker in-process (inproc://) and as a separate `troupe worker`
// process over tcp:// gives the same metrics; a killed worker is detected
// within the configured timeout, reported, and the recording stays intact;
// with replicas and on_worker_loss: CONTINUE the run goes on; the controller
// says which workers it waits for; forward calls per tick do not grow with
// the number of concurrent episodes; two data-parallel learners (worker
// processes summing gradients over c10d) end an update where one learner on
// the whole batch ends, and a learner killed mid-run fails the run or leaves
// the survivors to go on, as on_worker_loss says; SIGKILL at random points of
// checkpoint writes never leaves resume without a complete checkpoint.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

#include "comms/endpoint.h"
#include "comms/framed_socket.h"
#include "comms/session_file.h"
#include "core/rng.h"
#include "core/checkpoint.h"
#include "tests/test_support.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/serve_specs.h"
#include "workflows/rollout/rollout.h"
#include "workflows/runtime/model_server.h"
#include "workflows/runtime/model_worker.h"
#include "workflows/runtime/worker_hub.h"

using namespace troupe;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kTiny = testing::TinyRedBlack(
    11, "trainer { iterations: 3 episodes_per_iteration: 8 minibatch: 64 checkpoint_every: 100 }");

std::string Temp(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("troupe-runtime-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  return p.string();
}

// A port for this test process (ctest may run several test processes at once).
int Port(int offset) { return testing::FreeTestPort(offset); }

std::string WriteWorkflow(const std::string& name, const std::string& extra) {
  const std::string path = Temp(name + ".textproto");
  std::ofstream(path) << kTiny << extra;
  return path;
}

// A child process running the troupe binary, its output in a log file.
class Process {
 public:
  Process(const std::vector<std::string>& args, const std::string& log) : log_(log) {
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv;
      std::string binary = troupe::testing::TroupeBinary();
      argv.push_back(binary.data());
      std::vector<std::string> copy = args;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~Process() {
    if (pid_ > 0 && status_ == kRunning) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // Exit status, or -1 when it did not end within `seconds` (then it is killed).
  int Wait(double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  void Kill() {
    Signal(SIGKILL);
    Wait(10);
  }
  void Signal(int sig) { ::kill(pid_, sig); }
  std::string Output() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  static constexpr int kRunning = -1000;
  pid_t pid_ = -1;
  int status_ = kRunning;
  std::string log_;
};

std::vector<std::string> MetricLines(const std::string& run_dir, bool drop_timing) {
  std::vector<std::string> lines;
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (drop_timing) line = line.substr(0, line.find(",\"time/"));
    lines.push_back(line);
  }
  return lines;
}

bool WaitFor(const std::function<bool()>& done, double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Trains `workflow` twice: all in-process, then with `model` served by a
// `troupe worker` process over tcp. Returns the two run folders.
std::pair<std::string, std::string> TrainLocalAndOverTcp(const std::string& name, const std::string& workflow,
                                                         const std::string& model, int port_offset,
                                                         const std::vector<std::string>& options) {
  const std::string local = Temp(name + "-local.textproto"), remote = Temp(name + "-remote.textproto");
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(Port(port_offset));
  std::ofstream(local) << workflow;
  std::ofstream(remote) << workflow << "runtime { endpoint: \"" << endpoint << "\" worker { model: \"" << model
                        << "\" } }\n";
  const std::string run_local = Temp(name + "-run-local"), run_remote = Temp(name + "-run-remote");
  auto train = [&](const std::string& file, const std::string& out) {
    std::vector<std::string> args = {"train", file, "--out", out, "--quiet"};
    args.insert(args.end(), options.begin(), options.end());
    return args;
  };
  Process a(train(local, run_local), Temp(name + "-local.log"));
  REQUIRE(a.Wait(120) == 0);
  Process controller(train(remote, run_remote), Temp(name + "-controller.log"));
  Process worker({"worker", "--model", model, "--connect", endpoint}, Temp(name + "-worker.log"));
  const int status = controller.Wait(120);
  INFO(controller.Output());
  INFO(worker.Output());
  REQUIRE(status == 0);
  CHECK(worker.Wait(20) == 0);
  CHECK_THAT(worker.Output(), Catch::Contains("shut down by the controller"));
  return {run_local, run_remote};
}

// Model m of a tiny Red-Black workflow (`trainer`, `runtime` extras) served by
// two `troupe worker` processes, its data-parallel learners, behind a hub in
// this process; a lone learner beside them; and a batch of records from the
// hub with advantages of both signs.
struct TwoLearners {
  TwoLearners(const std::string& name, int port_offset, const std::string& trainer, const std::string& runtime,
              const std::function<void(std::string&)>& edit = nullptr)
      : endpoint("tcp://127.0.0.1:" + std::to_string(Port(port_offset))) {
    std::string text = testing::TinyRedBlack(11, trainer) + "runtime { endpoint: \"" + endpoint +
                       "\" worker { model: \"m\" replicas: 2 } " + runtime + " }\n";
    if (edit) edit(text);
    workflow = std::make_unique<CompiledWorkflow>(CompileWorkflow(ParseWorkflowText(text, name + ".textproto")));
    for (int r = 0; r < 2; ++r) {
      learners.push_back(std::make_unique<Process>(
          std::vector<std::string>{"worker", "--model", "m", "--replica", std::to_string(r), "--connect", endpoint},
          Temp(name + "-" + std::to_string(r) + ".log")));
    }
    hub = std::make_unique<WorkerHub>(MakeHubSpec(*workflow));
    one = std::make_unique<ModelServer>(MakeServeSpec(*workflow, 0));
    Rollout rollout(workflow->rollout, *hub);
    Rng rng(3);
    RolloutOptions o;
    o.episodes = 8;
    o.group_size = 4;
    records = rollout.Run(o, rng).records;
    for (size_t i = 0; i < records.size(); ++i) records[i].advantage = static_cast<double>(i % 5) - 2.0;
    dir = Temp(name + "-model");
  }
  // The hub's first learner's log-probabilities of the records' responses (through a checkpoint).
  std::vector<std::vector<float>> LearnerLogProbs() {
    fs::create_directories(dir);
    hub->Save(dir);
    ModelServer loaded(MakeServeSpec(*workflow, 0));
    loaded.Load(dir, false);
    return loaded.ResponseLogProbs(records);
  }
  std::vector<std::vector<float>> LoneLogProbs() { return one->ResponseLogProbs(records); }

  std::string endpoint, dir;
  std::unique_ptr<CompiledWorkflow> workflow;
  std::vector<std::unique_ptr<Process>> learners;
  std::unique_ptr<WorkerHub> hub;
  std::unique_ptr<ModelServer> one;
  std::vector<CallRecord> records;
};

// The largest difference between two sets of log-probabilities.
double MaxDifference(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t r = 0; r < a.size(); ++r) {
    REQUIRE(a[r].size() == b[r].size());
    for (size_t i = 0; i < a[r].size(); ++i) d = std::max(d, static_cast<double>(std::fabs(a[r][i] - b[r][i])));
  }
  return d;
}

// `troupe train` with model m served by two `troupe worker` processes (its two
// data-parallel learners), the second killed after two iterations.
struct KilledLearnerRun {
  int status = 0;
  std::string output, run;
};
KilledLearnerRun KillSecondLearner(const std::string& name, int port_offset, const std::string& on_worker_loss,
                                   int iterations, const std::vector<std::string>& extra) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(Port(port_offset));
  const std::string wf = WriteWorkflow(
      name, "runtime { endpoint: \"" + endpoint + "\" worker { model: \"m\" replicas: 2 } heartbeat_ms: 100 " +
                "worker_timeout_ms: 800 on_worker_loss: " + on_worker_loss + " }\n");
  KilledLearnerRun r;
  r.run = Temp("run-" + name);
  std::vector<std::string> args = {"train",  wf, "--out", r.run, "--quiet", "--no-eval", "--set",
                                   "trainer.iterations=" + std::to_string(iterations)};
  args.insert(args.end(), extra.begin(), extra.end());
  Process controller(args, Temp(name + "-controller.log"));
  Process w0({"worker", "--model", "m", "--replica", "0", "--connect", endpoint}, Temp(name + "-0.log"));
  Process w1({"worker", "--model", "m", "--replica", "1", "--connect", endpoint}, Temp(name + "-1.log"));
  REQUIRE(WaitFor([&] { return MetricLines(r.run, false).size() >= 2; }, 120));
  w1.Kill();
  r.status = controller.Wait(120);
  r.output = controller.Output();
  return r;
}

}  // namespace

TEST_CASE("the same seed gives identical metrics with in-process and tcp model workers", "[runtime][determinism]") {
  const auto [run_local, run_remote] = TrainLocalAndOverTcp("rl", kTiny, "m", 1, {"--no-eval"});
  const auto x = MetricLines(run_local, true), y = MetricLines(run_remote, true);
  REQUIRE(x.size() == 3);
  CHECK(x == y);
}

TEST_CASE("snapshots taken and played through a troupe worker over tcp give the same metrics as in-process",
          "[runtime][pools][determinism]") {
  // A third of team a is played by a snapshot of its model in most groups; snapshots every iteration.
  std::string pools = kTiny;
  const std::string model = "optimizer { lr: 0.01 }", role = "role { name: \"a\" seats: \"a*\" model: \"m\"";
  REQUIRE(pools.find(model) != std::string::npos);
  REQUIRE(pools.find(role) != std::string::npos);
  pools.insert(pools.find(model) + model.size(), " snapshots { every: 1 keep: 2 }");
  pools.insert(pools.find(role) + role.size(), " pool { share: 0.8 seat_share: 0.34 }");
  const auto [run_local, run_remote] = TrainLocalAndOverTcp("pools", pools, "m", 12, {"--no-eval"});
  const auto x = MetricLines(run_local, true), y = MetricLines(run_remote, true);
  REQUIRE(x.size() == 3);
  CHECK_THAT(x[2], Catch::Contains("\"pool/size/m\":2"));
  CHECK(x == y);
  CHECK(fs::exists(run_remote + "/snapshots/m/iter-000002/model-m.safetensors"));
}

TEST_CASE("hybrid distillation (stage 1 and 2) through a troupe worker over tcp gives the same metrics as in-process",
          "[runtime][hybrid][determinism]") {
  const auto [run_local, run_remote] = TrainLocalAndOverTcp(
      "hybrid", testing::HybridWidths(16, "latent_vectors: 2 stage1_steps: 3 stage2_steps: 4 batch: 8 eval_every: 2"),
      "wide", 6, {});
  // Lines after steps 2, 4 and 6 (stage 2 from step 4) and the last step, 7.
  const auto x = MetricLines(run_local, true), y = MetricLines(run_remote, true);
  REQUIRE(x.size() == 4);
  CHECK_THAT(x[3], Catch::Contains("\"stage\":2"));
  CHECK(x == y);
  const std::string trained = testing::ReadFile(run_local + "/eval_trained.json");
  CHECK_FALSE(trained.empty());
  CHECK(trained == testing::ReadFile(run_remote + "/eval_trained.json"));
}

TEST_CASE("a killed worker is detected within its timeout, reported, and the recording stays intact",
          "[runtime][faults]") {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(Port(2));
  const std::string wf =
      WriteWorkflow("kill", "runtime { endpoint: \"" + endpoint +
                                "\" worker { model: \"m\" } heartbeat_ms: 100 worker_timeout_ms: 1000 }\n");
  const std::string run = Temp("run-kill"), session = Temp("kill.session");
  Process controller(
      {"train", wf, "--out", run, "--quiet", "--no-eval", "--set", "trainer.iterations=500", "--record", session},
      Temp("kill-controller.log"));
  Process worker({"worker", "--model", "m", "--connect", endpoint}, Temp("kill-worker.log"));
  REQUIRE(WaitFor([&] { return MetricLines(run, false).size() >= 2; }, 120));
  worker.Kill();
  const auto killed = Clock::now();
  const int status = controller.Wait(30);
  const double detect_s = std::chrono::duration<double>(Clock::now() - killed).count();
  INFO(controller.Output());
  REQUIRE(status == 5);         // the exit status of a lost worker
  CHECK(detect_s < 1.0 + 3.0);  // worker_timeout_ms, plus the time to write the end of the session
  CHECK_THAT(controller.Output(), Catch::Contains("model worker m#0") && Catch::Contains("lost: no heartbeat"));

  SessionContents c = ReadSessionFile(session);
  CHECK(c.error.empty());
  REQUIRE(c.events.size() > 10);
  CHECK(c.events.front().has_run_start());
  bool lost = false;
  for (const auto& e : c.events) lost = lost || (e.has_worker() && e.worker().kind() == session::WorkerEvent::LOST);
  CHECK(lost);
  REQUIRE(c.events.back().has_run_end());
  CHECK(c.events.back().run_end().failed());
  CHECK_THAT(c.events.back().run_end().reason(), Catch::Contains("lost"));
}

TEST_CASE("with two replicas and on_worker_loss CONTINUE, losing one keeps the run going", "[runtime][c10d][faults]") {
  const std::string session = Temp("replicas.session");
  const KilledLearnerRun r = KillSecondLearner("replicas", 3, "CONTINUE", 8, {"--record", session});
  const std::string& run = r.run;
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(MetricLines(run, false).size() == 8);
  CHECK_THAT(r.output, Catch::Contains("model worker m#1"));
  SessionContents c = ReadSessionFile(session);
  bool lost = false;
  for (const auto& e : c.events) lost = lost || (e.has_worker() && e.worker().kind() == session::WorkerEvent::LOST);
  CHECK(lost);
  REQUIRE(c.events.back().has_run_end());
  CHECK_FALSE(c.events.back().run_end().failed());
}

TEST_CASE("two data-parallel learners end an update with the policy one learner gets on the whole batch",
          "[runtime][c10d]") {
  // GRPO with the KL term, and PPO (values, GAE, advantages whitened over both learners' records).
  const auto [credit, name] = GENERATE(table<std::string, std::string>(
      {{"credit { group_size: 4 }", "grpo"}, {"credit { estimator: PPO group_size: 4 }", "ppo"}}));
  TwoLearners t("dp-" + name, name == "grpo" ? 8 : 9, "trainer { minibatch: 8 epochs: 2 kl_coef: 0.05 }", "",
                [credit = credit](std::string& text) {
                  text.replace(text.find("credit { group_size: 4 }"), 24, credit);
                });
  REQUIRE(t.records.size() > 40);  // several minibatches of 8, each split between the learners
  // The policies compare by their log-probabilities of every response token.
  // (Parameters compare too, but one part's gradient is zero but for float
  // noise: the attention's key bias, to which softmax is blind. Adam turns
  // noise into full-sized steps whichever way it is summed, so the key bias
  // differs by ~lr between any two summation orders; the policy does not.)
  const std::vector<std::vector<float>> before = t.LoneLogProbs();

  const std::vector<ModelTrainStats> two = t.hub->Update(t.records);
  const ModelTrainStats whole = t.one->Update(t.records);
  REQUIRE(two.size() == 1);
  CHECK(two[0].learners == 2);  // and their parameter digests agreed, or Update would have thrown
  CHECK(whole.learners == 1);
  CHECK(two[0].steps == whole.steps);
  CHECK(two[0].tokens == whole.tokens);
  CHECK(two[0].loss == Approx(whole.loss).margin(1e-5));
  CHECK(two[0].entropy == Approx(whole.entropy).margin(1e-5));
  CHECK(two[0].kl == Approx(whole.kl).margin(1e-6));
  CHECK(two[0].value_loss == Approx(whole.value_loss).margin(1e-5));
  CHECK(two[0].grad_norm == Approx(whole.grad_norm).epsilon(1e-4));
  const std::vector<std::vector<float>> after = t.LearnerLogProbs();
  CHECK(MaxDifference(after, before) > 1e-2);  // the update moved the policy
  CHECK(MaxDifference(after, t.LoneLogProbs()) < 1e-4);

  // A supervised warm start, too.
  const std::vector<ModelTrainStats> sft = t.hub->Supervised(t.records, 5);
  const ModelTrainStats sft_whole = t.one->Supervised(t.records, 5);
  CHECK(sft[0].learners == 2);
  CHECK(sft[0].loss == Approx(sft_whole.loss).margin(1e-5));
  CHECK(MaxDifference(t.LearnerLogProbs(), t.LoneLogProbs()) < 1e-4);
}

TEST_CASE("a data-parallel learner killed mid-update leaves the survivor to take the update again, from where it began",
          "[runtime][c10d][faults]") {
  // One long update (60 passes over the batch): the kill lands inside it. A
  // small step, so that hundreds of them stay comparable between summation orders.
  TwoLearners t("dp-continue", 11, "trainer { minibatch: 8 epochs: 60 }",
                "heartbeat_ms: 100 worker_timeout_ms: 800 on_worker_loss: CONTINUE",
                [](std::string& text) { text.replace(text.find("lr: 0.01"), 8, "lr: 0.0003"); });
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    t.learners[1]->Kill();
  });
  const auto start = Clock::now();
  const std::vector<ModelTrainStats> st = t.hub->Update(t.records);
  killer.join();
  INFO("the update took " << std::chrono::duration<double>(Clock::now() - start).count() << " s");
  REQUIRE(t.hub->lost_workers() == 1);
  REQUIRE(t.hub->retaken_updates() == 1);  // the survivor failed its collective, went back, and took it alone
  CHECK(st[0].learners == 1);
  // It took no step twice: its policy is the one a lone learner gets.
  const ModelTrainStats whole = t.one->Update(t.records);
  CHECK(st[0].steps == whole.steps);
  CHECK(st[0].loss == Approx(whole.loss).margin(1e-4));
  CHECK(MaxDifference(t.LearnerLogProbs(), t.LoneLogProbs()) < 1e-3);
}

TEST_CASE("a data-parallel learner killed mid-run fails the run when on_worker_loss is FAIL", "[runtime][c10d][faults]") {
  const KilledLearnerRun r = KillSecondLearner("dp-fail", 10, "FAIL", 500, {});
  INFO(r.output);
  CHECK(r.status == 5);  // a lost worker, not a failed collective
  CHECK_THAT(r.output, Catch::Contains("model worker m#1") && Catch::Contains("lost"));
}

TEST_CASE("a controller names the workers it waits for, and gives up at the join timeout", "[runtime]") {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(Port(4));
  const std::string wf = WriteWorkflow(
      "nojoin", "runtime { endpoint: \"" + endpoint + "\" worker { model: \"m\" } join_timeout_ms: 1500 }\n");
  Process controller({"train", wf, "--out", Temp("run-nojoin"), "--quiet", "--no-eval"}, Temp("nojoin.log"));
  const int status = controller.Wait(30);
  INFO(controller.Output());
  CHECK(status == 3);
  CHECK_THAT(controller.Output(), Catch::Contains("troupe worker --model m --replica 0 --connect " + endpoint) &&
                                      Catch::Contains("never joined: m#0"));
}

TEST_CASE("troupe record follows a live run from outside and replay --summary reads it", "[runtime][events]") {
  const std::string publish = "tcp://127.0.0.1:" + std::to_string(Port(5));
  const std::string wf = WriteWorkflow("publish", "");
  const std::string session = Temp("recorded.session");
  Process recorder({"record", "--connect", publish, "--out", session, "--seconds", "120"}, Temp("recorder.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The run (3 short iterations) could end before the recorder's connection is
  // up: it waits for its subscriber.
  Process controller({"train", wf, "--out", Temp("run-publish"), "--quiet", "--no-eval", "--publish", publish,
                      "--await-subscriber", "30"},
                     Temp("publisher.log"));
  REQUIRE(controller.Wait(120) == 0);
  const int rec = recorder.Wait(30);
  INFO(recorder.Output());
  REQUIRE(rec == 0);
  CHECK_THAT(recorder.Output(), Catch::Contains("up to the run's end"));
  Process replay({"replay", session, "--summary"}, Temp("replay.log"));
  REQUIRE(replay.Wait(30) == 0);
  const std::string summary = replay.Output();
  INFO(summary);
  CHECK_THAT(summary, Catch::Contains("run: ") && Catch::Contains("iterations: 1..3") && Catch::Contains("message: ") &&
                          Catch::Contains("run end: 3 iterations"));
}

TEST_CASE("forward calls per tick do not grow with the number of concurrent episodes", "[runtime][batching]") {
  LoadedWorkflow loaded = ParseWorkflowText(kTiny, "tiny.textproto");
  CompiledWorkflow w = CompileWorkflow(loaded);
  WorkerHub hub(MakeHubSpec(w));
  Rollout rollout(w.rollout, hub);
  Rng rng(3);
  std::vector<double> per_tick;
  for (int episodes : {1, 8, 64}) {
    RolloutOptions o;
    o.episodes = episodes;
    o.group_size = episodes;
    RolloutBatch b = rollout.Run(o, rng);
    INFO(episodes << " episodes: " << b.forward_calls << " forward calls, " << b.generate_calls << " batches");
    // One batched request per model per tick, however many episodes...
    const double ticks = static_cast<double>(b.generate_calls);
    CHECK(ticks <= 3 * 10);  // 3 rounds of at most ~10 decision steps: independent of episodes
    per_tick.push_back(b.forward_calls / ticks);
  }
  // ...and each batch decodes at most max_words steps, whatever the batch size.
  CHECK(per_tick[2] <= per_tick[0] * 1.5);
  CHECK(per_tick[1] <= per_tick[0] * 1.5);
}

TEST_CASE("games stepped while the model answers the other wave play the same greedy episodes",
          "[runtime][batching][overlap]") {
  LoadedWorkflow loaded = ParseWorkflowText(kTiny, "tiny.textproto");
  CompiledWorkflow w = CompileWorkflow(loaded);
  WorkerHub hub(MakeHubSpec(w));  // the model answers on its worker's thread, as in a run
  Rollout rollout(w.rollout, hub);
  RolloutBatch runs[2];
  for (int overlap : {0, 1}) {
    RolloutOptions o;
    o.episodes = 12;
    o.group_size = 4;
    o.seed = 5;
    o.greedy = true;
    o.overlap_environment = overlap == 1;
    Rng rng(9);
    runs[overlap] = rollout.Run(o, rng);
  }
  const RolloutBatch &one = runs[0], &two = runs[1];
  REQUIRE(two.episodes.size() == one.episodes.size());
  for (size_t e = 0; e < one.episodes.size(); ++e) {
    INFO("episode " << e);
    CHECK(two.episodes[e].final_state == one.episodes[e].final_state);
    CHECK(two.episodes[e].metrics == one.episodes[e].metrics);
  }
  REQUIRE(two.records.size() == one.records.size());
  double reward[2] = {0, 0};
  for (size_t r = 0; r < one.records.size(); ++r) {
    reward[0] += one.records[r].reward;
    reward[1] += two.records[r].reward;
  }
  CHECK(reward[1] == Approx(reward[0]));
  // Two waves: two half-size batches a tick, each waited for only while the other wave's games had nothing to do.
  CHECK(two.generate_calls == 2 * one.generate_calls);
  CHECK(two.generate_seconds > 0.0);
}

TEST_CASE("forward calls per Sugarscape tick do not grow with the number of encounters", "[runtime][batching]") {
  // Every trader negotiates on one model; the same world with 6x the traders
  // has many more encounters a tick, all answered in the same batched requests.
  auto workflow = [](int population) {
    return R"(name: "market" seed: 4
game { name: "sugarscape" param { name: "preset" text: "seed_study" } param { name: "size" int: 20 }
       param { name: "population" int: )" +
           std::to_string(population) + R"( } param { name: "steps" int: 3 }
       param { name: "trade_mode" text: "negotiate" } }
model { name: "m" transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 96 } }
role { name: "t" seats: "trader*" model: "m" }
reward { level: TURN signal: "welfare_gain" }
)";
  };
  struct Counts {
    double encounters = 0, generate_calls = 0, forward_per_request = 0;
  };
  auto run = [&](int population) {
    CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(workflow(population), "market.textproto"));
    WorkerHub hub(MakeHubSpec(w));
    Rollout rollout(w.rollout, hub);
    Rng rng(3);
    RolloutOptions o;
    o.episodes = 4;
    o.group_size = 4;
    o.guided = true;
    RolloutBatch b = rollout.Run(o, rng);
    Counts c;
    for (const auto& e : b.episodes) c.encounters += e.metrics.at("encounters");
    c.generate_calls = static_cast<double>(b.generate_calls);
    c.forward_per_request = static_cast<double>(b.forward_calls) / c.generate_calls;
    return c;
  };
  const Counts few = run(20), many = run(120);
  INFO("encounters " << few.encounters << " vs " << many.encounters << "; requests " << few.generate_calls << " vs "
                     << many.generate_calls << "; forward calls per request " << few.forward_per_request << " vs "
                     << many.forward_per_request);
  REQUIRE(many.encounters >= 4 * few.encounters);
  // One request per decision step for all pairs of all worlds: at most 2 small-talk rounds,
  // an intent and 4 negotiation turns a tick, for 3 ticks.
  CHECK(many.generate_calls <= 3 * 7);
  CHECK(few.generate_calls <= 3 * 7);
  // And a request costs the same number of forward passes whatever its batch.
  CHECK(many.forward_per_request <= 1.5 * few.forward_per_request);
}

TEST_CASE("Ctrl-C stops a run after its iteration with a checkpoint and a closed session", "[runtime][signals]") {
  const std::string wf = WriteWorkflow("interrupt", "");
  const std::string run = Temp("run-interrupt"), session = Temp("interrupt.session");
  Process controller(
      {"train", wf, "--out", run, "--quiet", "--no-eval", "--set", "trainer.iterations=500", "--record", session},
      Temp("interrupt.log"));
  REQUIRE(WaitFor([&] { return MetricLines(run, false).size() >= 2; }, 120));
  controller.Signal(SIGINT);
  const int status = controller.Wait(60);
  INFO(controller.Output());
  REQUIRE(status == 0);
  CHECK_THAT(controller.Output(), Catch::Contains("interrupted: saving a checkpoint"));
  CHECK(fs::exists(run + "/checkpoints/latest"));
  SessionContents c = ReadSessionFile(session);
  CHECK(c.error.empty());
  REQUIRE(c.events.back().has_run_end());
  CHECK(c.events.back().run_end().reason() == "interrupted");
}

TEST_CASE("SIGKILL at random points of a run that checkpoints every iteration: resume always finds a complete one",
          "[runtime][checkpoint][faults]") {
  // Four episodes an iteration, and 16384 positions of width 128 (2M parameters that cost no
  // compute): much of each iteration is its checkpoint (26 MB, synced), so kills land in writes
  // often. Trials go on until three did (at most 30).
  const std::string wf = WriteWorkflow("sigkill", "");
  const std::string run = Temp("run-sigkill");
  const std::vector<std::string> sets = {"--set", "trainer.checkpoint_every=1", "--set",
                                         "trainer.episodes_per_iteration=4", "--set",
                                         "model[0].transformer.d_model=128", "--set", "model[0].transformer.max_len=16384"};
  Rng rng(2026);
  int last = 0, mid_write = 0, trials = 0;
  for (; trials < 30 && mid_write < 3; ++trials) {
    INFO("trial " << trials);
    std::vector<std::string> args = {"train", wf, "--out", run, "--quiet", "--no-eval", "--set",
                                     "trainer.iterations=100000"};
    args.insert(args.end(), sets.begin(), sets.end());
    if (FindCheckpoint(run)) args.push_back("--resume");
    // Killed at a random point after the run has published a checkpoint of its own (on a busy
    // machine the start alone can take seconds): kills land in the iterations and their writes.
    const fs::path latest = fs::path(run) / "checkpoints" / "latest";
    const std::string before = fs::exists(latest) ? testing::ReadFile(latest.string()) : "";
    Process controller(args, Temp("sigkill.log"));
    const auto deadline = Clock::now() + std::chrono::seconds(90);
    while (Clock::now() < deadline && (!fs::exists(latest) || testing::ReadFile(latest.string()) == before)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(rng.Uniform() * 2500)));
    controller.Kill();
    if (!fs::exists(run + "/checkpoints")) continue;
    for (const auto& e : fs::directory_iterator(run + "/checkpoints")) {
      mid_write += e.path().filename().string().rfind(".tmp-", 0) == 0;
    }
    std::vector<std::string> skipped;
    const auto found = FindCheckpoint(run, &skipped);
    if (!found) continue;  // killed before its first checkpoint
    CHECK(skipped.empty());  // a killed write never leaves a published checkpoint damaged
    CHECK(CheckpointProblem(*found).empty());
    const int iteration = std::stoi(testing::ReadFile(*found + "/state/iteration"));
    CHECK(iteration >= last);
    last = iteration;
  }
  REQUIRE(last > 0);
  INFO(mid_write << " of " << trials << " kills left a checkpoint half-written");
  CHECK(mid_write >= 1);  // the trials did kill writes
  // The last resume runs to an end two iterations on, its metrics one line per iteration.
  std::vector<std::string> args = {"train", wf, "--out", run, "--quiet", "--no-eval", "--resume", "--set",
                                   "trainer.iterations=" + std::to_string(last + 2)};
  args.insert(args.end(), sets.begin(), sets.end());
  Process finish(args, Temp("sigkill-finish.log"));
  const int status = finish.Wait(120);
  INFO(finish.Output());
  REQUIRE(status == 0);
  CHECK(MetricLines(run, false).size() == static_cast<size_t>(last + 2));
}

TEST_CASE("a worker hands out its parameters as an attachment and loads parameters sent the same way", "[runtime]") {
  const std::string endpoint = UniqueInprocEndpoint("weights-test");
  auto router = FramedSocket::Bind(zmq::socket_type::router, endpoint);
  std::atomic<bool> stop{false};
  WorkerOptions o;
  o.endpoint = endpoint;
  o.model = "m";
  std::thread worker([&] { ServeModel(o, &stop); });
  // Replies from the worker's request socket (its heartbeats come from "m#0/hb").
  wire::Envelope got;
  Attachment bulk;
  auto reply = [&] {
    std::string who;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      if (router->Receive(&got, std::chrono::milliseconds(200), &who, &bulk) && who == "m#0") return true;
    }
    return false;
  };
  REQUIRE(reply());
  REQUIRE(got.has_hello());
  // The worker is sent its model's spec, not the workflow.
  const CompiledWorkflow tiny = CompileWorkflow(ParseWorkflowText(kTiny, "t"));
  wire::Envelope welcome;
  *welcome.mutable_welcome()->mutable_spec() = MakeServeSpec(tiny, 0);
  router->Send(welcome, "m#0");

  auto other = ParseWorkflowText(kTiny, "tiny.textproto");
  other.proto.set_seed(99);
  const std::string own = ModelServer(MakeServeSpec(tiny, 0)).SaveWeights();
  const std::string theirs = ModelServer(MakeServeSpec(CompileWorkflow(other), 0)).SaveWeights();
  REQUIRE(own != theirs);

  wire::Envelope get;
  get.set_request_id(1);
  get.mutable_weights()->set_get(true);
  router->Send(get, "m#0");
  REQUIRE(reply());
  CHECK(got.has_weights());
  CHECK(bulk.view() == own);

  wire::Envelope set;
  set.set_request_id(2);
  set.mutable_weights();
  router->SendWithAttachment(set, theirs, "m#0");
  REQUIRE(reply());
  CHECK(got.has_done());
  router->Send(get, "m#0");
  REQUIRE(reply());
  CHECK(bulk.view() == theirs);

  set.set_request_id(3);  // nothing attached: refused with a reason, and the worker goes on
  router->Send(set, "m#0");
  REQUIRE(reply());
  CHECK_THAT(got.failure().message(), Catch::Contains("without the parameters attached"));

  wire::Envelope bye;
  bye.mutable_shutdown();
  router->Send(bye, "m#0");
  worker.join();
}

TEST_CASE("a supervised warm start sent to the worker in parts counts every step",
          "[runtime][sft]") {
  // One request for all steps of a large model's warm start outlived request_timeout_ms
  // (the worker was declared lost while it trained); the hub now sends them in parts.
  CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(kTiny, "tiny.textproto"));
  WorkerHub hub(MakeHubSpec(w));
  Rollout rollout(w.rollout, hub);
  Rng rng(5);
  RolloutOptions o;
  o.episodes = 4;
  o.group_size = 4;
  const std::vector<CallRecord> demos = rollout.Run(o, rng).records;
  REQUIRE_FALSE(demos.empty());
  const std::vector<ModelTrainStats> st = hub.Supervised(demos, 25);
  REQUIRE(st.size() == 1);
  CHECK(st[0].steps == 25);
  CHECK(st[0].records > 0);
  CHECK(std::isfinite(st[0].loss));
}
