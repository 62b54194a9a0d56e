// Starting a model from another run's checkpoint (ModelConfig::init): the
// source model is built as that run built it, loaded from the checkpoint, and
// its parameters copied over; along a vocabulary axis row by row through the
// token map, along a role axis slot by slot, fresh where a map says -1.
#pragma once

#include <string>
#include <vector>

#include "core/models/model_pool.h"
#include "core/models/policy_model.h"

namespace troupe {

// Which axis of a parameter runs over the vocabulary and which over the roles
// on the model (-1: none), by the parameter's name in every architecture
// (token embeddings, output heads, role embeddings, per-role adapters and heads).
struct ParameterAxes {
  int vocab = -1, role = -1;
};
ParameterAxes ParameterAxesOf(const std::string& name);

// Loads config.init into `model` (built from `config`). CheckpointError naming
// the checkpoint and the parameter when they do not fit.
void StartFromCheckpoint(PolicyModelImpl& model, const ModelConfig& config);

}  // namespace troupe
