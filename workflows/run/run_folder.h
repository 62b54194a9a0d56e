// A training run's folder, prepared: refusing to overwrite a run unless
// resuming, and holding the resolved workflow (the run loop, run_loop.h,
// resumes it).
#pragma once

#include <string>

#include "workflows/config/compiled_workflow.h"

namespace troupe {

// Creates `dir`, refuses one that already holds a run unless `resume`, and
// writes the resolved workflow into it.
void PrepareRunFolder(const std::string& dir, const CompiledWorkflow& workflow, bool resume);

}  // namespace troupe
