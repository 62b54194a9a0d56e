// What a training run optimises, one iteration at a time: reinforcement
// learning from rollouts (rl_objective.h) or the two-stage distillation of
// hybrid messages (distill_objective.h). Both train through the PolicyService,
// so the model workers serve either. The run loop (train_run.cc) owns the rest:
// run folder, resume, checkpoints, Ctrl-C, evaluations, metrics sinks, session
// events and the progress line.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

#include "core/models/checkpoint.h"
#include "workflows/run/metrics_log.h"

namespace troupe {

// What one iteration reports.
struct IterationReport {
  bool has_line = false;  // a line for metrics.jsonl (the loop adds time/elapsed_s)
  JsonLine line;
  double episodes_per_s = 0.0;
  double forward_calls_per_turn = 0.0;
  std::string progress;  // the progress line's figures
};

class TrainingObjective {
 public:
  virtual ~TrainingObjective() = default;
  virtual int iterations() const = 0;
  virtual int checkpoint_every() const = 0;
  // Lines of metrics.jsonl written by the first `iterations` iterations.
  virtual int LinesAfter(int iterations) const = 0;
  // What an iteration is called in messages ("iteration", "step").
  virtual std::string unit() const = 0;
  // Evaluations before and after training: greedy, or sampled at the trainer's temperature.
  virtual bool greedy_evaluation() const = 0;
  // A fresh run's start (after the untrained evaluation): e.g. a supervised
  // warm start. True when it trained the models (the run evaluates them then too).
  // `progress`: report how far it is as it goes.
  virtual bool WarmStart(std::ostream& out, bool progress) {
    (void)out;
    (void)progress;
    return false;
  }
  virtual IterationReport Iterate(int iteration) = 0;
  // The objective's own state in a checkpoint (RNGs, baselines, partial sums).
  virtual void Save(RunState* state) const = 0;
  virtual void Load(RunState& state) = 0;
};

}  // namespace troupe
