// `troupe run`: a workflow played without training, seed after seed. Seats
// are scripted (or nobody decides: the game runs by its own rules, as
// Sugarscape does); each tick's episode metrics go through the metrics sink
// every run kind writes through (metrics_sink.h: metrics.jsonl, and
// TensorBoard with a run per seed), each metric's curve over the ticks (one
// line per seed) to plots/NAME.png, and the
// seeds' means with 95% intervals to summary.json and a table.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "workflows/config/compiled_workflow.h"
#include "workflows/report/spread.h"

namespace troupe {

class SessionEvents;

struct SimulateOptions {
  int steps = 0;        // ticks per seed at most; 0: until the episode ends
  int seeds = 1;        // seeds seed, seed + 1, ... (the workflow's seed first)
  std::string out_dir;  // empty: write nothing
  bool progress = true;
  // Session events (viewers, recordings): each seed is an iteration of one
  // episode, with the state after every tick and the metrics at its end.
  SessionEvents* events = nullptr;
};

struct SeedRun {
  uint64_t seed = 0;
  int steps = 0;  // ticks played
  double seconds = 0.0;
  std::map<std::string, double> metrics;  // the episode's metrics at its end
};

// Each metric over seeds: mean and the half-width of its 95% interval (Student's t).
std::map<std::string, Spread> SpreadOverSeeds(const std::vector<SeedRun>& runs);

// Throws ConfigError when a role needs a model (`troupe run` trains nothing and loads nothing).
std::vector<SeedRun> Simulate(const CompiledWorkflow& workflow, const SimulateOptions& options, std::ostream& log);

}  // namespace troupe
