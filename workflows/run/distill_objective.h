// The two-stage distillation of hybrid latent-text messages (trainer.hybrid)
// as a training objective. Each step plays a batch of episodes with the
// scripted teacher up to their first tick of messages (the game's message
// phases, any seats). Stage 1 distils each sender's text message into its own
// latents; stage 2 trains the readers of the next tick on the senders' latents
// (made by the sender models, as in a rollout) against a teacher pass that
// reads the messages as text. The steps run on the model workers
// (PolicyService::HybridStep); evaluation is a greedy rollout, so messages are
// generated and read exactly as in any run with latent channels.
#pragma once

#include <iosfwd>
#include <memory>

#include "workflows/config/compiled_workflow.h"
#include "workflows/run/training_objective.h"
#include "workflows/runtime/policy_service.h"

namespace troupe {

class SessionEvents;

// `out` hears one line describing the run.
std::unique_ptr<TrainingObjective> MakeDistillationObjective(const CompiledWorkflow& workflow, PolicyService& policy,
                                                             SessionEvents& events, std::ostream& out);

}  // namespace troupe
