// A Llama-family decoder in the LibTorch frontend's shape, as Hugging Face
// transformers computes it (../shared/specs/language_models.md): RMSNorm,
// rotary position embeddings (rotate_half), grouped-query attention, SwiGLU
// MLP, optional q/k/v bias (Qwen2) and per-head q/k norms (Qwen3), tied or
// separate LM head; plus a value head for PPO. Parameter names are the
// field's (model.layers.{i}.self_attn.q_proj.weight, ...), so a safetensors
// file loads by name. Only translation units that need LibTorch include this.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace troupe {

class SafetensorsFile;

// Sizes come from a config (config.json or a workflow): no defaults here.
struct LlamaOptions {
  explicit LlamaOptions(int64_t vocab_size) : vocab_size_(vocab_size) {}
  int64_t resolved_head_dim() const { return head_dim_ > 0 ? head_dim_ : hidden_size_ / heads_; }
  TORCH_ARG(int64_t, vocab_size);
  TORCH_ARG(int64_t, hidden_size) = 0;
  TORCH_ARG(int64_t, intermediate_size) = 0;
  TORCH_ARG(int64_t, layers) = 0;
  TORCH_ARG(int64_t, heads) = 0;
  TORCH_ARG(int64_t, kv_heads) = 0;  // grouped-query attention: divides heads
  TORCH_ARG(int64_t, head_dim) = 0;  // 0: hidden_size / heads
  TORCH_ARG(int64_t, max_len) = 0;
  TORCH_ARG(double, rms_eps) = 0.0;
  TORCH_ARG(double, rope_theta) = 0.0;
  TORCH_ARG(bool, qkv_bias) = false;  // Qwen2
  TORCH_ARG(bool, qk_norm) = false;   // Qwen3
  TORCH_ARG(bool, tie_embeddings) = false;
};

// x * rsqrt(mean(x^2) + eps) * weight, computed in float32.
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t size, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

// Keys and values of every layer so far, for KV-cached decoding.
struct LlamaCache {
  std::vector<torch::Tensor> keys, values;  // per layer [B, kv_heads, T, head_dim]
};

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  explicit LlamaAttentionImpl(const LlamaOptions& o);
  // x [B,T,H]; cos/sin [B,1,T,D]; allowed [B,1,T,Tk].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& allowed, torch::Tensor* cache_k, torch::Tensor* cache_v);
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(LlamaAttention);

class LlamaMlpImpl : public torch::nn::Module {
 public:
  explicit LlamaMlpImpl(const LlamaOptions& o);
  torch::Tensor forward(const torch::Tensor& x);  // down(silu(gate(x)) * up(x))
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(LlamaMlp);

class LlamaLayerImpl : public torch::nn::Module {
 public:
  explicit LlamaLayerImpl(const LlamaOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& allowed, torch::Tensor* cache_k, torch::Tensor* cache_v);
  LlamaAttention self_attn{nullptr};
  LlamaMlp mlp{nullptr};
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(LlamaLayer);

// The decoder body: model.embed_tokens, model.layers, model.norm.
class LlamaModelImpl : public torch::nn::Module {
 public:
  explicit LlamaModelImpl(const LlamaOptions& o);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};
};
TORCH_MODULE(LlamaModel);

struct LlamaOutput {
  torch::Tensor logits;  // [B,T,V]
  torch::Tensor values;  // [B,T]
  torch::Tensor hidden;  // [B,T,H] after the final norm
};

class LlamaLMImpl : public torch::nn::Module {
 public:
  explicit LlamaLMImpl(const LlamaOptions& options);
  // tokens/positions [B,T]; key_valid [B,Tk] (Tk = cached + T).
  LlamaOutput forward(const torch::Tensor& tokens, const torch::Tensor& positions, const torch::Tensor& key_valid,
                      LlamaCache* cache = nullptr);
  const LlamaOptions& options() const { return options_; }
  LlamaModel model{nullptr};
  torch::nn::Linear lm_head{nullptr};     // absent with tie_embeddings
  torch::nn::Linear value_head{nullptr};  // troupe's, not in the field's files

 private:
  LlamaOptions options_;
  torch::Tensor inv_freq_;  // RoPE frequencies, computed once per device
};
TORCH_MODULE(LlamaLM);

// The decoder a Hugging Face config.json describes (hidden_size,
// intermediate_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, head_dim, rms_norm_eps, rope_theta, vocab_size,
// max_position_embeddings, tie_word_embeddings; q/k/v bias for Qwen2, q/k norms
// for Qwen3). A missing or mistyped field is a CheckpointError naming the file.
LlamaOptions ReadLlamaConfig(const std::string& config_json);

// Copies every parameter of the field's checkpoint (by name) into `model`:
// the value head stays as it is; a missing tensor or one whose shape differs
// is a CheckpointError naming the file and the tensor.
void LoadLlamaWeights(LlamaLM& model, const SafetensorsFile& file);

// Writes `model` as a Hugging Face folder: config.json (the field's fields for
// its variant) and model.safetensors (F32, or BF16 when `bf16`), atomically
// file by file. The value head is troupe's and is not written.
void WriteLlamaFolder(LlamaLM& model, const std::string& dir, bool bf16 = false);

// A model from a Hugging Face folder (config.json, model.safetensors).
LlamaLM LoadLlamaFolder(const std::string& dir);

}  // namespace troupe
