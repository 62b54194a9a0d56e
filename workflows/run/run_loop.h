// The one loop over a run folder that every run kind goes through: training
// (reinforcement learning, hybrid message distillation) and pretraining.
// It owns what they share: resuming from the newest checkpoint (models, the
// objective's state, elapsed time, metrics.jsonl cut back to the checkpoint),
// the stop conditions (iterations, the time limit, Ctrl-C, a test's stop_at),
// checkpoints on a schedule, the metrics sinks (metrics.jsonl, TensorBoard,
// session events) and the progress line with its ETA. What differs between
// run kinds is the objective plugged in: what one iteration does and reports.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "core/checkpoint.h"
#include "workflows/report/metrics_log.h"

namespace troupe {

class SessionEvents;

// What one iteration reports.
struct IterationReport {
  bool has_line = false;  // a line for metrics.jsonl (the loop adds time/elapsed_s)
  JsonLine line;
  double episodes_per_s = 0.0;          // for the session event
  double forward_calls_per_turn = 0.0;  // for the session event
  std::string progress;                 // the progress line's figures
};

class RunObjective {
 public:
  virtual ~RunObjective() = default;
  virtual int iterations() const = 0;
  virtual int checkpoint_every() const = 0;
  // What an iteration is called in messages ("iteration", "step").
  virtual std::string unit() const = 0;
  virtual IterationReport Iterate(int iteration) = 0;
  // Lines of metrics.jsonl written by the first `iterations` iterations, for
  // checkpoints older than the loop's own count of them.
  virtual int LinesAfter(int iterations) const { return iterations; }
  // The objective's own state in a checkpoint (RNGs, baselines, partial sums).
  virtual void Save(RunState* state) const = 0;
  virtual void Load(RunState& state) = 0;
};

// The run folder and how the loop runs in it.
struct RunLoopSpec {
  std::string dir;
  bool resume = false;
  bool progress = true;                     // the progress line
  bool tty = false;                         // the progress line rewrites itself (a terminal) or prints lines
  const std::atomic<bool>* stop = nullptr;  // set (Ctrl-C): checkpoint and stop
  int stop_at = 0;                          // > 0: checkpoint and stop at this iteration (tests)
  double max_minutes = 0;                   // > 0: stop once this much time has run
  SessionEvents* events = nullptr;          // metrics as session events too; null: none
  RunState checkpoint_state;                // texts every checkpoint carries (e.g. the vocabulary's fingerprint)
  ModelStateIo save_models, load_models;    // the models' files in a checkpoint folder
};

struct RunLoopEnd {
  int iterations = 0;        // done, in all
  double seconds = 0.0;      // of iterating, resumed runs' earlier time included
  bool interrupted = false;  // Ctrl-C or stop_at
  bool time_limit = false;   // stopped at max_minutes
};

class RunLoop {
 public:
  RunLoop(RunLoopSpec spec, RunObjective& objective, std::ostream& out);
  // With spec.resume: loads the folder's newest checkpoint (models and the
  // objective's state) and returns its texts; `checkpoint` receives its folder.
  // CheckpointError when there is none.
  RunState Resume(std::string* checkpoint);
  // Iterates from the start (or where Resume left it) to the end or a stop.
  RunLoopEnd Run();
  int start() const { return start_; }

 private:
  double Elapsed() const;
  void Save(int iteration);
  void Progress(int iteration, const std::string& figures);

  RunLoopSpec spec_;
  RunObjective& objective_;
  std::ostream& out_;
  int start_ = 0;
  int64_t lines_ = 0;  // of metrics.jsonl, as of the last checkpoint or iteration
  double elapsed_before_ = 0.0;
  double t0_ = 0.0;
};

}  // namespace troupe
