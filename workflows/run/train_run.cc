// The training loop: rollout -> credit -> update, logged and checkpointed.
#include "workflows/run/train_run.h"

#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/models/checkpoint.h"
#include "core/base/errors.h"
#include "workflows/run/metrics_log.h"
#include "core/models/trainer.h"
#include "workflows/run/rollout.h"
#include "workflows/run/session_events.h"
#include "workflows/runtime/worker_hub.h"

namespace troupe {

namespace fs = std::filesystem;

bool IsTimingKey(const std::string& key) { return key.rfind("time/", 0) == 0; }

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// Parses a flat JSON object of numbers written by EvalJson.
std::map<std::string, double> ParseFlatJson(const std::string& text) {
  std::map<std::string, double> m;
  size_t i = 0;
  while ((i = text.find('"', i)) != std::string::npos) {
    const size_t j = text.find('"', i + 1);
    if (j == std::string::npos) break;
    const std::string key = text.substr(i + 1, j - i - 1);
    const size_t colon = text.find(':', j);
    if (colon == std::string::npos) break;
    m[key] = std::atof(text.c_str() + colon + 1);
    i = text.find_first_of(",}", colon);
    if (i == std::string::npos) break;
  }
  return m;
}

EvalResult EvalFromJson(const std::string& text) {
  EvalResult r;
  auto m = ParseFlatJson(text);
  r.episodes = static_cast<int>(m["episodes"]);
  r.forward_calls_per_turn = m["forward_calls_per_turn"];
  m.erase("episodes");
  m.erase("forward_calls_per_turn");
  r.metrics = m;
  return r;
}

}  // namespace

std::string ResultTable(const TrainResult& r) {
  if (!r.before || !r.after) return "";
  std::ostringstream out;
  out << std::left << std::setw(26) << "metric" << std::right << std::setw(12) << "untrained" << std::setw(12)
      << "trained" << std::setw(12) << "best" << "\n";
  for (const auto& [key, after] : r.after->metrics) {
    const bool show = key.find("score") != std::string::npos || key.find("cooperation") != std::string::npos ||
                      key == "efficiency" || key == "invalid_outputs" || key == "steps";
    if (!show) continue;
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

TrainResult TrainWith(const CompiledWorkflow& w, const TrainOptions& options, std::ostream& out, PolicyService& hub,
                      SessionEvents& events, int* iteration) {
  const fs::path dir(options.out_dir);
  fs::create_directories(dir);
  const fs::path metrics_path = dir / "metrics.jsonl";
  if (!options.resume && FindCheckpoint(dir.string())) {
    throw Error("run folder " + dir.string() + " already holds a run: pass --resume to continue it, or another --out");
  }
  std::string resolved;
  google::protobuf::TextFormat::PrintToString(w.proto, &resolved);
  WriteFile(dir / "workflow.resolved.textproto", "# resolved from " + w.file + "\n" + resolved);

  CreditAssigner credit(w.credit);
  Rollout rollout(w, hub);
  Rng rng(Rng::Mix(w.seed, 1));
  TrainResult result;
  result.run_dir = dir.string();
  result.best = BestAchievable(w);
  int start = 0;
  double elapsed_before = 0.0;

  if (options.resume) {
    auto ckpt = FindCheckpoint(dir.string());
    if (!ckpt) throw CheckpointError("--resume: no checkpoint in " + dir.string());
    RunState state = LoadCheckpoint(*ckpt, [&](const std::string& d) { hub.Load(d, true); });
    if (state["vocab"] != w.vocab.Fingerprint()) {
      throw CheckpointError("checkpoint " + *ckpt + " was trained on another vocabulary (the game or roles changed)");
    }
    start = std::stoi(state["iteration"]);
    rng.Load(state["rollout_rng"]);
    credit.LoadState(state["credit"]);
    elapsed_before = std::atof(state["elapsed_s"].c_str());
    TruncateLines(metrics_path.string(), start);
    if (fs::exists(dir / "eval_untrained.json")) result.before = EvalFromJson(ReadFile(dir / "eval_untrained.json"));
    out << "resuming " << *ckpt << " at iteration " << start << "\n";
  } else {
    fs::remove(metrics_path);
    if (options.final_eval) {
      result.before = Evaluate(w, hub, w.run.eval_episodes, w.seed, false, w.trainer.temperature);
      WriteFile(dir / "eval_untrained.json", EvalJson(*result.before) + "\n");
    }
    if (w.run.sft_episodes > 0) {
      RolloutOptions demo;
      demo.episodes = w.run.sft_episodes;
      demo.seed = Rng::Mix(w.seed, 3);
      demo.scripted_for_trained = true;
      demo.teacher = w.run.sft_teacher;
      Rng demo_rng(Rng::Mix(w.seed, 4));
      RolloutBatch demos = rollout.Run(demo, demo_rng);
      auto st = hub.Supervised(demos.records, w.run.sft_steps);
      out << "sft warm start: " << demos.records.size() << " demonstrations from " << w.run.sft_teacher << ", "
          << w.run.sft_steps << " steps, final loss " << st.front().loss << "\n";
    }
  }

  const double t0 = Now();
  auto save = [&](int iteration) {
    RunState state;
    state["rollout_rng"] = rng.Save();
    state["credit"] = credit.SaveState();
    state["vocab"] = w.vocab.Fingerprint();
    std::ostringstream e;
    e.precision(17);
    e << elapsed_before + Now() - t0;
    state["elapsed_s"] = e.str();
    SaveCheckpoint(dir.string(), iteration, state, [&](const std::string& d) { hub.Save(d); });
  };
  TensorBoardWriter tb(dir.string());
  events.RunStarted(dir.filename().string(), start);
  const bool tty = ::isatty(STDOUT_FILENO) && &out == &std::cout;
  int it = start;
  bool interrupted = false;
  for (; it < w.run.iterations; ++it) {
    *iteration = it;
    const double elapsed = elapsed_before + Now() - t0;
    if (w.run.max_minutes > 0 && elapsed > w.run.max_minutes * 60) {
      out << (tty ? "\n" : "") << "stopping at the time limit of " << w.run.max_minutes << " min\n";
      break;
    }
    if (options.stop != nullptr && *options.stop) {
      out << (tty ? "\n" : "") << "interrupted: saving a checkpoint at iteration " << it
          << " (continue with --resume)\n";
      interrupted = true;
      break;
    }
    const double ti = Now();
    RolloutOptions ro;
    ro.episodes = w.run.episodes_per_iteration;
    ro.group_size = w.run.group_size;
    ro.seed = Rng::Mix(w.seed, 2, static_cast<uint64_t>(it));
    ro.temperature = w.trainer.temperature;
    ro.correlated = w.run.correlated_team_sampling;
    ro.guided = w.run.guided_choices;
    ro.observer = events.enabled() ? &events : nullptr;
    events.BeginIteration(it + 1, false);
    RolloutBatch batch = rollout.Run(ro, rng);
    const double rollout_s = Now() - ti;
    CreditStats cs = credit.Assign(batch.records);
    events.Credit(it + 1, batch.records);
    std::vector<ModelTrainStats> ts = hub.Update(batch.records);
    const double dt = Now() - ti;

    JsonLine line;
    line.Add("iteration", it + 1);
    line.Add("episodes", static_cast<double>(batch.episodes.size()));
    line.Add("episodes_dropped", static_cast<double>(batch.dropped));
    std::string progress_roles;
    for (size_t r = 0; r < w.roles.size(); ++r) {
      if (!w.roles[r].trained()) continue;
      double n = 0, sum = 0, adv = 0, adv2 = 0, invalid = 0;
      for (const auto& rec : batch.records) {
        if (rec.role != static_cast<int>(r)) continue;
        n += 1; sum += rec.reward; adv += rec.advantage; adv2 += rec.advantage * rec.advantage; invalid += !rec.valid;
      }
      const double mean = n > 0 ? sum / n : 0, am = n > 0 ? adv / n : 0;
      const std::string& name = w.roles[r].name;
      line.Add("reward/" + name, mean);
      line.Add("advantage_mean/" + name, am);
      line.Add("advantage_std/" + name, n > 0 ? std::sqrt(std::max(0.0, adv2 / n - am * am)) : 0);
      line.Add("invalid_rate/" + name, n > 0 ? invalid / n : 0);
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s=%.3f", name.c_str(), mean);
      progress_roles += buf;
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
    const auto game_metrics = MeanMetrics(batch);
    for (const auto& [k, v] : game_metrics) line.Add("game/" + k, v);
    line.Add("forward_calls_per_turn", batch.turns > 0 ? static_cast<double>(batch.forward_calls) / batch.turns : 0);
    line.Add("time/iteration_s", dt);
    line.Add("time/rollout_s", rollout_s);
    line.Add("time/episodes_per_s", batch.episodes.size() / std::max(1e-9, dt));
    line.Add("time/elapsed_s", elapsed_before + Now() - t0);
    {
      std::ofstream f(metrics_path, std::ios::app);
      f << line.Str() << "\n";
    }
    tb.Scalars(it + 1, line.numbers());
    events.Metrics(it + 1, std::map<std::string, double>(line.numbers().begin(), line.numbers().end()),
                   batch.episodes.size() / std::max(1e-9, dt),
                   batch.turns > 0 ? static_cast<double>(batch.forward_calls) / batch.turns : 0);

    if (options.progress) {
      const double per_it = (Now() - t0) / (it + 1 - start);
      std::ostringstream p;
      p << "[it " << it + 1 << "/" << w.run.iterations << "] " << std::fixed << std::setprecision(1)
        << batch.episodes.size() / std::max(1e-9, dt) << " ep/s  reward" << progress_roles;
      for (const char* key : {"team_a_score", "team_a_cooperation", "score"}) {
        auto f = game_metrics.find(key);
        if (f != game_metrics.end()) p << "  " << key << "=" << std::setprecision(2) << f->second;
      }
      p << "  ETA " << Duration(per_it * (w.run.iterations - it - 1));
      if (tty) out << "\r" << p.str() << "\x1b[K" << std::flush;
      else out << p.str() << std::endl;
    }

    if ((it + 1) % w.run.checkpoint_every == 0 || it + 1 == w.run.iterations) save(it + 1);
  }
  if (it > start && it % w.run.checkpoint_every != 0 && it != w.run.iterations) save(it);
  if (tty && options.progress) out << "\n";
  result.iterations = it;
  *iteration = it;
  result.seconds = elapsed_before + Now() - t0;
  if (options.final_eval && !interrupted) {
    result.after = Evaluate(w, hub, w.run.eval_episodes, w.seed, false, w.trainer.temperature);
    WriteFile(dir / "eval_trained.json", EvalJson(*result.after) + "\n");
  }
  events.RunEnded(result.iterations, result.seconds, interrupted, interrupted ? "interrupted" : "");
  return result;
}

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
    WorkerHub hub(
        w, [&](const WorkerNotice& n) { events.WorkerChanged(n); }, &out);
    return TrainWith(w, options, out, hub, events, &iteration);
  } catch (const std::exception& e) {
    events.RunEnded(iteration, Now() - t0, true, e.what());
    throw;
  }
}

}  // namespace troupe
