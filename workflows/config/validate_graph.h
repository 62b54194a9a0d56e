// Graph checks of a workflow with Boost.Graph: channel endpoints, pipeline
// node references, reachability from the start nodes, cycles that need a step
// bound, and a reachable end.
#pragma once

#include <vector>

#include "core/params.h"
#include "workflows/config/config_loader.h"

namespace troupe {

struct CompiledWorkflow;

// A plug-in's typed params (a game's, a task's, a tool's), failing at the
// offending param's position under `owner`.
Params ResolveParams(const LoadedWorkflow& w, const std::vector<ParamSpec>& specs,
                     const google::protobuf::RepeatedPtrField<config::Param>& given, std::vector<PathStep> owner);

// Checks channels: endpoints are roles (or nodes in a pipeline), latent modes
// join trained roles of a game with message phases (or trainer.hybrid), a role
// sends one mode and size, a model reads vectors of one width. Changes nothing.
void ValidateChannels(const LoadedWorkflow& w, const CompiledWorkflow& c);
// Records what validated channels mean: latent projections and adapters on the
// models, each sending role's message mode and sizes.
void CompileChannels(const LoadedWorkflow& w, CompiledWorkflow& c);
// Resolves and checks a pipeline's nodes and edges; fills c.pipeline.
void ValidatePipelineGraph(const LoadedWorkflow& w, CompiledWorkflow& c);

}  // namespace troupe

namespace troupe {

// Resolves the runtime section (compile_runtime.cc): external workers name
// models of the workflow, endpoints parse, timeouts are positive.
void CompileRuntime(const LoadedWorkflow& w, CompiledWorkflow& c);

}  // namespace troupe

namespace troupe {

// Resolves models' snapshots and roles' pools (compile_pools.cc): snapshot
// schedules are positive, a pool draws from learning roles whose models take
// snapshots, shares are shares, its signal is one of the game's.
void CompilePools(const LoadedWorkflow& w, CompiledWorkflow& c);

}  // namespace troupe
