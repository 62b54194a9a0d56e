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
#include "core/models/checkpoint.h"
#include "workflows/config/model_spec.h"
#include "workflows/run/distill_objective.h"
#include "workflows/run/metrics_log.h"
#include "workflows/run/run_clock.h"
#include "workflows/run/metrics_sink.h"
#include "workflows/run/rl_objective.h"
#include "workflows/run/run_folder.h"
#include "workflows/run/session_events.h"
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

// One training run in its folder: start (fresh or resumed), iterate the
// objective, checkpoint, evaluate before and after, finish.
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
        tty_(::isatty(STDOUT_FILENO) && &out == &std::cout) {}

  TrainResult Run(int* iteration) {
    PrepareRunFolder(dir_.string(), w_, options_.resume);
    result_.run_dir = dir_.string();
    result_.best = BestAchievable(w_);
    result_.headline = w_.headline_metrics;
    if (options_.resume) Resume();
    else WarmStart();
    t0_ = MonotonicSeconds();
    MetricsSink metrics(dir_.string(), events_, options_.resume, objective_.LinesAfter(start_));
    events_.RunStarted(dir_.filename().string(), start_);
    const int total = objective_.iterations(), every = objective_.checkpoint_every();
    int it = start_;
    bool interrupted = false;
    for (; it < total; ++it) {
      *iteration = it;
      if (w_.run.max_minutes > 0 && Elapsed() > w_.run.max_minutes * 60) {
        out_ << (tty_ ? "\n" : "") << "stopping at the time limit of " << w_.run.max_minutes << " min\n";
        break;
      }
      if ((options_.stop != nullptr && *options_.stop) || (options_.stop_at > 0 && it >= options_.stop_at)) {
        out_ << (tty_ ? "\n" : "") << "interrupted: saving a checkpoint at " << objective_.unit() << " " << it
             << " (continue with --resume)\n";
        interrupted = true;
        break;
      }
      IterationReport report = objective_.Iterate(it);
      if (report.has_line) {
        report.line.Add("time/elapsed_s", Elapsed());
        metrics.Write(it + 1, report.line, report.episodes_per_s, report.forward_calls_per_turn);
        if (options_.progress) Progress(it, report.progress);
      }
      if ((it + 1) % every == 0 || it + 1 == total) Save(it + 1);
    }
    if (it > start_ && it % every != 0 && it != total) Save(it);
    if (tty_ && options_.progress) out_ << "\n";
    result_.iterations = it;
    *iteration = it;
    result_.seconds = Elapsed();
    if (options_.final_eval && !interrupted) {
      result_.after = Evaluation();
      WriteEvaluation("eval_trained", *result_.after);
    }
    events_.RunEnded(result_.iterations, result_.seconds, interrupted, interrupted ? "interrupted" : "");
    return result_;
  }

 private:
  double Elapsed() const { return elapsed_before_ + MonotonicSeconds() - t0_; }

  EvalResult Evaluation() {
    const bool greedy = w_.run.greedy_eval || objective_.greedy_evaluation();
    return Evaluate(w_, hub_, w_.run.eval_episodes, w_.seed, greedy, w_.trainer.temperature);
  }

  // <name>.json (the means and intervals) and <name>.episodes.jsonl (each episode's metrics).
  void WriteEvaluation(const std::string& name, const EvalResult& result) {
    WriteFileAtomically((dir_ / (name + ".episodes.jsonl")).string(), EvalEpisodesJsonl(result));
    WriteFileAtomically((dir_ / (name + ".json")).string(), EvalJson(result) + "\n");
  }

  // Models, optimisers and the objective's state from the latest checkpoint.
  void Resume() {
    std::string ckpt;
    RunState state = ResumeRun(
        dir_.string(), w_, [&](const std::string& d) { hub_.Load(d, true); }, &ckpt);
    start_ = std::stoi(state["iteration"]);
    objective_.Load(state);
    elapsed_before_ = std::atof(state["elapsed_s"].c_str());
    if (fs::exists(dir_ / "eval_untrained.json")) {
      result_.before = EvalFromFile(dir_ / "eval_untrained.json");
    }
    if (fs::exists(dir_ / "eval_warm_start.json")) {
      result_.warm = EvalFromFile(dir_ / "eval_warm_start.json");
    }
    out_ << "resuming " << ckpt << " at " << objective_.unit() << " " << start_ << "\n";
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

  void Progress(int it, const std::string& figures) {
    const int total = objective_.iterations();
    const double per_it = (MonotonicSeconds() - t0_) / (it + 1 - start_);
    std::ostringstream p;
    p << "[" << (objective_.unit() == "iteration" ? "it" : objective_.unit()) << " " << it + 1 << "/" << total << "] "
      << figures << "  ETA " << FormatDuration(per_it * (total - it - 1));
    if (tty_) out_ << "\r" << p.str() << "\x1b[K" << std::flush;
    else out_ << p.str() << std::endl;
  }

  void Save(int iteration) {
    RunState state;
    objective_.Save(&state);
    state["vocab"] = w_.vocab.Fingerprint();
    std::ostringstream e;
    e.precision(17);
    e << Elapsed();
    state["elapsed_s"] = e.str();
    SaveCheckpoint(dir_.string(), iteration, state, [&](const std::string& d) { hub_.Save(d); });
  }

  const CompiledWorkflow& w_;
  const TrainOptions& options_;
  std::ostream& out_;
  PolicyService& hub_;
  SessionEvents& events_;
  TrainingObjective& objective_;
  const fs::path dir_;
  const bool tty_;
  TrainResult result_;
  int start_ = 0;
  double elapsed_before_ = 0.0;
  double t0_ = 0.0;
};

}  // namespace

TrainResult Train(const CompiledWorkflow& w, const TrainOptions& options, std::ostream& out) {
  SetTorchThreads(w.run.threads);
  bool trained_role = false;
  for (const auto& r : w.roles) trained_role = trained_role || r.trained();
  if (!trained_role) throw ConfigError(w.file, 0, 0, "nothing to train: every role is scripted");
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
        w.hybrid() ? MakeDistillationObjective(w, hub, events, out) : MakeReinforcementObjective(w, hub, events);
    return TrainingRun(w, options, out, hub, events, *objective).Run(&iteration);
  } catch (const std::exception& e) {
    events.RunEnded(iteration, MonotonicSeconds() - t0, true, e.what());
    throw;
  }
}

}  // namespace troupe
