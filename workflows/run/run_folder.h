// A run folder's life cycle, shared by training and hybrid runs: prepared
// (refusing to overwrite a run unless resuming), and resumed from its newest
// checkpoint after checking it was trained on the same vocabulary.
#pragma once

#include <string>

#include "core/models/checkpoint.h"
#include "workflows/config/compiled_workflow.h"

namespace troupe {

// Creates `dir`, refuses one that already holds a run unless `resume`, and
// writes the resolved workflow into it.
void PrepareRunFolder(const std::string& dir, const CompiledWorkflow& workflow, bool resume);

// Loads the newest checkpoint of `dir` through `load_models`; its saved texts.
// `checkpoint` receives its folder. Throws CheckpointError when there is none
// or it was trained on another vocabulary.
RunState ResumeRun(const std::string& dir, const CompiledWorkflow& workflow, const ModelStateIo& load_models,
                   std::string* checkpoint);

}  // namespace troupe
