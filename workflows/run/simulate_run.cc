// Playing a workflow without models: ticks, metrics, plots, summary.
#include "workflows/run/simulate_run.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "workflows/run/line_chart.h"
#include "workflows/run/session_events.h"

namespace troupe {

namespace fs = std::filesystem;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Student's t at 97.5% for n - 1 degrees of freedom (the normal's 1.96 beyond 30).
double T975(int n) {
  static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                             2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  const int df = n - 1;
  return df <= 0 ? 0.0 : df <= 30 ? t[df] : 1.96;
}

nlohmann::json Number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

std::map<std::string, Spread> SpreadOverSeeds(const std::vector<SeedRun>& runs) {
  std::map<std::string, std::vector<double>> values;
  for (const SeedRun& r : runs) {
    for (const auto& [k, v] : r.metrics) {
      if (std::isfinite(v)) values[k].push_back(v);
    }
  }
  std::map<std::string, Spread> out;
  for (const auto& [k, v] : values) {
    Spread s;
    s.n = static_cast<int>(v.size());
    for (double x : v) s.mean += x / s.n;
    double var = 0;
    for (double x : v) var += (x - s.mean) * (x - s.mean);
    if (s.n > 1) s.half_width = T975(s.n) * std::sqrt(var / (s.n - 1)) / std::sqrt(static_cast<double>(s.n));
    out[k] = s;
  }
  return out;
}

std::vector<SeedRun> Simulate(const CompiledWorkflow& w, const SimulateOptions& o, std::ostream& log) {
  if (!w.game) throw ConfigError(w.file + ": troupe run plays games; a pipeline needs its models (troupe train)");
  std::vector<std::unique_ptr<ScriptedStrategy>> strategies;
  for (const RoleInfo& r : w.roles) {
    if (r.trained()) {
      throw ConfigError(w.file + ": role '" + r.name +
                        "' plays on a model; troupe run plays scripted and rule-based seats only (troupe train, "
                        "troupe eval for models)");
    }
    strategies.push_back(StrategyFactory::Get().Create(r.scripted));
  }
  std::ofstream metrics;
  if (!o.out_dir.empty()) {
    fs::create_directories(fs::path(o.out_dir) / "plots");
    metrics.open(fs::path(o.out_dir) / "metrics.jsonl", std::ios::trunc);
    if (!metrics) throw Error("cannot write " + (fs::path(o.out_dir) / "metrics.jsonl").string());
  }
  std::map<std::string, std::vector<ChartSeries>> curves;  // metric -> one series per seed
  std::vector<SeedRun> runs;
  const double start = Seconds();
  SessionEvents* events = o.events != nullptr && o.events->enabled() ? o.events : nullptr;
  if (events) events->RunStarted(w.proto.name().empty() ? w.game->Name() : w.proto.name(), 0);
  for (int k = 0; k < o.seeds; ++k) {
    SeedRun run;
    run.seed = w.seed + static_cast<uint64_t>(k);
    Rng rng(Rng::Mix(run.seed, 0x52554E));  // the scripted seats' draws
    const double t0 = Seconds();
    std::unique_ptr<State> state = w.game->NewInitialState(run.seed);
    std::map<std::string, ChartSeries> seed_curves;
    if (events) {
      events->BeginIteration(k + 1, false);
      events->EpisodeStarted(0, 0);
    }
    while (!state->IsTerminal() && (o.steps <= 0 || run.steps < o.steps)) {
      const std::vector<Decision> pending = state->PendingDecisions();
      if (pending.empty()) {
        if (!state->Advance()) break;
      } else {
        std::vector<SeatOutput> outputs;
        for (const Decision& d : pending) {
          outputs.push_back({d.seat, strategies.at(w.seat_role.at(d.seat))->Act(*state, d, rng)});
        }
        state->Apply(outputs);
      }
      ++run.steps;
      if (events && events->Detailed(0)) events->StateChanged(0, *state);
      if (o.out_dir.empty()) continue;
      const std::map<std::string, double> m = state->Metrics();
      nlohmann::json line = {{"seed", run.seed}, {"step", run.steps}};
      for (const auto& [key, v] : m) {
        line[key] = Number(v);
        ChartSeries& s = seed_curves[key];
        s.x.push_back(run.steps);
        s.y.push_back(v);
      }
      metrics << line.dump() << "\n";
    }
    run.seconds = Seconds() - t0;
    run.metrics = state->Metrics();
    if (events) {
      events->EpisodeEnded(0, {run.metrics, state->ToString(), false});
      events->Metrics(k + 1, run.metrics, 0.0, 0.0);
    }
    for (auto& [key, s] : seed_curves) {
      s.label = "seed " + std::to_string(run.seed);
      curves[key].push_back(std::move(s));
    }
    if (o.progress) {
      log << "seed " << run.seed << ": " << run.steps << " steps in " << std::fixed << std::setprecision(3)
          << run.seconds << " s;" << std::defaultfloat;
      for (const std::string& key : w.game->HeadlineMetrics(0)) {
        if (run.metrics.count(key)) log << " " << key << " " << run.metrics.at(key);
      }
      log << "\n";
    }
    runs.push_back(std::move(run));
  }
  if (events) events->RunEnded(o.seeds, Seconds() - start, false, "");
  if (!o.out_dir.empty()) {
    for (const auto& [key, series] : curves) {
      WriteLineChartPng((fs::path(o.out_dir) / "plots" / (key + ".png")).string(), series,
                        {(w.proto.name().empty() ? w.game->Name() : w.proto.name()) + ": " + key +
                             (series.size() > 1 ? " (" + std::to_string(series.size()) + " seeds)" : ""),
                         "step"});
    }
    nlohmann::json summary = nlohmann::json::object();
    for (const auto& [key, s] : SpreadOverSeeds(runs)) {
      summary[key] = {{"mean", s.mean}, {"ci95", s.half_width}, {"seeds", s.n}};
    }
    std::ofstream(fs::path(o.out_dir) / "summary.json") << summary.dump(2) << "\n";
  }
  return runs;
}

}  // namespace troupe
