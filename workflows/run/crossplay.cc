// Cross-play matrices and ratings (crossplay.h).
#include "workflows/run/crossplay.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/base/file_io.h"
#include "workflows/report/heatmap_chart.h"

namespace troupe {

namespace fs = std::filesystem;

std::vector<double> EloRatings(int players, const std::vector<PairResult>& results) {
  // Each player's wins and, per opponent, the games between them; one drawn game against an
  // average player (strength 1) each, as a prior.
  std::vector<double> wins(players, 0.5), strength(players, 1.0);
  std::vector<std::vector<double>> games(players, std::vector<double>(players, 0.0));
  for (const PairResult& r : results) {
    if (r.a < 0 || r.b < 0 || r.a >= players || r.b >= players) throw Error("a cross-play result names no player");
    if (r.a == r.b) continue;  // a player against itself says nothing about its rating
    wins[r.a] += r.wins;
    wins[r.b] += r.games - r.wins;
    games[r.a][r.b] += r.games;
    games[r.b][r.a] += r.games;
  }
  for (int iteration = 0; iteration < 2000; ++iteration) {
    double change = 0.0;
    std::vector<double> next(players);
    for (int i = 0; i < players; ++i) {
      double denominator = 1.0 / (strength[i] + 1.0);  // the prior's game
      for (int j = 0; j < players; ++j) {
        if (games[i][j] > 0) denominator += games[i][j] / (strength[i] + strength[j]);
      }
      next[i] = wins[i] / denominator;
    }
    for (int i = 0; i < players; ++i) {
      change = std::max(change, std::fabs(std::log(next[i] / strength[i])));
      strength[i] = next[i];
    }
    if (change < 1e-10) break;
  }
  std::vector<double> elo(players);
  double mean = 0.0;
  for (int i = 0; i < players; ++i) mean += elo[i] = 400.0 * std::log10(strength[i]);
  mean /= std::max(1, players);
  for (double& e : elo) e += 1500.0 - mean;
  return elo;
}

CrossplayMatrix Crossplay(const CompiledExperiment& x, const std::vector<std::vector<ExperimentGames>>& games) {
  const config::CrossplaySpec& spec = x.spec.crossplay();
  CrossplayMatrix m;
  for (const auto& v : x.spec.axis(0).value()) m.rows.push_back(v.label());
  for (const auto& v : x.spec.axis(1).value()) m.columns.push_back(v.label());
  m.players = m.rows;
  for (const std::string& c : m.columns) {
    if (std::find(m.players.begin(), m.players.end(), c) == m.players.end()) m.players.push_back(c);
  }
  auto player = [&](const std::string& label) {
    return static_cast<int>(std::find(m.players.begin(), m.players.end(), label) - m.players.begin());
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  m.payoff.assign(m.rows.size(), std::vector<double>(m.columns.size(), nan));
  m.win_rate = m.payoff;
  m.payoff_interval.assign(m.rows.size(), std::vector<Interval>(m.columns.size()));
  m.games.assign(m.rows.size(), std::vector<int>(m.columns.size(), 0));
  std::vector<PairResult> results;
  bool any = false;
  for (size_t c = 0; c < x.cells.size(); ++c) {
    const auto r = std::find(m.rows.begin(), m.rows.end(), x.cells[c].labels[0]) - m.rows.begin();
    const auto k = std::find(m.columns.begin(), m.columns.end(), x.cells[c].labels[1]) - m.columns.begin();
    std::vector<std::vector<double>> payoffs;
    double sum = 0.0, won = 0.0;
    int n = 0;
    for (const ExperimentGames& seed : games[c]) {
      payoffs.emplace_back();
      for (const auto& [episode, metrics] : seed) {
        const auto mine = metrics.find(spec.row_metric()), theirs = metrics.find(spec.column_metric());
        if (mine == metrics.end() || theirs == metrics.end()) continue;
        payoffs.back().push_back(mine->second);
        sum += mine->second;
        won += mine->second > theirs->second ? 1.0 : mine->second == theirs->second ? 0.5 : 0.0;
        ++n;
      }
    }
    if (n == 0) continue;
    any = true;
    m.payoff[r][k] = sum / n;
    m.payoff_interval[r][k] = GroupedBootstrapInterval(payoffs);
    m.win_rate[r][k] = won / n;
    m.games[r][k] = n;
    results.push_back({player(m.rows[r]), player(m.columns[k]), won, n});
  }
  if (!any) {
    throw Error("cross-play: no game of any cell reports both '" + spec.row_metric() + "' and '" +
                spec.column_metric() + "'");
  }
  m.elo = EloRatings(static_cast<int>(m.players.size()), results);
  return m;
}

namespace {

std::string Fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

}  // namespace

std::string WriteCrossplay(const CompiledExperiment& x, const std::string& out_dir) {
  const CrossplayMatrix m = Crossplay(x, ReadExperimentGames(x, out_dir));
  const config::CrossplaySpec& spec = x.spec.crossplay();
  std::ostringstream md;
  md << "## Cross-play\n\nRows: " << x.axes[0] << " (payoff `" << spec.row_metric() << "`); columns: " << x.axes[1]
     << " (payoff `" << spec.column_metric() << "`). The row player's mean payoff with its 95% bootstrap interval"
     << " and, below it, the share of games it won (the higher payoff wins; a tie is a half).\n\n|  |";
  for (const std::string& c : m.columns) md << " " << c << " |";
  md << "\n|---|";
  for (size_t c = 0; c < m.columns.size(); ++c) md << "---:|";
  md << "\n";
  for (size_t r = 0; r < m.rows.size(); ++r) {
    md << "| " << m.rows[r] << " |";
    for (size_t c = 0; c < m.columns.size(); ++c) {
      if (m.games[r][c] == 0) {
        md << " none |";
        continue;
      }
      md << " " << Fixed(m.payoff[r][c], 2) << " [" << Fixed(m.payoff_interval[r][c].lo, 2) << ", "
         << Fixed(m.payoff_interval[r][c].hi, 2) << "]<br>won " << Fixed(m.win_rate[r][c], 2) << " |";
    }
    md << "\n";
  }
  // Ratings, best first.
  std::vector<size_t> order(m.players.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return m.elo[a] > m.elo[b]; });
  md << "\nElo ratings (mean 1500; fitted to every pair's wins, a label on both axes one player):\n\n"
     << "| player | Elo |\n|---|---:|\n";
  for (size_t i : order) md << "| " << m.players[i] << " | " << Fixed(m.elo[i], 0) << " |\n";
  // crossplay.jsonl: one line per pair, then one per player.
  std::ostringstream jsonl;
  for (size_t r = 0; r < m.rows.size(); ++r) {
    for (size_t c = 0; c < m.columns.size(); ++c) {
      if (m.games[r][c] == 0) continue;
      jsonl << nlohmann::json{{"row", m.rows[r]}, {"column", m.columns[c]}, {"payoff", m.payoff[r][c]},
                              {"payoff/lo", m.payoff_interval[r][c].lo}, {"payoff/hi", m.payoff_interval[r][c].hi},
                              {"win_rate", m.win_rate[r][c]}, {"games", m.games[r][c]}}
                   .dump()
            << "\n";
    }
  }
  for (size_t i = 0; i < m.players.size(); ++i) jsonl << nlohmann::json{{"player", m.players[i]}, {"elo", m.elo[i]}}.dump() << "\n";
  WriteFileAtomically((fs::path(out_dir) / "crossplay.jsonl").string(), jsonl.str());
  HeatmapOptions o;
  o.title = x.name + ": " + spec.row_metric() + " of the row player";
  o.x_label = x.axes[1];
  o.y_label = x.axes[0];
  o.rows = m.rows;
  o.columns = m.columns;
  try {
    if (WriteHeatmap((fs::path(out_dir) / "crossplay").string(), m.payoff, o)) {
      md << "\n![cross-play](crossplay.png)\n";
    } else {
      md << "\n(heatmap not drawn: gnuplot is not installed; crossplay.gp draws it)\n";
    }
  } catch (const Error& e) {  // the figures are in the table and crossplay.jsonl whatever happens to the picture
    md << "\n(heatmap not drawn: " << e.what() << ")\n";
  }
  WriteFileAtomically((fs::path(out_dir) / "crossplay.md").string(), md.str());
  return md.str();
}

}  // namespace troupe
