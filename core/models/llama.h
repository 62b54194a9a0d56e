// A Llama-family decoder in the LibTorch frontend's shape, as Hugging Face
// transformers computes it (../shared/specs/language_models.md): RMSNorm,
// rotary position embeddings (rotate_half), grouped-query attention, SwiGLU
// MLP, optional q/k/v bias (Qwen2) and per-head q/k norms (Qwen3), tied or
// separate LM head. As a PolicyModel it adds troupe's parts: a value head for
// PPO, role embeddings (zero at first) when roles share it, per-role LoRA
// adapters on every projection, the latent parts of hybrid messages.
// Parameter names are the field's (model.layers.{i}.self_attn.q_proj.weight,
// ...), so a safetensors file loads by name; troupe's parts have names of their
// own (IsFieldParameter). Only translation units that need LibTorch include this.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/models/policy_model.h"

namespace troupe {

class SafetensorsFile;
class SafetensorsModel;
struct HfDecoderConfig;

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
  // troupe's parts, not in the field's files:
  TORCH_ARG(int64_t, num_roles) = 1;        // > 1: role embeddings, zero at first
  TORCH_ARG(int64_t, lora_rank) = 0;        // > 0: per-role LoRA adapters on every projection
  TORCH_ARG(bool, latent) = false;          // a latent projection for hybrid messages
  TORCH_ARG(int64_t, latent_in_width) = 0;  // != hidden_size: an adapter for vectors of that width
};

// Whether a parameter is one of the field's (written to model.safetensors)
// rather than one of troupe's own parts.
bool IsFieldParameter(const std::string& name);

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

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  explicit LlamaAttentionImpl(const LlamaOptions& o);
  // x [B,T,H]; cos/sin [B,1,T,D]; allowed [B,1,T,Tk]; role [B] (for the adapters).
  // Cached keys and values are per layer [B, kv_heads, T, head_dim].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& allowed, const torch::Tensor& role, torch::Tensor* cache_k,
                        torch::Tensor* cache_v);
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};
  RoleLora lora_q{nullptr}, lora_k{nullptr}, lora_v{nullptr}, lora_o{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(LlamaAttention);

class LlamaMlpImpl : public torch::nn::Module {
 public:
  explicit LlamaMlpImpl(const LlamaOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& role);  // down(silu(gate(x)) * up(x))
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
  RoleLora lora_gate{nullptr}, lora_up{nullptr}, lora_down{nullptr};
};
TORCH_MODULE(LlamaMlp);

class LlamaLayerImpl : public torch::nn::Module {
 public:
  explicit LlamaLayerImpl(const LlamaOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& allowed, const torch::Tensor& role, torch::Tensor* cache_k,
                        torch::Tensor* cache_v);
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

class LlamaLMImpl : public PolicyModelImpl {
 public:
  explicit LlamaLMImpl(const LlamaOptions& options);
  torch::Tensor token_embeddings(const torch::Tensor& tokens) override { return model->embed_tokens(tokens); }
  // role [B] may be undefined when the model has one role.

  torch::Tensor lm_logits(const torch::Tensor& hidden, const torch::Tensor& role) override;
  int64_t width() const override { return options_.hidden_size(); }
  int64_t vocab_size() const override { return options_.vocab_size(); }
  int64_t max_len() const override { return options_.max_len(); }
  std::shared_ptr<PolicyModelImpl> fresh_copy() const override;
  const LlamaOptions& options() const { return options_; }
  LlamaModel model{nullptr};
  torch::nn::Linear lm_head{nullptr};     // absent with tie_embeddings
  torch::nn::Linear value_head{nullptr};  // troupe's, not in the field's files
  torch::nn::Embedding role_emb{nullptr};  // troupe's, with several roles

 protected:
  LMOutput forward_blocks(const torch::Tensor& embeds, const torch::Tensor& positions, const torch::Tensor& key_valid,
                          const torch::Tensor& role, KvCache* cache, bool all_layers) override;

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
// The same sizes both ways (troupe's parts are left at their defaults).
LlamaOptions LlamaOptionsOf(const HfDecoderConfig& config);
HfDecoderConfig HfConfigOf(const LlamaOptions& options);

// Copies every parameter of the field's checkpoint (by name) into `model`:
// troupe's parts stay as they are; a missing tensor or one whose shape differs
// is a CheckpointError naming the file and the tensor.
void LoadLlamaWeights(LlamaLM& model, const SafetensorsFile& file);
// The same from a folder's weights, one file or shards.
void LoadLlamaWeights(LlamaLM& model, const SafetensorsModel& weights);

// Writes `model` as a Hugging Face folder: config.json (the field's fields for
// its variant) and model.safetensors (F32, or BF16 when `bf16`), or shards of
// at most `max_shard_bytes` and their index, atomically file by file. troupe's
// parts are not written there (see WriteTroupeParts).
void WriteLlamaFolder(LlamaLM& model, const std::string& dir, bool bf16 = false, size_t max_shard_bytes = 0);

// A model from a Hugging Face folder (config.json, model.safetensors or its shards), with
// troupe's parts as `extra` asks (fresh ones: role embeddings at zero, adapters
// that change nothing).
LlamaLM LoadLlamaFolder(const std::string& dir, const LlamaOptions* extra = nullptr);

// troupe's own parameters of `model` (value head, role embeddings, adapters,
// latent parts) as one safetensors file beside the field's; and back.
void WriteTroupeParts(LlamaLM& model, const std::string& path);
void LoadTroupeParts(LlamaLM& model, const std::string& path);

}  // namespace troupe
