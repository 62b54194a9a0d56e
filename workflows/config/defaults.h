// The defaults of the workflow schema, in one place: a table written in the
// schema's own text format (defaults.cc). Compilation fills every field a
// workflow leaves unset from it, so the resolved workflow written to a run
// folder states every value that ran, and no default is written twice.
// Architecture options are the exception: each architecture's defaults live in
// its own folder (core/models/NAME/NAME_spec.cc), where its options are.
#pragma once

#include "comms/proto/workflow.pb.h"

namespace troupe {

// Fills every unset field that has a default. Repeated messages (models,
// rewards, pipeline nodes, runtime workers) get the table's one element as
// the default of each of theirs. Optional sections whose presence means
// something (game, pipeline, trainer.hybrid, trainer.sft) are filled only
// when present.
void ApplyDefaults(config::Workflow* workflow);

// The table itself (for documentation and tests).
const config::Workflow& WorkflowDefaults();

}  // namespace troupe
