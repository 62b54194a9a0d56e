// The training loop: rollout -> credit -> update, logged and checkpointed.
#include "workflows/run/train_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/base/errors.h"
#include "core/models/checkpoint.h"
#include "core/models/trainer.h"
#include "workflows/run/metrics_log.h"
#include "workflows/run/metrics_sink.h"
#include "workflows/run/rollout.h"
#include "workflows/run/run_folder.h"
#include "workflows/run/session_events.h"
#include "workflows/runtime/worker_hub.h"

namespace troupe {

namespace fs = std::filesystem;

bool IsTimingKey(const std::string& key) { return key.rfind("time/", 0) == 0; }

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string Duration(double s) {
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  else std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  return buf;
}

void WriteFile(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp) << text;
  fs::rename(tmp, p);
}

// An evaluation as EvalJson wrote it (eval_untrained.json of a run being resumed).
EvalResult EvalFromFile(const fs::path& path) {
  EvalResult r;
  r.metrics = ReadJsonNumbers(path.string());
  r.episodes = static_cast<int>(r.metrics["episodes"]);
  r.forward_calls_per_turn = r.metrics["forward_calls_per_turn"];
  r.metrics.erase("episodes");
  r.metrics.erase("forward_calls_per_turn");
  return r;
}

}  // namespace

std::string ResultTable(const TrainResult& r) {
  if (!r.before || !r.after) return "";
  std::ostringstream out;
  out << std::left << std::setw(26) << "metric" << std::right << std::setw(12) << "untrained" << std::setw(12)
      << "trained" << std::setw(12) << "best"
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
    auto b = r.before->metrics.find(key);
    out << std::left << std::setw(26) << key << std::right << std::fixed << std::setprecision(3) << std::setw(12)
        << (b == r.before->metrics.end() ? 0.0 : b->second) << std::setw(12) << after;
    if (r.best && r.best->metric == key) {
      out << std::setw(12) << r.best->value;
      if (r.best->value > 0) out << "   (" << std::setprecision(1) << 100.0 * after / r.best->value << "% of best)";
    }
    out << "\n";
  }
  return out.str();
}

namespace {

// The per-iteration figures of metrics.jsonl (all but the wall-clock time/ ones),
// and " role=reward" pairs for the progress line.
JsonLine IterationLine(const CompiledWorkflow& w, int iteration, const RolloutBatch& batch, const CreditStats& cs,
                       const std::vector<ModelTrainStats>& ts, const std::map<std::string, double>& game_metrics,
                       std::string* progress_roles) {
  JsonLine line;
  line.Add("iteration", iteration);
  line.Add("episodes", static_cast<double>(batch.episodes.size()));
  line.Add("episodes_dropped", static_cast<double>(batch.dropped));
  const std::vector<session::RoleCredit> by_role = CreditByRole(batch.records, static_cast<int>(w.roles.size()));
  for (size_t r = 0; r < w.roles.size(); ++r) {
    if (!w.roles[r].trained()) continue;
    const session::RoleCredit& rc = by_role[r];
    const std::string& name = w.roles[r].name;
    line.Add("reward/" + name, rc.reward_mean());
    line.Add("advantage_mean/" + name, rc.advantage_mean());
    line.Add("advantage_std/" + name, rc.advantage_std());
    line.Add("invalid_rate/" + name, rc.invalid_fraction());
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s=%.3f", name.c_str(), rc.reward_mean());
    *progress_roles += buf;
  }
  for (size_t m = 0; m < ts.size(); ++m) {
    const std::string& name = w.models[m].name;
    line.Add("loss/" + name, ts[m].loss);
    line.Add("policy_loss/" + name, ts[m].policy_loss);
    if (w.trainer.estimator == Estimator::kPpo) line.Add("value_loss/" + name, ts[m].value_loss);
    line.Add("entropy/" + name, ts[m].entropy);
    line.Add("kl/" + name, ts[m].kl);
    line.Add("grad_norm/" + name, ts[m].grad_norm);
    line.Add("clip_fraction/" + name, ts[m].clip_fraction);
  }
  line.Add("credit/advantage_mean", cs.advantage_mean);
  line.Add("credit/advantage_std", cs.advantage_std);
  for (const auto& [k, v] : game_metrics) line.Add("game/" + k, v);
  line.Add("forward_calls_per_turn", batch.turns > 0 ? static_cast<double>(batch.forward_calls) / batch.turns : 0);
  return line;
}

// One training run in its folder: start (fresh or resumed), iterate, checkpoint, finish.
class TrainingRun {
 public:
  TrainingRun(const CompiledWorkflow& w, const TrainOptions& options, std::ostream& out, PolicyService& hub,
              SessionEvents& events)
      : w_(w),
        options_(options),
        out_(out),
        hub_(hub),
        events_(events),
        dir_(options.out_dir),
        credit_(w.credit),
        rollout_(w, hub),
        rng_(Rng::Mix(w.seed, 1)),
        tty_(::isatty(STDOUT_FILENO) && &out == &std::cout) {}

  TrainResult Run(int* iteration) {
    PrepareRunFolder(dir_.string(), w_, options_.resume);
    result_.run_dir = dir_.string();
    result_.best = BestAchievable(w_);
    result_.headline = w_.headline_metrics;
    if (options_.resume) Resume();
    else WarmStart();
    t0_ = Now();
    MetricsSink metrics(dir_.string(), events_, options_.resume, start_);
    events_.RunStarted(dir_.filename().string(), start_);
    int it = start_;
    bool interrupted = false;
    for (; it < w_.run.iterations; ++it) {
      *iteration = it;
      if (w_.run.max_minutes > 0 && Elapsed() > w_.run.max_minutes * 60) {
        out_ << (tty_ ? "\n" : "") << "stopping at the time limit of " << w_.run.max_minutes << " min\n";
        break;
      }
      if ((options_.stop != nullptr && *options_.stop) || (options_.stop_at > 0 && it >= options_.stop_at)) {
        out_ << (tty_ ? "\n" : "") << "interrupted: saving a checkpoint at iteration " << it
             << " (continue with --resume)\n";
        interrupted = true;
        break;
      }
      Iterate(it, metrics);
      if ((it + 1) % w_.run.checkpoint_every == 0 || it + 1 == w_.run.iterations) Save(it + 1);
    }
    if (it > start_ && it % w_.run.checkpoint_every != 0 && it != w_.run.iterations) Save(it);
    if (tty_ && options_.progress) out_ << "\n";
    result_.iterations = it;
    *iteration = it;
    result_.seconds = Elapsed();
    if (options_.final_eval && !interrupted) {
      result_.after = Evaluate(w_, hub_, w_.run.eval_episodes, w_.seed, false, w_.trainer.temperature);
      WriteFile(dir_ / "eval_trained.json", EvalJson(*result_.after) + "\n");
    }
    events_.RunEnded(result_.iterations, result_.seconds, interrupted, interrupted ? "interrupted" : "");
    return result_;
  }

 private:
  double Elapsed() const { return elapsed_before_ + Now() - t0_; }

  // Models, optimisers, RNGs and credit baselines from the latest checkpoint.
  void Resume() {
    std::string ckpt;
    RunState state = ResumeRun(
        dir_.string(), w_, [&](const std::string& d) { hub_.Load(d, true); }, &ckpt);
    start_ = std::stoi(state["iteration"]);
    rng_.Load(state["rollout_rng"]);
    credit_.LoadState(state["credit"]);
    elapsed_before_ = std::atof(state["elapsed_s"].c_str());
    if (fs::exists(dir_ / "eval_untrained.json")) {
      result_.before = EvalFromFile(dir_ / "eval_untrained.json");
    }
    out_ << "resuming " << ckpt << " at iteration " << start_ << "\n";
  }

  // A fresh run: the untrained evaluation, then the supervised warm start if asked for.
  void WarmStart() {
    if (options_.final_eval) {
      result_.before = Evaluate(w_, hub_, w_.run.eval_episodes, w_.seed, false, w_.trainer.temperature);
      WriteFile(dir_ / "eval_untrained.json", EvalJson(*result_.before) + "\n");
    }
    if (w_.run.sft_episodes <= 0) return;
    RolloutOptions demo;
    demo.episodes = w_.run.sft_episodes;
    demo.seed = Rng::Mix(w_.seed, 3);
    demo.scripted_for_trained = true;
    demo.teacher = w_.run.sft_teacher;
    Rng demo_rng(Rng::Mix(w_.seed, 4));
    RolloutBatch demos = rollout_.Run(demo, demo_rng);
    auto st = hub_.Supervised(demos.records, w_.run.sft_steps);
    out_ << "sft warm start: " << demos.records.size() << " demonstrations from " << w_.run.sft_teacher << ", "
         << w_.run.sft_steps << " steps, final loss " << st.front().loss << "\n";
  }

  // Rollout, credit, update; figures to the sinks and the progress line.
  void Iterate(int it, MetricsSink& metrics) {
    const double ti = Now();
    RolloutOptions ro;
    ro.episodes = w_.run.episodes_per_iteration;
    ro.group_size = w_.run.group_size;
    ro.seed = Rng::Mix(w_.seed, 2, static_cast<uint64_t>(it));
    ro.temperature = w_.trainer.temperature;
    ro.correlated = w_.run.correlated_team_sampling;
    ro.guided = w_.run.guided_choices;
    ro.observer = events_.enabled() ? &events_ : nullptr;
    events_.BeginIteration(it + 1, false);
    RolloutBatch batch = rollout_.Run(ro, rng_);
    const double rollout_s = Now() - ti;
    CreditStats cs = credit_.Assign(batch.records);
    events_.Credit(it + 1, batch.records);
    std::vector<ModelTrainStats> ts = hub_.Update(batch.records);
    const double dt = Now() - ti;

    const auto game_metrics = MeanMetrics(batch);
    std::string progress_roles;
    JsonLine line = IterationLine(w_, it + 1, batch, cs, ts, game_metrics, &progress_roles);
    const double episodes_per_s = batch.episodes.size() / std::max(1e-9, dt);
    line.Add("time/iteration_s", dt);
    line.Add("time/rollout_s", rollout_s);
    line.Add("time/episodes_per_s", episodes_per_s);
    line.Add("time/elapsed_s", Elapsed());
    metrics.Write(it + 1, line, episodes_per_s,
                  batch.turns > 0 ? static_cast<double>(batch.forward_calls) / batch.turns : 0);
    if (options_.progress) Progress(it, episodes_per_s, progress_roles, game_metrics);
  }

  void Progress(int it, double episodes_per_s, const std::string& roles, const std::map<std::string, double>& game) {
    const double per_it = (Now() - t0_) / (it + 1 - start_);
    std::ostringstream p;
    p << "[it " << it + 1 << "/" << w_.run.iterations << "] " << std::fixed << std::setprecision(1) << episodes_per_s
      << " ep/s  reward" << roles;
    for (const std::string& key : w_.headline_metrics) {
      auto f = game.find(key);
      if (f != game.end()) p << "  " << key << "=" << std::setprecision(2) << f->second;
    }
    p << "  ETA " << Duration(per_it * (w_.run.iterations - it - 1));
    if (tty_) out_ << "\r" << p.str() << "\x1b[K" << std::flush;
    else out_ << p.str() << std::endl;
  }

  void Save(int iteration) {
    RunState state;
    state["rollout_rng"] = rng_.Save();
    state["credit"] = credit_.SaveState();
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
  const fs::path dir_;
  CreditAssigner credit_;
  Rollout rollout_;
  Rng rng_;
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
  const double t0 = Now();
  try {
    WorkerHub hub(w, [&](const WorkerNotice& n) { events.WorkerChanged(n); });
    return TrainingRun(w, options, out, hub, events).Run(&iteration);
  } catch (const std::exception& e) {
    events.RunEnded(iteration, Now() - t0, true, e.what());
    throw;
  }
}

}  // namespace troupe
