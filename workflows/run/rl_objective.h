// Reinforcement learning as a training objective: each iteration rolls out a
// batch of episodes, assigns credit (rewards and advantages per role and
// turn) and updates every model from the calls that name it. A fresh run may
// start with a supervised warm start from a scripted teacher.
#pragma once

#include <memory>
#include <string>

#include "workflows/config/compiled_workflow.h"
#include "workflows/run/training_objective.h"
#include "workflows/runtime/policy_service.h"

namespace troupe {

class SessionEvents;

// `run_dir`: the run folder (snapshot pools keep their snapshots under it).
std::unique_ptr<TrainingObjective> MakeReinforcementObjective(const CompiledWorkflow& workflow, PolicyService& policy,
                                                              SessionEvents& events, const std::string& run_dir);

}  // namespace troupe
