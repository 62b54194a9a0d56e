// What every architecture stored as a Hugging Face folder shares: in a
// checkpoint, model-NAME/ holds config.json and model.safetensors (the
// field's parameters, the names the field's tools load), troupe.safetensors
// (troupe's own parts: value head, role embeddings, adapters, latent parts)
// and the model's tokenizer; a workflow's hf_dir starts a model from such a
// folder. An architecture says which parameters are the field's and builds
// its fresh module; the rest is here.
#pragma once

#include <string>
#include <vector>

#include "core/models/architecture.h"

namespace troupe {

class SafetensorsModel;

class HfArchitecture : public Architecture {
 public:
  PolicyModel Build(const ModelConfig& config) const override;
  void Save(PolicyModelImpl& model, const ModelConfig& config, const std::string& dir) const override;
  void Load(PolicyModel& model, const ModelConfig& config, const std::string& dir, torch::Device device) const override;
  void WriteHfFolder(PolicyModelImpl& model, const ModelConfig& config, const std::string& dir, bool bf16 = false,
                     size_t max_shard_bytes = 0) const override;
  void ReadHfWeights(PolicyModelImpl& model, const std::string& dir) const override;

 protected:
  // A fresh module of config's options.
  virtual PolicyModel BuildFresh(const ModelConfig& config) const = 0;
  // The names a parameter of the field may have in a file, tried in order
  // (the first present is read); its own name by default.
  virtual std::vector<std::string> FileNames(const std::string& parameter) const { return {parameter}; }

 private:
  void LoadFieldWeights(PolicyModelImpl& model, const SafetensorsModel& weights) const;
};

}  // namespace troupe
