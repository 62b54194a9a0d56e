// Cross-play (ExperimentSpec.crossplay): an experiment whose first axis names
// the row players and whose second the column players, read as a payoff
// matrix: per pair the row player's mean payoff over the games of every
// training seed with its 95% bootstrap interval, the share of games it won
// (the higher payoff wins; a tie is a half), and an Elo rating per player
// fitted to all the pairs' results. A label on both axes is one player.
#pragma once

#include <string>
#include <vector>

#include "workflows/report/spread.h"
#include "workflows/run/experiment.h"
#include "workflows/run/experiment_results.h"

namespace troupe {

// What one pair of players did: `wins` of `games` for player `a` against player `b` (ties counted as halves).
struct PairResult {
  int a = 0, b = 0;
  double wins = 0.0;
  int games = 0;
};

// Elo ratings (mean 1500) of `players` players: the Bradley-Terry strengths
// that make the results likeliest (Hunter's MM iteration), each player also
// given one drawn game against an average player so that one who wins or
// loses everything gets a finite rating; 400 log10 of the strength.
std::vector<double> EloRatings(int players, const std::vector<PairResult>& results);

struct CrossplayMatrix {
  std::vector<std::string> rows, columns;  // the two axes' labels
  std::vector<std::string> players;         // rows, then the columns not among them
  std::vector<std::vector<double>> payoff;  // [row][column]: the row player's mean payoff (NaN: no games)
  std::vector<std::vector<Interval>> payoff_interval;
  std::vector<std::vector<double>> win_rate;  // the row player's share of games won
  std::vector<std::vector<int>> games;
  std::vector<double> elo;  // per player
};

CrossplayMatrix Crossplay(const CompiledExperiment& experiment, const std::vector<std::vector<ExperimentGames>>& games);

// crossplay.md, crossplay.jsonl and crossplay.png (with .dat and .gp) into out_dir; returns crossplay.md.
std::string WriteCrossplay(const CompiledExperiment& experiment, const std::string& out_dir);

}  // namespace troupe
