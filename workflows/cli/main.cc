// The `troupe` command line: train, eval, validate, worker, record, replay,
// keys. Only this file catches troupe's errors, prints them and chooses the
// exit status.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <google/protobuf/text_format.h>

#include "comms/curve.h"
#include "comms/event_stream.h"
#include "comms/session_file.h"
#include "core/models/checkpoint.h"
#include "core/base/errors.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/run/evaluate.h"
#include "workflows/run/hybrid_run.h"
#include "workflows/runtime/model_worker.h"
#include "workflows/run/train_run.h"
#include "workflows/runtime/worker_hub.h"

namespace {

using troupe::CompiledWorkflow;

volatile sig_atomic_t g_interrupted = 0;    // troupe record: stop recording
std::atomic<bool> g_stop_training{false};  // troupe train: stop after this iteration

const char* kUsage = R"(troupe: define multi-agent workflows in config, co-train agent teams, evaluate them.

usage: troupe <command> [options]

commands:
  train FILE      train the workflow's models; writes a run folder
  eval FILE       evaluate trained models from a checkpoint
  validate FILE   check a workflow file and describe it (exit 0 valid, 1 invalid)
  worker          serve one model of a running `troupe train` from this process
  record          write the session events of a running training to a file
  replay FILE     say what a recorded session holds
  keys            make CurveZMQ key files for tcp endpoints off this host
  help [COMMAND]  this text, or a command's options

`troupe help train` lists train's options, and so on.
Exit status: 0 done, 1 config error, 2 usage, 3 troupe error, 4 internal error,
5 a model worker was lost.
)";

const char* kWorkerUsage = R"(usage: troupe worker --model NAME --connect ENDPOINT [--replica N] [--keys DIR]

Serves model NAME (its generation and training updates) for the controller at
ENDPOINT (tcp://HOST:PORT or ipc://PATH), which must declare it in its
workflow's runtime section:  runtime { endpoint: "tcp://127.0.0.1:5555"
worker { model: "NAME" replicas: 1 } }. The controller sends the resolved
workflow; the worker builds the same model. It exits when the run ends.
  --replica N   which replica of the model this is (default 0)
  --keys DIR    CurveZMQ keys (from `troupe keys`): needed when the controller uses them
)";

const char* kRecordUsage = R"(usage: troupe record --connect ENDPOINT --out FILE [--seconds S] [--keys DIR]

Subscribes to the session events a `troupe train --publish ENDPOINT` publishes
and writes them to FILE (checksummed records; readable up to the last complete
record even if this process is killed). Stops at the run's end, after S
seconds, or on Ctrl-C.
)";

const char* kReplayUsage = R"(usage: troupe replay FILE [--summary] [--events N]

  --summary   what the session holds: run, iterations, events by kind, messages,
              workers, last metrics, whether it ended (default)
  --events N  also print the first N events in protobuf text format
)";

const char* kKeysUsage = R"(usage: troupe keys --out DIR

Writes server.secret, server.public, client.secret and client.public (Z85
CurveZMQ keys). Give the controller `runtime { keys_dir: "DIR" }` and workers
`--keys DIR` (copy client.* and server.public to the worker's host); binding a
tcp endpoint that is not loopback requires them, and peers without an admitted
client key are refused.
)";

const char* kTrainUsage = R"(usage: troupe train FILE [--out DIR] [--seed N] [--set field.path=value ...] [--resume] [--quiet]
                    [--publish ENDPOINT [--await-subscriber S]] [--record FILE]

  --out DIR      run folder (default runs/<workflow name>-<date>-<time>)
  --seed N       overrides the workflow's seed
  --set P=V      overrides one field of the workflow, e.g. --set trainer.iterations=20
                 or --set model[0].transformer.d_model=32 (repeatable)
  --resume       continue the run in --out from its latest checkpoint, exactly
  --quiet        no progress line
  --no-eval      skip the before/after evaluation table
  --publish E    publish session events on E (e.g. tcp://127.0.0.1:5556) for
                 troupe-view or `troupe record`; a slow subscriber never slows the run
  --await-subscriber S
                 with --publish: wait up to S seconds for a subscriber before the
                 run starts, so a viewer or recorder started first sees all of it
  --record FILE  write the session events to FILE (read it with `troupe replay`)

Ctrl-C stops after the current iteration with a checkpoint (continue with
--resume); a second Ctrl-C stops at once.

The run folder holds workflow.resolved.textproto, metrics.jsonl (one JSON object
per iteration), TensorBoard event files, eval_untrained.json, eval_trained.json
and checkpoints/.
)";

const char* kEvalUsage = R"(usage: troupe eval FILE --checkpoint DIR [--episodes N] [--json] [--greedy] [--seed N] [--set P=V ...]

  --checkpoint DIR  a run folder or one of its checkpoints/iter-* folders
  --episodes N      episodes to play (default: the workflow's trainer.eval_episodes)
  --json            print one JSON object (episodes, scores, cooperation, invalid_outputs, ...)
  --greedy          pick the most likely token instead of sampling
  --show N          also print the first N episodes as the game draws them
)";

const char* kValidateUsage = R"(usage: troupe validate FILE [--set P=V ...]

Parses and validates the whole workflow (schema, roles, seats, models, sharing,
channels, rewards, graph) and prints a summary. Errors read file:line:col: message.
)";

struct Args {
  std::string command;
  std::string file;
  std::string out;
  std::string checkpoint;
  std::vector<std::string> sets;
  std::string connect, model, keys, publish, record;
  long long seed = -1;
  int episodes = 0;
  int show = 0;
  int replica = 0;
  int events = 0;
  double seconds = 0;
  double await_subscriber = 0;
  bool json = false, greedy = false, resume = false, quiet = false, no_eval = false, help = false, summary = false;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Args Parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> v(argv + 1, argv + argc);
  auto value = [&](size_t& i) -> std::string {
    if (i + 1 >= v.size()) throw UsageError(v[i] + " needs a value");
    return v[++i];
  };
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string& s = v[i];
    try {
      if (s == "-h" || s == "--help") a.help = true;
      else if (s == "--out") a.out = value(i);
      else if (s == "--checkpoint") a.checkpoint = value(i);
      else if (s == "--set") a.sets.push_back(value(i));
      else if (s == "--seed") a.seed = std::stoll(value(i));
      else if (s == "--episodes") a.episodes = std::stoi(value(i));
      else if (s == "--json") a.json = true;
      else if (s == "--show") a.show = std::stoi(value(i));
      else if (s == "--greedy") a.greedy = true;
      else if (s == "--resume") a.resume = true;
      else if (s == "--quiet") a.quiet = true;
      else if (s == "--no-eval") a.no_eval = true;
      else if (s == "--connect") a.connect = value(i);
      else if (s == "--model") a.model = value(i);
      else if (s == "--replica") a.replica = std::stoi(value(i));
      else if (s == "--keys") a.keys = value(i);
      else if (s == "--publish") a.publish = value(i);
      else if (s == "--record") a.record = value(i);
      else if (s == "--summary") a.summary = true;
      else if (s == "--events") a.events = std::stoi(value(i));
      else if (s == "--seconds") a.seconds = std::stod(value(i));
      else if (s == "--await-subscriber") a.await_subscriber = std::stod(value(i));
      else if (!s.empty() && s[0] == '-') throw UsageError("unknown option " + s);
      else if (a.command.empty()) a.command = s;
      else if (a.file.empty()) a.file = s;
      else throw UsageError("unexpected argument " + s);
    } catch (const std::invalid_argument&) {
      throw UsageError(s + " needs a number");
    }
  }
  return a;
}

CompiledWorkflow Load(const Args& a) {
  if (a.file.empty()) throw UsageError(a.command + " needs a workflow FILE");
  troupe::LoadedWorkflow loaded = troupe::LoadWorkflowFile(a.file);
  for (const auto& s : a.sets) troupe::ApplyOverride(loaded, s);
  if (a.seed >= 0) loaded.proto.set_seed(static_cast<uint64_t>(a.seed));
  return troupe::CompileWorkflow(loaded);
}

std::string DefaultOut(const CompiledWorkflow& w) {
  char stamp[32];
  std::time_t t = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&t));
  std::string name = w.proto.name().empty() ? std::filesystem::path(w.file).stem().string() : w.proto.name();
  return "runs/" + name + "-" + stamp;
}

int Train(const Args& a) {
  CompiledWorkflow w = Load(a);
  std::cout << troupe::DescribeWorkflow(w) << "\n";
  troupe::TrainOptions o;
  if (a.resume && a.out.empty()) throw UsageError("--resume needs --out DIR (the run to continue)");
  o.out_dir = a.out.empty() ? DefaultOut(w) : a.out;
  o.resume = a.resume;
  o.progress = !a.quiet;
  o.final_eval = !a.no_eval;
  o.publish = a.publish;
  o.await_subscriber_s = a.await_subscriber;
  o.record = a.record;
  // Ctrl-C (or SIGTERM) ends the run after the current iteration, with a
  // checkpoint and a closed session; a second one stops at once.
  o.stop = &g_stop_training;
  auto on_signal = [](int sig) {
    if (g_stop_training.exchange(true)) {
      signal(sig, SIG_DFL);
      raise(sig);
    }
  };
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  std::cout << "run folder: " << o.out_dir << "\n";
  if (w.hybrid.enabled) {
    troupe::HybridResult h = troupe::HybridTrain(w, o, std::cout);
    std::cout << "trained " << h.steps << " steps in " << static_cast<int>(h.seconds) << " s\n\n"
              << troupe::HybridTable(h) << "(means over " << w.run.eval_episodes << " evaluation episodes, greedy)\n";
    return 0;
  }
  troupe::TrainResult r = troupe::Train(w, o, std::cout);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::cout << "trained " << r.iterations << " iterations in " << static_cast<int>(r.seconds) << " s; peak memory "
            << usage.ru_maxrss / 1024 << " MiB\n";
  if (r.before && r.after) {
    std::cout << "\n" << troupe::ResultTable(r);
    std::cout << "(means over " << r.after->episodes << " evaluation episodes each, sampled policy)\n";
  }
  return 0;
}

int Eval(const Args& a) {
  if (a.checkpoint.empty()) throw UsageError("eval needs --checkpoint DIR");
  CompiledWorkflow w = Load(a);
  troupe::SetTorchThreads(w.run.threads);
  auto ckpt = troupe::FindCheckpoint(a.checkpoint);
  if (!ckpt) throw troupe::CheckpointError("no checkpoint in " + a.checkpoint);
  troupe::WorkerHub pool(w, nullptr, &std::cerr);
  troupe::RunState state = troupe::LoadCheckpoint(*ckpt, [&](const std::string& d) { pool.Load(d, false); });
  if (state["vocab"] != w.vocab.Fingerprint()) {
    throw troupe::CheckpointError("checkpoint " + *ckpt + " was trained with another vocabulary (game or roles differ)");
  }
  const int episodes = a.episodes > 0 ? a.episodes : w.run.eval_episodes;
  troupe::EvalResult r = troupe::Evaluate(w, pool, episodes, w.seed + 1, a.greedy, w.trainer.temperature, a.show);
  for (const auto& text : r.shown) std::cout << text << "\n";
  if (a.json) {
    std::cout << troupe::EvalJson(r) << "\n";
  } else {
    std::cout << "checkpoint " << *ckpt << ", " << episodes << " episodes" << (a.greedy ? " (greedy)" : "") << "\n";
    for (const auto& [k, v] : r.metrics) std::cout << "  " << k << " = " << v << "\n";
    if (auto best = troupe::BestAchievable(w)) {
      std::cout << "  best achievable " << best->signal << " = " << best->value << "\n";
    }
  }
  return 0;
}


int Worker(const Args& a) {
  if (a.model.empty() || a.connect.empty()) throw UsageError("worker needs --model NAME and --connect ENDPOINT");
  troupe::WorkerOptions o;
  o.endpoint = a.connect;
  o.model = a.model;
  o.replica = a.replica;
  o.security.keys_dir = a.keys;
  const std::string why = troupe::ServeModel(o, nullptr, &std::cout);
  std::cout << "worker " << troupe::WorkerIdentity(a.model, a.replica) << ": " << why << "\n";
  return 0;
}

int Record(const Args& a) {
  if (a.connect.empty() || a.out.empty()) throw UsageError("record needs --connect ENDPOINT and --out FILE");
  troupe::SocketOptions so;
  so.security.keys_dir = a.keys;
  so.receive_hwm = 100000;
  troupe::EventSubscriber sub(a.connect, so);
  troupe::SessionWriter writer(a.out);
  signal(SIGINT, [](int) { g_interrupted = 1; });
  signal(SIGTERM, [](int) { g_interrupted = 1; });
  std::cout << "recording " << a.connect << " into " << a.out << "\n" << std::flush;
  const auto t0 = std::chrono::steady_clock::now();
  troupe::session::Event e;
  bool ended = false;
  while (!g_interrupted && !ended) {
    if (a.seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > a.seconds) break;
    if (!sub.Next(&e, std::chrono::milliseconds(200))) continue;
    ended = e.has_run_end();
    writer.Write(e, ended || e.has_metrics() || e.has_run_start() || e.has_worker());
  }
  writer.Flush();
  std::cout << "recorded " << writer.written() << " events" << (ended ? " up to the run's end" : "")
            << "; missed " << sub.missed() << " (publisher drops or joined late)\n";
  return 0;
}

int Replay(const Args& a) {
  if (a.file.empty()) throw UsageError("replay needs a session FILE");
  troupe::SessionContents c = troupe::ReadSessionFile(a.file);
  std::cout << troupe::SummarizeSession(c);
  for (int i = 0; i < a.events && i < static_cast<int>(c.events.size()); ++i) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(c.events[i], &text);
    std::cout << "--- event " << i << "\n" << text;
  }
  return 0;
}

int Keys(const Args& a) {
  if (a.out.empty()) throw UsageError("keys needs --out DIR");
  std::cout << "wrote " << troupe::WriteCurveKeys(a.out) << "\n";
  return 0;
}

int Validate(const Args& a) {
  CompiledWorkflow w = Load(a);
  std::cout << troupe::DescribeWorkflow(w) << "\nvalid\n";
  return 0;
}

const char* UsageOf(const std::string& command) {
  if (command == "train") return kTrainUsage;
  if (command == "eval") return kEvalUsage;
  if (command == "validate") return kValidateUsage;
  if (command == "worker") return kWorkerUsage;
  if (command == "record") return kRecordUsage;
  if (command == "replay") return kReplayUsage;
  if (command == "keys") return kKeysUsage;
  return kUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // Training allocates and frees the same large activation buffers every step;
  // keeping them on the heap (no mmap/munmap per tensor) avoids a page fault storm.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  Args a;
  try {
    a = Parse(argc, argv);
    if (a.command.empty() || a.command == "help") {
      std::cout << UsageOf(a.file);
      return a.command.empty() && !a.help ? 2 : 0;
    }
    if (a.help) {
      std::cout << UsageOf(a.command);
      return 0;
    }
    if (a.command == "train") return Train(a);
    if (a.command == "eval") return Eval(a);
    if (a.command == "validate") return Validate(a);
    if (a.command == "worker") return Worker(a);
    if (a.command == "record") return Record(a);
    if (a.command == "replay") return Replay(a);
    if (a.command == "keys") return Keys(a);
    throw UsageError("unknown command '" + a.command + "'");
  } catch (const UsageError& e) {
    std::cerr << "troupe: " << e.what() << "\n(see troupe --help)\n";
    return 2;
  } catch (const troupe::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const troupe::WorkerLostError& e) {
    std::cerr << "troupe: " << e.what() << "\n";
    return 5;
  } catch (const troupe::Error& e) {
    std::cerr << "troupe: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "troupe: internal error: " << e.what() << "\n";
    return 4;
  }
}
