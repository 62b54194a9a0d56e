// The policy architectures a ModelConfig names, built, saved and loaded. The
// micro transformer saves as LibTorch's archive (model-NAME.pt); the Llama
// family as a Hugging Face folder (model-NAME/: config.json and
// model.safetensors the field's tools load) with troupe's own parts beside it
// (model-NAME/troupe.safetensors).
#pragma once

#include <string>
#include <vector>

#include "core/models/model_pool.h"
#include "core/models/policy_model.h"

namespace troupe {

// The architectures this build knows ("llama", "transformer").
std::vector<std::string> ArchitectureNames();

// A fresh model (initialised from LibTorch's global generator, which the caller
// seeds), or, with hf_dir, one that starts from that folder's weights. Throws
// ModelError for an unknown architecture, CheckpointError for a bad folder.
PolicyModel BuildPolicyModel(const ModelConfig& config);

// Writes and reads the model's files in a checkpoint folder.
void SavePolicyModel(PolicyModelImpl& model, const ModelConfig& config, const std::string& dir);
void LoadPolicyModel(PolicyModel& model, const ModelConfig& config, const std::string& dir, torch::Device device);

}  // namespace troupe
