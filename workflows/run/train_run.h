// `troupe train`: the training loop of a compiled workflow and what it leaves
// in the run folder (resolved config, metrics.jsonl, TensorBoard events,
// checkpoints, before/after evaluation).
#pragma once

#include <atomic>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "workflows/config/compiled_workflow.h"
#include "workflows/run/evaluate.h"

namespace troupe {

struct TrainOptions {
  std::string out_dir = "runs/latest";
  bool resume = false;
  bool progress = true;           // live progress line (plain lines when not a terminal)
  bool final_eval = true;         // evaluate before and after training and print the table
  std::string publish;            // session events PUB endpoint (overrides runtime.publish)
  std::string record;             // session file to write
  double await_subscriber_s = 0;  // publishing: wait this long for a subscriber before starting
  // Set (e.g. by a signal handler) to stop after the current iteration with a checkpoint.
  const std::atomic<bool>* stop = nullptr;
  // > 0: stop as if interrupted once the run has reached this iteration (hybrid runs: step).
  int stop_at = 0;
};

struct TrainResult {
  std::string run_dir;
  int iterations = 0;
  double seconds = 0.0;
  std::optional<EvalResult> before, after;
  std::optional<EvalResult> warm;  // after the supervised warm start, when there was one
  std::optional<BestScore> best;
  std::vector<std::string> headline;  // the game's headline metrics: the table's rows
};

TrainResult Train(const CompiledWorkflow& workflow, const TrainOptions& options, std::ostream& out);

// The untrained/trained/best table printed at the end of a run.
std::string ResultTable(const TrainResult& result);

// Keys of metrics.jsonl that depend on wall-clock time (excluded from determinism checks).
bool IsTimingKey(const std::string& key);

}  // namespace troupe
