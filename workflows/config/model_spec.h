// The narrow spec a model worker gets (wire::ModelServeSpec): one physical
// model and its trainer, resolved from the compiled workflow, and the model
// and trainer configs the worker builds from it. The controller's in-process
// workers and `troupe worker` processes build from the same spec.
#pragma once

#include "comms/proto/runtime.pb.h"
#include "core/models/model_pool.h"
#include "core/models/trainer.h"
#include "workflows/config/runtime_settings.h"

namespace troupe {

struct CompiledWorkflow;

wire::ModelServeSpec MakeServeSpec(const CompiledWorkflow& workflow, int model);
// Every model's serve spec and the runtime section: all WorkerHub needs.
HubSpec MakeHubSpec(const CompiledWorkflow& workflow);
// Throw ConfigError when the spec names something this build does not know.
ModelConfig ModelConfigOf(const wire::ModelServeSpec& spec);
TrainerConfig TrainerConfigOf(const wire::ModelServeSpec& spec);

// The pieces compilation shares with the above: a model's architecture
// (defaulted; from its hf_dir's config.json when it names none, with that
// folder's vocabulary) and optimiser (no roles or index yet), and a resolved
// trainer and credit section's update settings. CheckpointError for a bad folder.
ModelConfig ModelConfigOf(const config::ModelSpec& model);
TrainerConfig TrainerConfigOf(const config::TrainerSpec& trainer, const config::CreditSpec& credit);

}  // namespace troupe
