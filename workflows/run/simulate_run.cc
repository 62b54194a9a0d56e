// Playing a workflow without models: ticks, metrics, plots, summary.
#include "workflows/run/simulate_run.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "workflows/report/interval_chart.h"
#include "workflows/report/line_chart.h"
#include "workflows/report/metrics_sink.h"
#include "workflows/report/run_clock.h"
#include "workflows/report/session_events.h"
#include "core/base/file_io.h"

namespace troupe {

namespace fs = std::filesystem;

std::map<std::string, Spread> SpreadOverSeeds(const std::vector<SeedRun>& runs) {
  std::map<std::string, std::vector<double>> values;
  for (const SeedRun& r : runs) {
    for (const auto& [k, v] : r.metrics) {
      if (std::isfinite(v)) values[k].push_back(v);
    }
  }
  std::map<std::string, Spread> out;
  for (const auto& [k, v] : values) out[k] = SpreadOf(v);
  return out;
}

std::vector<SeedRun> Simulate(const CompiledWorkflow& w, const SimulateOptions& o, std::ostream& log) {
  if (!w.rollout.game)
    throw ConfigError(w.file + ": troupe run plays games; a pipeline needs its models (troupe train)");
  std::vector<std::unique_ptr<ScriptedStrategy>> strategies;
  for (const RoleInfo& r : w.rollout.roles) {
    if (r.trained()) {
      throw ConfigError(w.file + ": role '" + r.name +
                        "' plays on a model; troupe run plays scripted and rule-based seats only (troupe train, "
                        "troupe eval for models)");
    }
    strategies.push_back(StrategyFactory::Get().Create(r.scripted));
  }
  std::unique_ptr<MetricsSink> metrics;  // metrics.jsonl and TensorBoard, a run per seed
  if (!o.out_dir.empty()) {
    fs::create_directories(fs::path(o.out_dir) / "plots");
    metrics = std::make_unique<MetricsSink>(o.out_dir, nullptr, false, 0);
  }
  std::map<std::string, std::vector<ChartSeries>> curves;  // metric -> one series per seed
  std::vector<SeedRun> runs;
  const double start = MonotonicSeconds();
  SessionEvents* events = o.events != nullptr && o.events->enabled() ? o.events : nullptr;
  if (events) events->RunStarted(w.proto.name().empty() ? w.rollout.game->Name() : w.proto.name(), 0);
  for (int k = 0; k < o.seeds; ++k) {
    SeedRun run;
    run.seed = w.seed + static_cast<uint64_t>(k);
    Rng rng(Rng::Mix(run.seed, 0x52554E));  // the scripted seats' draws
    const double t0 = MonotonicSeconds();
    std::unique_ptr<State> state = w.rollout.game->NewInitialState(run.seed);
    const std::vector<int> seat_roles = w.rollout.SeatRoles(run.seed);
    std::map<std::string, ChartSeries> seed_curves;
    if (events) {
      events->BeginIteration(k + 1, false);
      events->EpisodeStarted(0, 0, seat_roles);
    }
    while (!state->IsTerminal() && (o.steps <= 0 || run.steps < o.steps)) {
      const int turn = state->Turn();
      const std::vector<Decision> pending = state->PendingDecisions();
      if (pending.empty()) {
        if (!state->Advance()) break;
      } else {
        std::vector<SeatOutput> outputs;
        for (const Decision& d : pending) {
          outputs.push_back({d.seat, strategies.at(seat_roles.at(d.seat))->Act(*state, d, rng)});
        }
        state->Apply(outputs);
      }
      if (events && events->Detailed(0)) events->StateChanged(0, *state);
      // A step is a turn of the game (a world tick, a round): decisions within one are not steps.
      if (state->Turn() == turn && !state->IsTerminal()) continue;
      run.steps = std::max(run.steps + 1, state->Turn());
      if (!metrics) continue;
      JsonLine line;
      line.AddInteger("seed", run.seed).AddInteger("step", static_cast<uint64_t>(run.steps));
      for (const auto& [key, v] : state->Metrics()) {
        line.Add(key, v);
        ChartSeries& s = seed_curves[key];
        s.x.push_back(run.steps);
        s.y.push_back(v);
      }
      metrics->Write(run.steps, line, 0.0, 0.0, "seed_" + std::to_string(run.seed));
    }
    run.seconds = MonotonicSeconds() - t0;
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
      for (const std::string& key : w.rollout.game->HeadlineMetrics(0)) {
        if (run.metrics.count(key)) log << " " << key << " " << run.metrics.at(key);
      }
      log << "\n";
    }
    runs.push_back(std::move(run));
  }
  if (events) events->RunEnded(o.seeds, MonotonicSeconds() - start, false, "");
  if (!o.out_dir.empty()) {
    fs::create_directories(fs::path(o.out_dir) / "plots");
    for (const auto& [key, series] : curves) {
      std::vector<IntervalSeries> lines;
      for (const ChartSeries& c : series) lines.push_back({c.label, c.x, c.y, {}, {}});
      IntervalChartOptions chart;
      chart.title = (w.proto.name().empty() ? w.rollout.game->Name() : w.proto.name()) + ": " + key +
                    (series.size() > 1 ? " (" + std::to_string(series.size()) + " seeds)" : "");
      chart.x_label = "step";
      chart.y_label = key;
      WriteIntervalChart((fs::path(o.out_dir) / "plots" / PlotFileName(key)).string(), lines, chart);
    }
    nlohmann::json summary = nlohmann::json::object();
    for (const auto& [key, s] : SpreadOverSeeds(runs)) {
      summary[key] = {{"mean", s.mean}, {"ci95", s.half_width}, {"seeds", s.n}};
    }
    WriteFileAtomically((fs::path(o.out_dir) / "summary.json").string(), summary.dump(2) + "\n");
  }
  return runs;
}

}  // namespace troupe
