// The `troupe` command line (CLI11, options per command): train, eval,
// validate, run, worker, record, replay, keys, view. Only this file catches troupe's errors, prints them and chooses the
// exit status.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include <google/protobuf/text_format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "comms/curve.h"
#include "comms/event_stream.h"
#include "comms/session_file.h"
#include "core/base/errors.h"
#include "core/base/file_io.h"
#include "core/base/heap_tuning.h"
#include "core/checkpoint.h"
#include "core/rng.h"
#include "games/qa/factbook_qa.h"
#include "games/qa/reading_documents.h"
#include "workflows/cli/data_commands.h"
#include "workflows/cli/text_commands.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/pretrain_config.h"
#include "workflows/config/serve_specs.h"
#include "workflows/config/workflow_reference.h"
#include "workflows/report/session_events.h"
#include "workflows/run/evaluate.h"
#include "workflows/run/experiment.h"
#include "workflows/run/pretrain_run.h"
#include "workflows/run/simulate_run.h"
#include "workflows/run/train_run.h"
#include "workflows/runtime/model_worker.h"
#include "workflows/runtime/worker_hub.h"

namespace {

using troupe::CompiledWorkflow;

volatile sig_atomic_t g_interrupted = 0;   // troupe record: stop recording
std::atomic<bool> g_stop_training{false};  // troupe train: stop after this iteration

const char* kUsage = R"(`troupe help train` (or `troupe train --help`) lists train's options, and so on;
an option that does not apply to a command is an error. Every command takes
--quiet (log warnings and errors only) and --verbose (debug messages too).
Exit status: 0 done, 1 config error, 2 usage, 3 troupe error, 4 internal error,
5 a model worker was lost.
)";

const char* kPretrainUsage = R"(usage: troupe pretrain FILE [--out DIR] [--resume] [--device D] [--set FIELD=VALUE]... [--seed N]

Pretrains the workflow's one model (llama or gpt2) on real text (its pretrain { }
section: corpora, tokenizer, sequence length, batch, passes). The run folder
holds the resolved workflow, the learnt tokenizer, metrics.jsonl, TensorBoard
events and checkpoints; at the end, model/ is a Hugging Face folder
(config.json, model.safetensors, tokenizer.json) that workflows load with
model { hf_dir: "DIR/model" }, summary.json has the held-out perplexity beside
unigram and bigram baselines, and samples.txt greedy continuations. Ctrl-C
saves a checkpoint; --resume continues. The corpora come from
scripts/fetch_data.sh (scripts/setup.sh runs it).
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

const char* kReferenceUsage = R"(usage: troupe reference

Prints the workflow file reference in Markdown: every field of the schema with
its type, default and comment (docs/reference/workflow.md is this output).
)";

const char* kKeysUsage = R"(usage: troupe keys --out DIR

Writes server.secret, server.public, client.secret and client.public (Z85
CurveZMQ keys). Give the controller `runtime { keys_dir: "DIR" }` and workers
`--keys DIR` (copy client.* and server.public to the worker's host); binding a
tcp endpoint that is not loopback requires them, and peers without an admitted
client key are refused.
)";

const char* kTrainUsage =
    R"(usage: troupe train FILE [--out DIR] [--seed N] [--set field.path=value ...] [--resume] [--quiet]
                    [--no-eval] [--publish ENDPOINT [--await-subscriber S]] [--record FILE]

  --out DIR      run folder (default runs/<workflow name>-<date>-<time>)
  --seed N       overrides the workflow's seed
  --set P=V      overrides one field of the workflow, e.g. --set trainer.iterations=20
                 or --set model[0].transformer.d_model=32 (repeatable)
  --resume       continue the run in --out from its latest checkpoint, exactly
  --quiet        no progress line; log warnings and errors only
  --verbose      log debug messages too
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

const char* kEvalUsage =
    R"(usage: troupe eval FILE [--checkpoint DIR] [--episodes N] [--dataset F.jsonl] [--json] [--greedy] [--show N]
                   [--episodes-out F.jsonl] [--persuasion] [--record F] [--seed N] [--set P=V ...]

  --checkpoint DIR  a run folder or one of its checkpoints/iter-* folders; may be left
                    out when every model starts trained (init_from, hf_dir) or is frozen
  --episodes N      episodes to play (default: the workflow's trainer.eval_episodes)
  --json            print one JSON object (episodes, scores, cooperation, invalid_outputs, ...)
  --greedy          pick the most likely token instead of sampling (a workflow with
                    trainer.greedy_eval always does)
  --show N          also print the first N episodes as the game draws them
  --persuasion      also ask every vote again (twice) as if the voter had heard no message:
                    persuadability/<role> is the share of votes following the teammates'
                    recommendation where it differed from the unheard vote, and
                    persuasion_chance/<role> how often the second unheard vote lands on it
  --record F        write the evaluation's session events to F (troupe-view shows its
                    first episodes' deliberations, with persuaded votes marked)
  --dataset F.jsonl pipelines: the evaluation questions (a QA task's test split by default;
                    any file in the QA record shape: id, question, answers, ...;
                    factbook_qa:reworded: the test questions worded by hand); all of them
                    unless --episodes says how many
  --episodes-out F.jsonl  also write each episode's metrics, one JSON line each, as
                    `troupe train` writes eval_*.episodes.jsonl; with a dataset, episode i
                    is its question i, so two evaluations pair up question by question
)";

const char* kValidateUsage = R"(usage: troupe validate FILE [--seed N] [--set P=V ...]

Parses and validates the whole workflow (schema, roles, seats, models, sharing,
channels, rewards, graph) and prints a summary. Errors read file:line:col: message.
)";

const char* kExperimentUsage = R"(usage: troupe experiment FILE [--out DIR] [--jobs N]

Runs an experiment file (an experiment { } section alone: a workflow, overrides
for every cell, axes whose values override more, training seeds, evaluation
games, metrics, a baseline cell): in every cell of the grid and for every
training seed, trains the workflow (unless train: false) and evaluates it on
the same games as every other cell. Each cell and seed is a folder under
DIR/cells/; one whose evaluation is written is kept, so running the same
command again goes on where a stopped experiment stopped. At the end:
DIR/results.jsonl, DIR/results.md (means with 95% bootstrap intervals over
games and training seeds; differences paired game by game against the
baseline) and DIR/plots/METRIC.png (a metric against plot_x with interval
bars, one line per value of plot_lines; drawn by gnuplot, whose .gp scripts
stay beside them to restyle). Ctrl-C stops the training at hand after its
current iteration, with a checkpoint; run the command again to go on.
  --out DIR   the experiment's folder (default runs/<experiment name>)
  --jobs N    cells and seeds side by side, each in a process of its own (default 1)
)";

const char* kRunUsage = R"(usage: troupe run FILE [--steps N] [--seeds K] [--out DIR] [--json] [--record F] [--publish E]
                  [--seed N] [--set P=V ...]

Plays the workflow without training: scripted seats, or a game that runs by its
own rules (Sugarscape), for K seeds (the workflow's seed, then the next ones).
Each seed's line gives its ticks, time and the game's headline figures; with
several seeds a table gives each figure's mean and 95% interval. --out writes
metrics.jsonl (every tick's episode metrics, with seed and step),
plots/METRIC.png (one line per seed) and summary.json. --json prints one JSON
object per seed (seed, steps, seconds and every episode metric) instead.
--record / --publish send session events (troupe-view, troupe replay): each
seed an iteration of one episode, its state after every tick.
)";

struct Args {
  std::string command;
  std::string file;
  std::string out;
  std::string checkpoint;
  std::string dataset;  // eval: a question file for a pipeline task's evaluation set
  std::string device;   // pretrain: where the model trains (overrides the workflow's model device)
  std::vector<std::string> sets;
  std::string connect, model, keys, publish, record;
  long long seed = -1;
  int episodes = 0;
  int show = 0;
  int replica = 0;
  int steps = 0, seeds = 1;
  int jobs = 1;
  std::string only;  // experiment: "CELL:SEED", what a job runs
  int events = 0;
  double seconds = 0;
  double await_subscriber = 0;
  bool persuasion = false;
  std::string episodes_out;  // eval: each episode's metrics as JSON lines
  bool json = false, greedy = false, resume = false, quiet = false, verbose = false, no_eval = false, summary = false;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

CompiledWorkflow Load(const Args& a) {
  troupe::LoadedWorkflow loaded = troupe::LoadWorkflowFile(a.file);
  for (const auto& s : a.sets) troupe::ApplyOverride(loaded, s);
  if (a.seed >= 0) loaded.proto.set_seed(static_cast<uint64_t>(a.seed));
  if (!a.dataset.empty()) {
    // --dataset: the pipeline task's evaluation questions come from this file.
    if (!loaded.proto.has_pipeline()) throw UsageError("--dataset applies to pipeline workflows; " + a.file + " plays a game");
    troupe::config::Param* p = nullptr;
    for (auto& given : *loaded.proto.mutable_pipeline()->mutable_param()) {
      if (given.name() == "eval_file") p = &given;
    }
    if (p == nullptr) p = loaded.proto.mutable_pipeline()->add_param();
    p->set_name("eval_file");
    p->set_text(a.dataset);
  }
  return troupe::CompileWorkflow(loaded);
}

std::string DefaultOut(const troupe::config::Workflow& proto, const std::string& file) {
  char stamp[32];
  std::time_t t = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&t));
  std::string name = proto.name().empty() ? std::filesystem::path(file).stem().string() : proto.name();
  return "runs/" + name + "-" + stamp;
}
std::string DefaultOut(const CompiledWorkflow& w) { return DefaultOut(w.proto, w.file); }

// Ctrl-C (or SIGTERM) ends a run after the current step, with a checkpoint;
// a second one stops at once.
void StopOnSignals() {
  auto on_signal = [](int sig) {
    if (g_stop_training.exchange(true)) {
      signal(sig, SIG_DFL);
      raise(sig);
    }
  };
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
}

int Pretrain(const Args& a) {
  troupe::LoadedWorkflow loaded = troupe::LoadWorkflowFile(a.file);
  for (const auto& s : a.sets) troupe::ApplyOverride(loaded, s);
  if (a.seed >= 0) loaded.proto.set_seed(static_cast<uint64_t>(a.seed));
  if (!a.device.empty()) {
    for (auto& model : *loaded.proto.mutable_model()) model.set_device(a.device);
  }
  const troupe::CompiledPretrain w = troupe::CompilePretrain(loaded);
  if (a.resume && a.out.empty()) throw UsageError("--resume needs --out DIR (the run to continue)");
  troupe::PretrainOptions o;
  o.out_dir = a.out.empty() ? DefaultOut(w.proto, w.file) : a.out;
  o.resume = a.resume;
  o.progress = !a.quiet;
  o.stop = &g_stop_training;
  if (!w.unseen_questions.empty()) o.unseen_factbook_pages = troupe::qa::UnseenFactbookPages(w.unseen_questions);
  if (w.reading_share > 0) {
    const std::set<std::string> left_out = o.unseen_factbook_pages.value_or(std::set<std::string>{});
    troupe::qa::ReadingDocumentOptions reading = troupe::qa::SequenceReadingOptions(
        troupe::Rng::Mix(w.seed, 0x5245), w.seq_len, w.reading_countries, w.reading_short_passages,
        w.reading_fact_share);
    reading.left_out_pages = left_out;
    std::vector<troupe::qa::ReadingDocumentOptions> kinds = {reading};
    if (w.first_lesson_steps > 0) {
      // The first lesson's: the easiest form, one country with short passages, drawn apart from the mix's.
      kinds.push_back(troupe::qa::SequenceReadingOptions(troupe::Rng::Mix(w.seed, 0x4C45), w.seq_len, 1, true, 0.0));
      kinds.back().left_out_pages = left_out;
    }
    auto sources = troupe::qa::FactbookReadingDocuments(kinds);
    o.reading_document = std::move(sources[0]);
    if (w.first_lesson_steps > 0) o.first_lesson_document = std::move(sources[1]);
  }
  StopOnSignals();
  std::cout << "run folder: " << o.out_dir << "\n";
  const troupe::PretrainResult r = troupe::Pretrain(w, o, std::cout);
  return r.finished || g_stop_training ? 0 : 3;
}

int Experiment(const Args& a) {
  // A --jobs child runs one cell of a grid its parent compiled whole.
  const troupe::CompiledExperiment x = troupe::CompileExperiment(troupe::LoadWorkflowFile(a.file), a.only.empty());
  troupe::ExperimentOptions o;
  o.out_dir = a.out.empty() ? "runs/" + x.name : a.out;
  o.jobs = a.jobs;
  o.progress = !a.quiet;
  // The running image itself, not the path it was started from: a rebuild
  // during a long grid replaces that file, and cells started later would run
  // other code than the cells before them.
  o.self = "/proc/self/exe";
  o.stop = &g_stop_training;
  if (!a.only.empty()) {
    const size_t colon = a.only.find(':');
    if (colon == std::string::npos) throw UsageError("--only takes CELL:SEED");
    o.only_cell = std::stoi(a.only.substr(0, colon));
    o.only_seed = std::stoi(a.only.substr(colon + 1));
  }
  StopOnSignals();
  if (o.only_cell < 0) std::cout << "experiment folder: " << o.out_dir << "\n";
  const troupe::ExperimentResult r = troupe::RunExperiment(x, o, std::cout);
  if (o.only_cell >= 0) return r.ran == 1 ? 0 : 3;
  if (r.finished) {
    std::cout << "\n" << r.table << "\n(" << r.ran << " ran, " << r.kept << " kept; " << o.out_dir
              << "/results.md, results.jsonl, plots/)\n";
    return 0;
  }
  std::cout << r.ran << " ran, " << r.kept << " kept, " << r.failed << " failed"
            << (g_stop_training ? "; stopped" : "") << ": run the same command to go on\n";
  return r.failed > 0 ? 3 : 0;
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
  StopOnSignals();
  std::cout << "run folder: " << o.out_dir << "\n";
  troupe::TrainResult r = troupe::Train(w, o, std::cout);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::cout << "trained " << r.iterations << (w.hybrid() ? " steps" : " iterations") << " in "
            << static_cast<int>(r.seconds) << " s; peak memory " << usage.ru_maxrss / 1024 << " MiB\n";
  if (r.before && r.after) {
    std::cout << "\n" << troupe::ResultTable(r);
    std::cout << "(means over " << r.after->episodes << " evaluation episodes each, +- the half-width of the 95% "
              << "interval over episodes; " << (w.hybrid() || w.run.greedy_eval ? "greedy" : "sampled policy") << ")\n";
  }
  return 0;
}

int Eval(const Args& a) {
  CompiledWorkflow w = Load(a);
  troupe::SetTorchThreads(w.run.threads);
  // Without a checkpoint, a model that trains must start trained (init_from, a Hugging Face folder): otherwise
  // the checkpoint was most likely forgotten. A frozen model plays as the workflow makes it.
  if (a.checkpoint.empty()) {
    for (const auto& m : w.models) {
      if (m.init == nullptr && m.hf_dir.empty() && !m.frozen) {
        throw UsageError("troupe eval: --checkpoint is required: model '" + m.name +
                         "' starts untrained (no init_from, no hf_dir, not frozen)");
      }
    }
  }
  troupe::WorkerHub pool(troupe::MakeHubSpec(w));
  std::string played = "the models as the workflow starts them (init_from, hf_dir)";
  if (!a.checkpoint.empty()) {
    auto ckpt = troupe::FindCheckpoint(a.checkpoint);
    if (!ckpt) throw troupe::CheckpointError("no checkpoint in " + a.checkpoint);
    troupe::RunState state = troupe::LoadCheckpoint(*ckpt, [&](const std::string& d) { pool.Load(d, false); });
    if (state["vocab"] != w.rollout.vocab.Fingerprint()) {
      throw troupe::CheckpointError("checkpoint " + *ckpt +
                                    " was trained with another vocabulary (game or roles differ)");
    }
    played = "checkpoint " + *ckpt;
  }
  troupe::SessionEvents events(w, "", a.record);
  if (events.enabled()) {
    events.RunStarted(w.proto.name() + "-eval", 0);
    events.BeginIteration(0, true);
  }
  // A dataset given on the command line is played whole by default.
  const int dataset_size = w.rollout.pipeline && !a.dataset.empty() ? w.rollout.pipeline->task->EvalQueryCount() : 0;
  const int episodes = a.episodes > 0 ? a.episodes : dataset_size > 0 ? dataset_size : w.run.eval_episodes;
  const bool greedy = a.greedy || w.run.greedy_eval;  // the workflow's trainer.greedy_eval, or --greedy
  const auto started = std::chrono::steady_clock::now();
  troupe::EvalResult r = troupe::Evaluate(w, pool, episodes, w.seed + 1, greedy, w.trainer.temperature, a.show,
                                          events.enabled() ? &events : nullptr, a.persuasion);
  if (events.enabled()) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    events.Metrics(0, r.metrics, seconds > 0 ? episodes / seconds : 0.0, r.forward_calls_per_turn);
    events.RunEnded(0, seconds, false, "");
  }
  for (const auto& text : r.shown) std::cout << text << "\n";
  if (!a.episodes_out.empty()) troupe::WriteFileAtomically(a.episodes_out, troupe::EvalEpisodesJsonl(r));
  if (a.json) {
    std::cout << troupe::EvalJson(r) << "\n";
  } else {
    std::cout << played << ", " << episodes << " episodes" << (greedy ? " (greedy)" : "") << "\n";
    for (const auto& [k, v] : r.metrics) {
      std::cout << "  " << k << " = " << v;
      if (r.ci95.count(k) && r.ci95.at(k) > 0) {
        const troupe::Interval& b = r.bootstrap.at(k);
        std::cout << " +- " << r.ci95.at(k) << " (95%, over episodes; bootstrap [" << b.lo << ", " << b.hi << "])";
      }
      std::cout << "\n";
    }
    if (auto best = troupe::BestAchievable(w)) {
      std::cout << "  best achievable " << best->signal << " = " << best->value << "\n";
    }
  }
  return 0;
}

int Worker(const Args& a) {
  troupe::WorkerOptions o;
  o.endpoint = a.connect;
  o.model = a.model;
  o.replica = a.replica;
  o.security.keys_dir = a.keys;
  o.announce = true;
  const std::string why = troupe::ServeModel(o, nullptr);
  std::cout << "worker " << troupe::WorkerIdentity(a.model, a.replica) << ": " << why << "\n";
  return 0;
}

int Record(const Args& a) {
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
    if (a.seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > a.seconds)
      break;
    if (!sub.Next(&e, std::chrono::milliseconds(200))) continue;
    ended = e.has_run_end();
    writer.Write(e, ended || e.has_metrics() || e.has_run_start() || e.has_worker());
  }
  writer.Flush();
  std::cout << "recorded " << writer.written() << " events" << (ended ? " up to the run's end" : "") << "; missed "
            << sub.missed() << " (publisher drops or joined late)\n";
  return 0;
}

int Replay(const Args& a) {
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
  std::cout << "wrote " << troupe::WriteCurveKeys(a.out) << "\n";
  return 0;
}

int Validate(const Args& a) {
  troupe::LoadedWorkflow loaded = troupe::LoadWorkflowFile(a.file);
  if (loaded.proto.has_pretrain()) {
    for (const auto& s : a.sets) troupe::ApplyOverride(loaded, s);
    const troupe::CompiledPretrain p = troupe::CompilePretrain(loaded);
    std::cout << (p.proto.name().empty() ? p.file : p.proto.name()) << ": pretraining on";
    for (const auto& c : p.corpora) std::cout << " " << c;
    const troupe::ArchitectureSpec& arch = troupe::ArchitectureSpecOf(p.model.spec);
    const troupe::ModelSizes sizes = arch.Sizes(p.model.spec);
    std::cout << "\n  model " << p.model.name << ": " << arch.name() << " d=" << sizes.width << " layers=" << sizes.layers
              << " heads=" << sizes.heads << " " << arch.Details(p.model.spec) << "\n  " << p.seq_len << " x "
              << p.batch << " tokens a step, " << p.epochs << " pass(es)"
              << (p.max_tokens > 0 ? " over at most " + std::to_string(p.max_tokens) + " tokens" : "") << "\n\nvalid\n";
    return 0;
  }
  if (loaded.proto.has_experiment()) {
    if (!a.sets.empty()) throw UsageError("--set applies to workflows; an experiment's overrides are in its file");
    const troupe::CompiledExperiment x = troupe::CompileExperiment(loaded);
    std::cout << x.name << ": experiment on " << x.workflow_file << ", " << x.cells.size() << " cells x "
              << x.spec.seeds() << " seeds, " << x.spec.eval_episodes() << " evaluation games each"
              << (x.spec.train() ? "" : " (no training)") << "\n";
    for (const auto& c : x.cells) std::cout << "  " << c.name << "\n";
    std::cout << "\nvalid\n";
    return 0;
  }
  CompiledWorkflow w = Load(a);
  std::cout << troupe::DescribeWorkflow(w) << "\nvalid\n";
  return 0;
}

int Simulate(const Args& a) {
  const CompiledWorkflow w = Load(a);
  troupe::SimulateOptions o;
  o.steps = a.steps;
  o.seeds = a.seeds;
  o.out_dir = a.out;
  o.progress = !a.json && !a.quiet;
  troupe::SessionEvents events(w, a.publish, a.record);
  o.events = &events;
  const std::vector<troupe::SeedRun> runs = troupe::Simulate(w, o, std::cerr);
  if (a.json) {
    for (const auto& r : runs) {
      nlohmann::json j = {{"seed", r.seed}, {"steps", r.steps}, {"seconds", r.seconds}};
      for (const auto& [k, v] : r.metrics) j[k] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
      std::cout << j.dump() << "\n";
    }
    return 0;
  }
  if (runs.size() > 1) {
    std::cout << std::left << std::setw(24) << "metric" << std::right << std::setw(14) << "mean" << std::setw(14)
              << "95% +-" << "   (" << runs.size() << " seeds)\n";
    for (const auto& [k, s] : troupe::SpreadOverSeeds(runs)) {
      std::cout << std::left << std::setw(24) << k << std::right << std::setw(14) << s.mean << std::setw(14)
                << s.half_width << "\n";
    }
  }
  if (!a.out.empty())
    std::cout << "wrote " << a.out << "/metrics.jsonl, TensorBoard runs seed_N/, plots/, summary.json\n";
  return 0;
}

// `troupe view ARGS...`: runs troupe-view from beside this binary (build tree or
// install), or from PATH, with the same arguments.
int View(const std::vector<std::string>& args) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string viewer = "troupe-view";
  for (const char* rel : {"troupe-view", "../viewer/troupe-view"}) {
    const std::filesystem::path candidate = self.parent_path() / rel;
    if (!ec && std::filesystem::exists(candidate)) {
      viewer = candidate.string();
      break;
    }
  }
  std::vector<char*> argv = {viewer.data()};
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (viewer.find('/') != std::string::npos) execv(viewer.c_str(), argv.data());
  else execvp(viewer.c_str(), argv.data());
  throw troupe::Error("cannot run " + viewer + ": " + std::strerror(errno));
}

// One subcommand with the options that apply to it, its usage text as the footer.
struct Cli {
  CLI::App app{"troupe: define multi-agent workflows in config, co-train agent teams, evaluate them.", "troupe"};
  Args a;
  troupe::cli::TextArgs text;
  troupe::cli::DataArgs data;
  std::vector<std::string> view_args;
  std::string help_topic;

  CLI::App* Command(const std::string& name, const std::string& what, const char* usage) {
    CLI::App* c = app.add_subcommand(name, what);
    if (usage == nullptr) return c;
    c->footer(usage);
    c->add_flag("--quiet", a.quiet, "warnings and errors only (train: and no progress line)");
    c->add_flag("--verbose", a.verbose, "debug messages too");
    return c;
  }
  // --quiet and --verbose on a command and its subcommands that lack them (the text and data commands).
  void AddLogFlags(CLI::App* c) {
    if (c->get_option_no_throw("--quiet") == nullptr) {
      c->add_flag("--quiet", a.quiet, "warnings and errors only");
      c->add_flag("--verbose", a.verbose, "debug messages too");
    }
    for (CLI::App* sub : c->get_subcommands({})) AddLogFlags(sub);
  }
  void File(CLI::App* c, const std::string& what) { c->add_option("FILE", a.file, what)->required(); }
  void Overrides(CLI::App* c) {
    c->add_option("--set", a.sets, "override one field, e.g. trainer.iterations=20 (repeatable)")
        ->allow_extra_args(false);
    c->add_option("--seed", a.seed, "override the workflow's seed");
  }

  Cli() {
    app.footer(kUsage);
    app.require_subcommand(1);
    CLI::App* train = Command("train", "train the workflow's models; writes a run folder", kTrainUsage);
    File(train, "workflow file");
    Overrides(train);
    train->add_option("--out", a.out, "run folder (default runs/<workflow>-<date>-<time>)");
    train->add_flag("--resume", a.resume, "continue the run in --out from its latest checkpoint");
    train->add_flag("--no-eval", a.no_eval, "skip the before/after evaluation");
    train->add_option("--publish", a.publish, "publish session events on this endpoint");
    train->add_option("--await-subscriber", a.await_subscriber,
                      "with --publish: wait up to S seconds for a subscriber");
    train->add_option("--record", a.record, "write the session events to this file");
    CLI::App* pretrain =
        Command("pretrain", "pretrain a base language model on real text; writes a run folder", kPretrainUsage);
    File(pretrain, "pretraining workflow file");
    Overrides(pretrain);
    pretrain->add_option("--out", a.out, "run folder (default runs/<workflow>-<date>-<time>)");
    pretrain->add_flag("--resume", a.resume, "continue the run in --out from its latest checkpoint");
    pretrain->add_option("--device", a.device, "where the model trains: cpu or cuda:N (default: the workflow's model device)");
    CLI::App* eval = Command("eval", "evaluate trained models from a checkpoint", kEvalUsage);
    File(eval, "workflow file");
    Overrides(eval);
    eval->add_option("--checkpoint", a.checkpoint, "a run folder or one of its checkpoints/iter-* folders");
    eval->add_option("--record", a.record, "write the session events to this file");
    eval->add_option("--episodes", a.episodes, "episodes to play (default: trainer.eval_episodes)");
    eval->add_option("--dataset", a.dataset, "pipelines: evaluate on this question file (JSON lines), whole by default");
    eval->add_flag("--json", a.json, "print one JSON object");
    eval->add_option("--episodes-out", a.episodes_out,
                     "also write each episode's metrics to this file, one JSON line each (episode i: question i of "
                     "a pipeline's dataset)");
    eval->add_flag("--greedy", a.greedy, "pick the most likely token instead of sampling");
    eval->add_option("--show", a.show, "also print the first N episodes");
    eval->add_flag("--persuasion", a.persuasion, "also probe how often votes follow the teammates' recommendation");
    CLI::App* validate =
        Command("validate", "check a workflow file and describe it (exit 0 valid, 1 invalid)", kValidateUsage);
    File(validate, "workflow file");
    Overrides(validate);
    CLI::App* run = Command("run", "play a workflow without training (simulation); metrics, plots", kRunUsage);
    File(run, "workflow file");
    Overrides(run);
    run->add_option("--steps", a.steps, "ticks per seed at most (default: until the episode ends)");
    run->add_option("--seeds", a.seeds, "how many seeds (default 1)")->check(CLI::Range(1, 100000));
    run->add_option("--out", a.out, "folder for metrics.jsonl, plots/ and summary.json");
    run->add_flag("--json", a.json, "print one JSON object per seed");
    run->add_option("--publish", a.publish, "publish session events on this endpoint");
    run->add_option("--record", a.record, "write the session events to this file");
    CLI::App* experiment = Command("experiment", "train and evaluate a workflow over a grid of overrides and seeds; "
                                   "table, plots", kExperimentUsage);
    File(experiment, "experiment file");
    experiment->add_option("--out", a.out, "the experiment's folder (default runs/<experiment name>)");
    experiment->add_option("--jobs", a.jobs, "cells side by side, each in its own process (default 1)")
        ->check(CLI::Range(1, 256));
    experiment->add_option("--only", a.only, "run one cell and seed, CELL:SEED (what each --jobs process runs)")
        ->group("");
    CLI::App* worker = Command("worker", "serve one model of a running `troupe train` from this process", kWorkerUsage);
    worker->add_option("--model", a.model, "the model to serve")->required();
    worker->add_option("--connect", a.connect, "the controller's worker endpoint")->required();
    worker->add_option("--replica", a.replica, "which replica of the model this is (default 0)");
    worker->add_option("--keys", a.keys, "CurveZMQ keys folder");
    CLI::App* record = Command("record", "write the session events of a running training to a file", kRecordUsage);
    record->add_option("--connect", a.connect, "the run's publish endpoint")->required();
    record->add_option("--out", a.out, "session file to write")->required();
    record->add_option("--seconds", a.seconds, "stop after S seconds");
    record->add_option("--keys", a.keys, "CurveZMQ keys folder");
    CLI::App* replay = Command("replay", "say what a recorded session holds", kReplayUsage);
    File(replay, "session file");
    replay->add_flag("--summary", a.summary, "what the session holds (default)");
    replay->add_option("--events", a.events, "also print the first N events");
    CLI::App* keys = Command("keys", "make CurveZMQ key files for tcp endpoints off this host", kKeysUsage);
    keys->add_option("--out", a.out, "folder for the key files")->required();
    Command("reference", "print the workflow file reference (Markdown)", kReferenceUsage);
    CLI::App* view =
        Command("view", "run troupe-view (a live or recorded session); `troupe view --help` for its options", nullptr);
    view->prefix_command();
    view->allow_extras();
    view->set_help_flag();  // --help goes to troupe-view
    troupe::cli::AddTextCommands(app, text);
    troupe::cli::AddDataCommands(app, data);
    for (CLI::App* c : app.get_subcommands({})) {
      if (c->get_name() != "view") AddLogFlags(c);
    }
    CLI::App* help = Command("help", "this text, or a command's options", nullptr);
    help->add_option("COMMAND", help_topic, "a command");
  }

  // The help of a command, or of troupe.
  std::string Help(const std::string& command) {
    if (command.empty()) return app.help();
    for (CLI::App* c : app.get_subcommands({})) {
      if (c->get_name() == command) return c->help();
    }
    throw UsageError("unknown command '" + command + "'");
  }

  int Run(int argc, char** argv) {
    if (argc >= 2 && argv[1][0] != '-') {
      bool known = false;
      for (CLI::App* c : app.get_subcommands({})) known = known || c->get_name() == argv[1];
      if (!known) throw UsageError(std::string("unknown command '") + argv[1] + "'");
    }
    if (argc < 2) {
      std::cout << app.help();
      return 2;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      CLI::App* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front();
      std::cout << (sub != nullptr ? sub->help() : app.help());
      return 0;
    } catch (const CLI::ParseError& e) {
      CLI::App* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front();
      const std::string who = sub != nullptr ? "troupe " + sub->get_name() : "troupe";
      std::string what = e.what();
      if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && sub != nullptr) {
        std::string extras;
        for (const auto& x : sub->remaining()) extras += (extras.empty() ? "" : " ") + x;
        what = extras + ": not " + (sub->remaining().size() > 1 ? "options" : "an option") + " of " + sub->get_name();
      }
      throw UsageError(who + ": " + what + "\n(see " + who + " --help)");
    }
    const std::string command = app.get_subcommands().front()->get_name();
    a.command = command;
    spdlog::set_level(a.verbose ? spdlog::level::debug : a.quiet ? spdlog::level::warn : spdlog::level::info);
    if (command == "help") {
      std::cout << Help(help_topic);
      return 0;
    }
    if (command == "view") return View(app.get_subcommands().front()->remaining());
    if (const int status = troupe::cli::RunTextCommand(app, text); status >= 0) return status;
    if (const int status = troupe::cli::RunDataCommand(app, data); status >= 0) return status;
    if (command == "train") return Train(a);
    if (command == "pretrain") return Pretrain(a);
    if (command == "eval") return Eval(a);
    if (command == "validate") return Validate(a);
    if (command == "run") return Simulate(a);
    if (command == "experiment") return Experiment(a);
    if (command == "worker") return Worker(a);
    if (command == "record") return Record(a);
    if (command == "replay") return Replay(a);
    if (command == "reference") {
      std::cout << troupe::WorkflowReferenceMarkdown();
      return 0;
    }
    return Keys(a);
  }
};

}  // namespace

int main(int argc, char** argv) {
  troupe::KeepFreedMemoryOnHeap();
  // Diagnostics (workers joining, lost, waiting) go to stderr through one logger.
  spdlog::set_default_logger(spdlog::stderr_color_mt("troupe"));
  spdlog::set_pattern("troupe [%l] %v");
  try {
    Cli cli;
    return cli.Run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << (std::string(e.what()).rfind("troupe", 0) == 0 ? "" : "troupe: ") << e.what() << "\n";
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
