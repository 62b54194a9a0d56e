// What a training run optimises, one iteration at a time: reinforcement
// learning from rollouts (rl_objective.h) or the two-stage distillation of
// hybrid messages (distill_objective.h). Both train through the PolicyService,
// so the model workers serve either. The run loop (run_loop.h) owns resume,
// checkpoints, stops, metrics sinks and the progress line; the training run
// (train_run.cc) adds evaluations, the warm start and session events.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

#include "workflows/run/run_loop.h"

namespace troupe {

class TrainingObjective : public RunObjective {
 public:
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
};

}  // namespace troupe
