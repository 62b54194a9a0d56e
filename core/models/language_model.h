// A language model from a Hugging Face folder (any architecture that reads one), behind a torch-free
// header: the log-probabilities of a text's tokens and continuations of a
// prompt (KV-cached). For `troupe lm` and the pretraining's evaluations.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

class LanguageModel {
 public:
  // config.json and model.safetensors of `dir`, on `device` ("cpu" or
  // "cuda:N"); CheckpointError when they do not fit, ModelError when the device
  // cannot be used.
  static std::unique_ptr<LanguageModel> Load(const std::string& dir, const std::string& device = "cpu");
  virtual ~LanguageModel() = default;

  // log p(ids[i] | ids[0..i-1]) for i = 1..n-1, in windows of at most max_len
  // tokens (each window after the first sees the previous half window).
  virtual std::vector<float> Score(const std::vector<int>& ids) const = 0;
  // The most likely next token after ids[0..i] for i = 0..n-2 (teacher-forced,
  // the same windows as Score): what the model would predict for ids[i + 1].
  virtual std::vector<int> Predict(const std::vector<int>& ids) const = 0;
  // Up to `max_new` tokens after `prompt`, stopping after any of `stop_ids`.
  virtual std::vector<int> Generate(const std::vector<int>& prompt, int max_new, bool greedy, double temperature,
                                    uint64_t seed, const std::vector<int>& stop_ids) const = 0;
  virtual int vocab_size() const = 0;
  virtual int max_len() const = 0;
  virtual int64_t parameter_count() const = 0;
};

}  // namespace troupe
