// Helpers of the tests that train: a run of a compiled workflow into a folder,
// without progress lines or evaluations.
#pragma once

#include <sstream>
#include <string>

#include "workflows/config/compiled_workflow.h"
#include "workflows/run/train_run.h"

namespace troupe::testing {

// `record`: a session file to write ("" none).
inline TrainResult TrainQuietly(const CompiledWorkflow& w, const std::string& dir, bool resume = false,
                                const std::string& record = "") {
  TrainOptions o;
  o.out_dir = dir;
  o.resume = resume;
  o.record = record;
  o.progress = false;
  o.final_eval = false;
  std::ostringstream sink;
  return Train(w, o, sink);
}

}  // namespace troupe::testing
