// An experiment's results from its cells' evaluations (experiment.h): per cell
// and metric the mean over every game of every training seed with its 95%
// bootstrap interval (games resampled within seeds resampled, when there are
// several), and the paired difference from the baseline cell game by game
// (the same evaluation games in every cell) with its interval.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "workflows/report/spread.h"
#include "workflows/run/experiment.h"

namespace troupe {

struct CellSummary {
  int seeds = 0, games = 0;
  std::map<std::string, double> mean;
  std::map<std::string, Interval> interval;
  std::map<std::string, double> diff;  // against the baseline (not for the baseline itself)
  std::map<std::string, Interval> diff_interval;
};

// One training seed's evaluation games of a cell: per game (by episode index) its metrics.
using ExperimentGames = std::map<int, std::map<std::string, double>>;
// Per cell, per training seed, from out_dir/cells/<cell>/seed-k/eval.episodes.jsonl.
std::vector<std::vector<ExperimentGames>> ReadExperimentGames(const CompiledExperiment& experiment,
                                                              const std::string& out_dir);

// Per cell, from the folders under out_dir/cells. Error naming the file when one is missing or malformed, or
// a metric no game reported.
std::vector<CellSummary> SummarizeExperiment(const CompiledExperiment& experiment, const std::string& out_dir);

// Writes results.jsonl, results.md and plots/<metric>.png (.dat, .gp) into out_dir; returns results.md.
std::string WriteExperimentResults(const CompiledExperiment& experiment, const std::string& out_dir);

}  // namespace troupe
