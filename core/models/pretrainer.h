// Next-token training of one language model (any architecture with a Hugging
// Face folder: llama, gpt2) on token sequences, behind a
// torch-free header: AdamW with gradient clipping, a learning rate per step,
// held-out loss, and checkpoints whose model part is a Hugging Face folder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/models/model_pool.h"

namespace troupe {

struct PretrainStep {
  double loss = 0.0;       // mean cross-entropy per target token (nats)
  double grad_norm = 0.0;  // before clipping
};

class Pretrainer {
 public:
  // A fresh model of `config` (an architecture with a Hugging Face folder; vocab_size set), seeded.
  Pretrainer(const ModelConfig& config, uint64_t seed, int threads);
  ~Pretrainer();

  // One update on `batch` sequences of `length` + 1 tokens each (row-major):
  // inputs are the first `length`, targets the last `length`.
  PretrainStep Step(const std::vector<int>& tokens, int batch, int length, double lr);
  // Mean cross-entropy of the targets of such sequences, without updating.
  double Loss(const std::vector<int>& tokens, int batch, int length);

  int64_t parameter_count() const;  // the field's parameters (no value head)
  // The model as a Hugging Face folder (config.json, model.safetensors).
  void WriteModel(const std::string& dir) const;
  // A checkpoint folder: the model folder and the optimiser's state.
  void Save(const std::string& dir) const;
  void Load(const std::string& dir);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe
