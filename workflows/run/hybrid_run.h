// `troupe train` for workflows with trainer.hybrid: agents exchange TEXT,
// LATENT or HYBRID messages (the channels' mode) and are trained by the
// two-stage distillation of core/hybrid_comm.h from a scripted teacher's text
// messages, then evaluated on fresh episodes: task accuracy against text
// tokens, latent vectors and bytes on the wire per episode.
#pragma once

#include <iosfwd>
#include <map>
#include <string>

#include "workflows/config/compiled_workflow.h"
#include "workflows/run/train_run.h"

namespace troupe {

struct HybridEval {
  std::map<std::string, double> metrics;  // accuracy, text_tokens, latent_vectors, wire_bytes (per episode)...
};

struct HybridResult {
  HybridEval before, after;
  int steps = 0;
  double seconds = 0.0;
};

HybridResult HybridTrain(const CompiledWorkflow& workflow, const TrainOptions& options, std::ostream& out);

// The before/after table of a hybrid run.
std::string HybridTable(const HybridResult& result);

}  // namespace troupe
