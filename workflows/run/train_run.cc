// The training loop: an objective's iterations, logged and checkpointed.
#include "workflows/run/train_run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/base/errors.h"
#include "core/checkpoint.h"
#include "workflows/config/serve_specs.h"
#include "workflows/run/distill_objective.h"
#include "workflows/report/metrics_log.h"
#include "workflows/report/run_clock.h"
#include "workflows/run/run_loop.h"
#include "workflows/run/rl_objective.h"
#include "workflows/run/run_folder.h"
#include "workflows/report/session_events.h"
#include "workflows/runtime/worker_hub.h"

namespace troupe {

namespace fs = std::filesystem;

bool IsTimingKey(const std::string& key) { return key.rfind("time/", 0) == 0; }

namespace {

// An evaluation as EvalJson wrote it (eval_untrained.json of a run being resumed).
EvalResult EvalFromFile(const fs::path& path) {
  EvalResult r;
  r.metrics = ReadJsonNumbers(path.string());
  r.episodes = static_cast<int>(r.metrics["episodes"]);
  r.forward_calls_per_turn = r.metrics["forward_calls_per_turn"];
  r.metrics.erase("episodes");
  r.metrics.erase("forward_calls_per_turn");
  auto starts = [](const std::string& key, const char* prefix) { return key.rfind(prefix, 0) == 0; };
  for (auto it = r.metrics.begin(); it != r.metrics.end();) {
    const std::string& key = it->first;
    if (starts(key, "ci95/")) r.ci95[key.substr(5)] = it->second;
    else if (starts(key, "ci95_lo/")) r.bootstrap[key.substr(8)].lo = it->second;
    else if (starts(key, "ci95_hi/")) r.bootstrap[key.substr(8)].hi = it->second;
    else {
      ++it;
      continue;
    }
    it = r.metrics.erase(it);
  }
  return r;
}

}  // namespace

std::string ResultTable(const TrainResult& r) {
  if (!r.before || !r.after) return "";
  std::ostringstream out;
  // A figure with the half-width of its 95% interval over the evaluation episodes.
  auto cell = [&](const EvalResult& e, const std::string& key) {
    std::ostringstream c;
    auto v = e.metrics.find(key);
    c << std::fixed << std::setprecision(3) << (v == e.metrics.end() ? 0.0 : v->second);
    auto hw = e.ci95.find(key);
    if (hw != e.ci95.end() && hw->second > 0) c << " +-" << std::setprecision(3) << hw->second;
    return c.str();
  };
  out << std::left << std::setw(26) << "metric" << std::right << std::setw(18) << "untrained";
  if (r.warm) out << std::setw(18) << "warm start";
  out << std::setw(18) << "trained" << std::setw(12) << "best"
      << "\n";
  // The game's headline metrics and the invalid outputs; every metric when the game names none.
  std::vector<std::string> rows = r.headline;
  if (rows.empty()) {
    for (const auto& [key, v] : r.after->metrics) rows.push_back(key);
  } else if (std::find(rows.begin(), rows.end(), "invalid_outputs") == rows.end()) {
    rows.push_back("invalid_outputs");
  }
  for (const std::string& key : rows) {
    auto a = r.after->metrics.find(key);
    if (a == r.after->metrics.end()) continue;
    const double after = a->second;
    out << std::left << std::setw(26) << key << std::right << std::fixed << std::setprecision(3) << std::setw(18)
        << cell(*r.before, key);
    if (r.warm) out << std::setw(18) << cell(*r.warm, key);
    out << std::setw(18) << cell(*r.after, key);
    if (r.best && r.best->metric == key) {
      out << std::setw(12) << r.best->value;
      if (r.best->value > 0) out << "   (" << std::setprecision(1) << 100.0 * after / r.best->value << "% of best)";
    }
    out << "\n";
  }
  return out.str();
}

namespace {

// One training run in its folder: the run loop over the objective, with the
// evaluations before and after, the warm start and the session's start and end.
class TrainingRun {
 public:
  TrainingRun(const CompiledWorkflow& w, const TrainOptions& options, std::ostream& out, PolicyService& hub,
              SessionEvents& events, TrainingObjective& objective)
      : w_(w),
        options_(options),
        out_(out),
        hub_(hub),
        events_(events),
        objective_(objective),
        dir_(options.out_dir),
        loop_(LoopSpec(), objective, out) {}

  TrainResult Run(int* iteration) {
    PrepareRunFolder(dir_.string(), w_, options_.resume);
    result_.run_dir = dir_.string();
    result_.best = BestAchievable(w_);
    result_.headline = w_.headline_metrics;
    if (options_.resume) Resume();
    else WarmStart();
    events_.RunStarted(dir_.filename().string(), loop_.start());
    *iteration = loop_.start();
    const RunLoopEnd end = loop_.Run();
    result_.iterations = end.iterations;
    *iteration = end.iterations;
    result_.seconds = end.seconds;
    if (options_.final_eval && !end.interrupted) {
      result_.after = Evaluation();
      WriteEvaluation("eval_trained", *result_.after);
    }
    events_.RunEnded(result_.iterations, result_.seconds, end.interrupted, end.interrupted ? "interrupted" : "");
    return result_;
  }

 private:
  RunLoopSpec LoopSpec() {
    RunLoopSpec spec;
    spec.dir = dir_.string();
    spec.resume = options_.resume;
    spec.progress = options_.progress;
    spec.tty = ::isatty(STDOUT_FILENO) && &out_ == &std::cout;
    spec.stop = options_.stop;
    spec.stop_at = options_.stop_at;
    spec.max_minutes = w_.run.max_minutes;
    spec.events = &events_;
    spec.checkpoint_state["vocab"] = w_.rollout.vocab.Fingerprint();
    spec.save_models = [this](const std::string& d) { hub_.Save(d); };
    spec.load_models = [this](const std::string& d) { hub_.Load(d, true); };
    return spec;
  }

  EvalResult Evaluation() {
    const bool greedy = w_.run.greedy_eval || objective_.greedy_evaluation();
    return Evaluate(w_, hub_, w_.run.eval_episodes, w_.seed, greedy, w_.trainer.temperature);
  }

  // <name>.json (the means and intervals) and <name>.episodes.jsonl (each episode's metrics).
  void WriteEvaluation(const std::string& name, const EvalResult& result) {
    WriteFileAtomically((dir_ / (name + ".episodes.jsonl")).string(), EvalEpisodesJsonl(result));
    WriteFileAtomically((dir_ / (name + ".json")).string(), EvalJson(result) + "\n");
  }

  // Models, optimisers and the objective's state from the latest checkpoint,
  // which must have been trained on this workflow's vocabulary.
  void Resume() {
    std::string ckpt;
    RunState state = loop_.Resume(&ckpt);
    if (state["vocab"] != w_.rollout.vocab.Fingerprint()) {
      throw CheckpointError("checkpoint " + ckpt + " was trained on another vocabulary (the game or roles changed)");
    }
    if (fs::exists(dir_ / "eval_untrained.json")) {
      result_.before = EvalFromFile(dir_ / "eval_untrained.json");
    }
    if (fs::exists(dir_ / "eval_warm_start.json")) {
      result_.warm = EvalFromFile(dir_ / "eval_warm_start.json");
    }
    out_ << "resuming " << ckpt << " at " << objective_.unit() << " " << loop_.start() << "\n";
  }

  // A fresh run: the untrained evaluation, then the objective's warm start and
  // (when it trained the models) their evaluation.
  void WarmStart() {
    if (options_.final_eval) {
      result_.before = Evaluation();
      WriteEvaluation("eval_untrained", *result_.before);
    }
    if (objective_.WarmStart(out_, options_.progress) && options_.final_eval) {
      result_.warm = Evaluation();
      WriteEvaluation("eval_warm_start", *result_.warm);
    }
  }

  const CompiledWorkflow& w_;
  const TrainOptions& options_;
  std::ostream& out_;
  PolicyService& hub_;
  SessionEvents& events_;
  TrainingObjective& objective_;
  const fs::path dir_;
  RunLoop loop_;
  TrainResult result_;
};

}  // namespace

TrainResult Train(const CompiledWorkflow& w, const TrainOptions& options, std::ostream& out) {
  SetTorchThreads(w.run.threads);
  bool trained_role = false;
  for (const auto& r : w.rollout.roles) trained_role = trained_role || r.learns();
  if (!trained_role) throw ConfigError(w.file, 0, 0, "nothing to train: every role is scripted or on a frozen model");
  SessionEvents events(w, options.publish.empty() ? w.runtime.publish : options.publish, options.record,
                       options.resume);
  if (events.enabled() && !events.publish_endpoint().empty()) {
    out << "publishing session events at " << events.publish_endpoint() << "\n";
    if (options.await_subscriber_s > 0 && !events.AwaitSubscriber(options.await_subscriber_s)) {
      out << "no subscriber after " << options.await_subscriber_s << " s; starting anyway\n";
    }
  }
  int iteration = 0;
  const double t0 = MonotonicSeconds();
  try {
    WorkerHub hub(MakeHubSpec(w), [&](const WorkerNotice& n) { events.WorkerChanged(n); });
    std::unique_ptr<TrainingObjective> objective =
        w.hybrid() ? MakeDistillationObjective(w, hub, events, out) : MakeReinforcementObjective(w, hub, events, options.out_dir);
    return TrainingRun(w, options, out, hub, events, *objective).Run(&iteration);
  } catch (const std::exception& e) {
    events.RunEnded(iteration, MonotonicSeconds() - t0, true, e.what());
    throw;
  }
}

}  // namespace troupe
