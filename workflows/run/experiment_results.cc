// An experiment's table and plots (experiment_results.h).
#include "workflows/run/experiment_results.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/base/file_io.h"
#include "workflows/report/interval_chart.h"
#include "workflows/run/crossplay.h"

namespace troupe {

namespace fs = std::filesystem;

namespace {

using Games = ExperimentGames;

Games ReadGames(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw Error("cannot read " + file.string());
  Games games;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      std::map<std::string, double>& m = games[j.at("episode").get<int>()];
      for (const auto& [k, v] : j.items()) {
        if (k != "episode" && v.is_number()) m[k] = v.get<double>();
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error(file.string() + ":" + std::to_string(n) + ": " + e.what());
    }
  }
  return games;
}

std::string Number(double v) {
  std::ostringstream s;
  const double a = std::fabs(v);
  s << std::fixed << std::setprecision(a >= 100 ? 1 : a >= 10 ? 2 : 3) << v;
  return s.str();
}

std::string WithInterval(double mean, const Interval& i) {
  return Number(mean) + " [" + Number(i.lo) + ", " + Number(i.hi) + "]";
}

bool Numeric(const std::string& s, double* v) {
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return !s.empty() && end != nullptr && *end == '\0' && std::isfinite(*v);
}

// The plots: each metric against plot_x, one line per value of plot_lines; other axes at their first value.
void WritePlots(const CompiledExperiment& x, const std::vector<CellSummary>& cells, const fs::path& dir,
                std::ostringstream& md) {
  if (x.plot_x < 0) return;
  fs::create_directories(dir);
  const auto& xs = x.spec.axis(x.plot_x);
  bool numeric = true;
  std::vector<double> at;
  for (const auto& v : xs.value()) {
    double n = 0;
    numeric = numeric && Numeric(v.label(), &n);
    at.push_back(n);
  }
  std::vector<std::string> ticks;
  if (!numeric) {
    for (int i = 0; i < xs.value_size(); ++i) at[i] = i, ticks.push_back(xs.value(i).label());
  }
  const int lines = x.plot_lines >= 0 ? x.spec.axis(x.plot_lines).value_size() : 1;
  std::string fixed;
  for (size_t a = 0; a < x.axes.size(); ++a) {
    if (static_cast<int>(a) != x.plot_x && static_cast<int>(a) != x.plot_lines && x.spec.axis(a).value_size() > 1)
      fixed += (fixed.empty() ? "" : ", ") + x.axes[a] + "=" + x.spec.axis(a).value(0).label();
  }
  bool gnuplot = true;
  for (const std::string& metric : x.metrics) {
    std::vector<IntervalSeries> series(lines);
    for (int l = 0; l < lines; ++l) {
      series[l].label = x.plot_lines >= 0 ? x.axes[x.plot_lines] + " " + x.spec.axis(x.plot_lines).value(l).label()
                                          : metric;
    }
    for (size_t c = 0; c < x.cells.size(); ++c) {
      const std::vector<std::string>& labels = x.cells[c].labels;
      bool shown = true;
      for (size_t a = 0; a < x.axes.size(); ++a) {
        if (static_cast<int>(a) != x.plot_x && static_cast<int>(a) != x.plot_lines)
          shown = shown && labels[a] == x.spec.axis(a).value(0).label();
      }
      if (!shown) continue;
      int xi = 0, l = 0;
      for (int v = 0; v < xs.value_size(); ++v) xi = xs.value(v).label() == labels[x.plot_x] ? v : xi;
      if (x.plot_lines >= 0) {
        for (int v = 0; v < lines; ++v) l = x.spec.axis(x.plot_lines).value(v).label() == labels[x.plot_lines] ? v : l;
      }
      const CellSummary& s = cells[c];
      if (!s.mean.count(metric)) continue;
      series[l].x.push_back(at[xi]);
      series[l].y.push_back(s.mean.at(metric));
      series[l].lo.push_back(s.interval.at(metric).lo);
      series[l].hi.push_back(s.interval.at(metric).hi);
    }
    IntervalChartOptions options;
    options.title = metric + " (" + x.name + "; 95% intervals" + (fixed.empty() ? "" : "; " + fixed) + ")";
    options.x_label = x.axes[x.plot_x];
    options.y_label = metric;
    options.x_ticks = ticks;
    const std::string file = PlotFileName(metric);
    gnuplot = WriteIntervalChart((dir / file).string(), series, options) && gnuplot;
    md << "![" << metric << "](plots/" << file << ".png)\n";
  }
  if (!gnuplot) md << "\n(drawn without interval bars: gnuplot is not installed; plots/*.gp draw them)\n";
}

}  // namespace

std::vector<std::vector<ExperimentGames>> ReadExperimentGames(const CompiledExperiment& x, const std::string& out_dir) {
  std::vector<std::vector<Games>> games(x.cells.size());
  for (size_t c = 0; c < x.cells.size(); ++c) {
    for (int k = 0; k < x.spec.seeds(); ++k) {
      games[c].push_back(ReadGames(fs::path(out_dir) / "cells" / x.cells[c].folder / ("seed-" + std::to_string(k)) /
                                   "eval.episodes.jsonl"));
    }
  }
  return games;
}

std::vector<CellSummary> SummarizeExperiment(const CompiledExperiment& x, const std::string& out_dir) {
  const int seeds = x.spec.seeds();
  const std::vector<std::vector<Games>> games = ReadExperimentGames(x, out_dir);
  std::vector<CellSummary> out(x.cells.size());
  // A metric must be reported somewhere; a cell where no game reports it shows none.
  for (const std::string& metric : x.metrics) {
    bool reported = false;
    for (const auto& cell : games) {
      for (const Games& g : cell) {
        for (const auto& [episode, m] : g) reported = reported || m.count(metric) > 0;
      }
    }
    if (reported) continue;
    std::string known;
    if (!games.empty() && !games[0].empty() && !games[0][0].empty()) {
      for (const auto& [k, v] : games[0][0].begin()->second) known += (known.empty() ? "" : ", ") + k;
    }
    throw Error("no game of any cell reports metric '" + metric + "' (the first cell's metrics: " + known + ")");
  }
  for (size_t c = 0; c < x.cells.size(); ++c) {
    CellSummary& s = out[c];
    s.seeds = seeds;
    for (const Games& g : games[c]) s.games += static_cast<int>(g.size());
    for (const std::string& metric : x.metrics) {
      std::vector<std::vector<double>> values(seeds), diffs(seeds);
      double sum = 0, diff_sum = 0;
      int n = 0, paired = 0;
      for (int k = 0; k < seeds; ++k) {
        for (const auto& [episode, m] : games[c][k]) {
          auto it = m.find(metric);
          if (it == m.end()) continue;
          values[k].push_back(it->second);
          sum += it->second, ++n;
          if (x.baseline_of.empty() || x.baseline_of[c] < 0 || x.baseline_of[c] == static_cast<int>(c)) continue;
          const Games& base = games[x.baseline_of[c]][k];
          auto b = base.find(episode);
          if (b == base.end() || !b->second.count(metric)) continue;
          diffs[k].push_back(it->second - b->second.at(metric));
          diff_sum += diffs[k].back(), ++paired;
        }
      }
      if (n == 0) continue;  // e.g. a role's metric in a cell without that role
      s.mean[metric] = sum / n;
      s.interval[metric] = GroupedBootstrapInterval(values);
      if (paired > 0) {
        s.diff[metric] = diff_sum / paired;
        s.diff_interval[metric] = GroupedBootstrapInterval(diffs);
      }
    }
  }
  return out;
}

std::string WriteExperimentResults(const CompiledExperiment& x, const std::string& out_dir) {
  const std::vector<CellSummary> cells = SummarizeExperiment(x, out_dir);
  // results.jsonl: one line per cell.
  std::ostringstream jsonl;
  for (size_t c = 0; c < cells.size(); ++c) {
    nlohmann::json j;
    j["cell"] = x.cells[c].name;
    for (size_t a = 0; a < x.axes.size(); ++a) j["axis/" + x.axes[a]] = x.cells[c].labels[a];
    j["seeds"] = cells[c].seeds;
    j["games"] = cells[c].games;
    for (const std::string& m : x.metrics) {
      if (!cells[c].mean.count(m)) continue;  // no game of the cell reports it
      j[m] = cells[c].mean.at(m);
      j[m + "/lo"] = cells[c].interval.at(m).lo;
      j[m + "/hi"] = cells[c].interval.at(m).hi;
      if (cells[c].diff.count(m)) {
        j["diff/" + m] = cells[c].diff.at(m);
        j["diff/" + m + "/lo"] = cells[c].diff_interval.at(m).lo;
        j["diff/" + m + "/hi"] = cells[c].diff_interval.at(m).hi;
      }
    }
    jsonl << j.dump() << "\n";
  }
  WriteFileAtomically((fs::path(out_dir) / "results.jsonl").string(), jsonl.str());
  // results.md: the table, then the plots.
  std::ostringstream md;
  const int seeds = x.spec.seeds();
  md << "# " << x.name << "\n\n"
     << "`" << x.workflow_file << "`, " << (x.spec.train() ? "trained then evaluated" : "evaluated untrained")
     << " in each cell; " << seeds << " training seed" << (seeds > 1 ? "s" : "") << " a cell, "
     << x.spec.eval_episodes() << " evaluation games a seed (the same games in every cell). Means with 95% "
     << "bootstrap intervals over games" << (seeds > 1 ? " and training seeds" : "");
  if (!x.baseline_of.empty())
    md << "; differences are paired game by game against the baseline (" << x.spec.baseline()
       << ", the other axes as in the row)";
  md << ".\n\n|";
  for (const std::string& a : x.axes) md << " " << a << " |";
  for (const std::string& m : x.metrics) md << " " << m << " |";
  if (!x.baseline_of.empty()) {
    for (const std::string& m : x.metrics) md << " " << m << " - baseline |";
  }
  md << "\n|";
  const size_t columns = x.axes.size() + x.metrics.size() * (x.baseline_of.empty() ? 1 : 2);
  for (size_t i = 0; i < columns; ++i) md << (i < x.axes.size() ? "---|" : "---:|");
  md << "\n";
  for (size_t c = 0; c < cells.size(); ++c) {
    md << "|";
    for (const std::string& l : x.cells[c].labels) md << " " << l << " |";
    for (const std::string& m : x.metrics) {
      md << " " << (cells[c].mean.count(m) ? WithInterval(cells[c].mean.at(m), cells[c].interval.at(m)) : "none")
         << " |";
    }
    if (!x.baseline_of.empty()) {
      for (const std::string& m : x.metrics) {
        md << " "
           << (x.baseline_of[c] == static_cast<int>(c) ? std::string("baseline")
               : !cells[c].mean.count(m)        ? std::string("none")
               : cells[c].diff.count(m)         ? WithInterval(cells[c].diff.at(m), cells[c].diff_interval.at(m))
                                                : std::string("no paired games"))
           << " |";
      }
    }
    md << "\n";
  }
  md << "\n";
  try {
    WritePlots(x, cells, fs::path(out_dir) / "plots", md);
  } catch (const Error& e) {  // the figures are in the table and results.jsonl whatever happens to a plot
    md << "\n(plots not drawn: " << e.what() << ")\n";
  }
  if (x.spec.has_crossplay()) md << "\n" << WriteCrossplay(x, out_dir);
  WriteFileAtomically((fs::path(out_dir) / "results.md").string(), md.str());
  return md.str();
}

}  // namespace troupe
