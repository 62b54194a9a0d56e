// The decoder fields of a Hugging Face config.json (Llama, Qwen2, Qwen3), read
// and written without LibTorch, so a workflow can be checked against a model
// folder before any model is built (../shared/specs/language_models.md).
#pragma once

#include <cstdint>
#include <string>

namespace troupe {

struct HfDecoderConfig {
  std::string model_type;  // "llama", "qwen2" (q/k/v bias) or "qwen3" (q/k norms)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t layers = 0;      // num_hidden_layers
  int64_t heads = 0;       // num_attention_heads
  int64_t kv_heads = 0;    // num_key_value_heads (absent: heads)
  int64_t head_dim = 0;    // absent: 0 (hidden_size / heads)
  int64_t max_len = 0;     // max_position_embeddings
  double rms_eps = 0.0;
  double rope_theta = 0.0;  // absent: 10000, the field's default
  bool tie_embeddings = false;
  int64_t bos_token_id = -1;  // -1: absent
  int64_t eos_token_id = -1;
  bool qkv_bias() const { return model_type == "qwen2"; }
  bool qk_norm() const { return model_type == "qwen3"; }
};

// Throws CheckpointError naming the file and the field that is missing or mistyped.
HfDecoderConfig ReadHfDecoderConfig(const std::string& path);
// Writes config.json atomically; `torch_dtype` is "float32" or "bfloat16".
void WriteHfDecoderConfig(const HfDecoderConfig& config, const std::string& path, const std::string& torch_dtype);

}  // namespace troupe
