// Helpers of the tests that train: a run of a compiled workflow into a folder,
// without progress lines or evaluations.
#pragma once

#include <ostream>
#include <sstream>
#include <string>

#include "workflows/config/compiled_workflow.h"
#include "workflows/run/train_run.h"

namespace troupe::testing {

// `record`: a session file to write ("" none); `log`: where the run's lines go (none: nowhere).
inline TrainResult TrainQuietly(const CompiledWorkflow& w, const std::string& dir, bool resume = false,
                                const std::string& record = "", std::ostream* log = nullptr) {
  TrainOptions o;
  o.out_dir = dir;
  o.resume = resume;
  o.record = record;
  o.progress = false;
  o.final_eval = false;
  std::ostringstream sink;
  return Train(w, o, log != nullptr ? *log : sink);
}

}  // namespace troupe::testing
