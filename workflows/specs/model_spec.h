// The narrow specs the runtime reads, and the configs it builds from them: a
// model worker's wire::ModelServeSpec (one physical model and its trainer,
// resolved) becomes the ModelConfig and TrainerConfig it serves with. The
// controller's in-process workers and `troupe worker` processes build from the
// same spec. Nothing here knows a workflow or a game: the config compiler
// makes these specs (workflows/config/serve_specs.h), the runtime reads them.
#pragma once

#include "comms/proto/runtime.pb.h"
#include "comms/proto/workflow.pb.h"
#include "core/models/model_pool.h"
#include "core/models/trainer.h"

namespace troupe {

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
