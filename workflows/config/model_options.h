// A model entry's checks that game, pipeline and pretraining workflows share:
// its architecture's options (each problem at its field's line) and its
// optimiser, and where a model's option was written, for error positions.
#pragma once

#include <string>
#include <vector>

#include "core/models/model_pool.h"
#include "workflows/config/config_loader.h"

namespace troupe {

// The field holding model i's architecture option `field` (or its hf_dir, or
// the model entry when it names no architecture). The path points into
// `architecture` and `field`, which must outlive it.
std::vector<PathStep> ModelOptionsPath(const LoadedWorkflow& w, int i, const std::string& architecture,
                                       const std::string& field = "");

// Fails at the offending field when model i's resolved config has options
// its architecture refuses, or a learning rate that is not positive.
void CheckModelOptions(const LoadedWorkflow& w, int i, const ModelConfig& model);

// Fails at model i's device when it is not cpu or cuda:N, or names a CUDA
// device this build's LibTorch cannot use.
void CheckModelDevice(const LoadedWorkflow& w, int i);

}  // namespace troupe
