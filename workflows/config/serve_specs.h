// Making the narrow specs the runtime gets from a compiled workflow: each
// model worker's wire::ModelServeSpec and the controller's HubSpec
// (workflows/specs/ reads them).
#pragma once

#include "comms/proto/runtime.pb.h"
#include "workflows/specs/runtime_settings.h"

namespace troupe {

struct CompiledWorkflow;

wire::ModelServeSpec MakeServeSpec(const CompiledWorkflow& workflow, int model);
// Every model's serve spec and the runtime section: all WorkerHub needs.
HubSpec MakeHubSpec(const CompiledWorkflow& workflow);

}  // namespace troupe
