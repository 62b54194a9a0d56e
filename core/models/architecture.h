// The LibTorch half of a model architecture: its module, built from a
// ModelConfig (whose spec holds the architecture's options), and its files
// in a checkpoint folder. Each architecture's folder (core/models/<name>/)
// implements one in <name>_architecture.cc and registers it with
// TROUPE_REGISTER_ARCHITECTURE under the name of its ArchitectureSpec
// (architecture_spec.h); nothing outside that folder names it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/models/architecture_spec.h"
#include "core/models/model_pool.h"
#include "core/models/policy_model.h"

namespace troupe {

class Architecture {
 public:
  virtual ~Architecture() = default;
  // A fresh model (initialised from LibTorch's global generator, which the
  // caller seeds), or, with config.hf_dir, one that starts from that folder's
  // weights. ModelError for options that do not fit, CheckpointError for a bad folder.
  virtual PolicyModel Build(const ModelConfig& config) const = 0;
  // Writes and reads the model's files in a checkpoint folder.
  virtual void Save(PolicyModelImpl& model, const ModelConfig& config, const std::string& dir) const = 0;
  virtual void Load(PolicyModel& model, const ModelConfig& config, const std::string& dir,
                    torch::Device device) const = 0;
  // Whether a parameter is one of the field's (what a Hugging Face folder
  // holds and pretraining trains) rather than one of troupe's own parts.
  virtual bool IsFieldParameter(const std::string& name) const = 0;
  // Writes the model as a Hugging Face folder (config.json and the field's
  // weights, F32 or BF16, in shards of at most max_shard_bytes when > 0).
  // ModelError for an architecture without one.
  virtual void WriteHfFolder(PolicyModelImpl& model, const ModelConfig& config, const std::string& dir,
                             bool bf16 = false, size_t max_shard_bytes = 0) const = 0;
  // Copies the field's parameters from a Hugging Face folder's weights (by
  // name, shape-checked); troupe's parts stay. ModelError for an architecture without one.
  virtual void ReadHfWeights(PolicyModelImpl& model, const std::string& dir) const = 0;
};

using ArchitectureRegistry = Registry<Architecture>;

#define TROUPE_REGISTER_ARCHITECTURE(name, Type) \
  TROUPE_REGISTER(::troupe::ArchitectureRegistry, name, [] { return std::make_unique<Type>(); })

// troupe's parts of config's model (roles, adapters, latent parts).
TroupeParts TroupePartsOf(const ModelConfig& config);

// The architecture config.spec names.
const Architecture& ArchitectureOf(const ModelConfig& config);

// The parameters of `model` that are the field's (what its Hugging Face folder
// holds; troupe's own parts not counted).
int64_t FieldParameterCount(PolicyModelImpl& model, const ModelConfig& config);

// What the pool and the trainers call.
PolicyModel BuildPolicyModel(const ModelConfig& config);
void SavePolicyModel(PolicyModelImpl& model, const ModelConfig& config, const std::string& dir);
void LoadPolicyModel(PolicyModel& model, const ModelConfig& config, const std::string& dir, torch::Device device);

// The config of a model that a Hugging Face folder holds (its architecture by
// config.json's model_type; vocab_size and sizes from it; float32, one role).
ModelConfig HfFolderConfig(const std::string& dir);
// That model, with its weights. CheckpointError names the file that is wrong.
PolicyModel LoadHfFolder(const std::string& dir);

}  // namespace troupe
