// A Llama-family decoder in the LibTorch frontend's shape, as Hugging Face
// transformers computes it (../shared/specs/language_models.md): RMSNorm,
// rotary position embeddings (rotate_half), grouped-query attention, SwiGLU
// MLP, optional q/k/v bias (Qwen2) and per-head q/k norms (Qwen3), tied or
// separate LM head. As a PolicyModel it adds troupe's parts: a value head for
// PPO, role embeddings (zero at first) when roles share it, per-role LoRA
// adapters on every projection, the latent parts of hybrid messages.
// Parameter names are the field's (model.layers.{i}.self_attn.q_proj.weight,
// ...), so a safetensors file loads by name (llama_architecture.cc); troupe's
// parts have names of their own. Only translation units that need LibTorch
// include this.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comms/proto/workflow.pb.h"
#include "core/models/policy_model.h"

namespace troupe {

// The sizes are the workflow's options message itself (config::LlamaSpec).
struct LlamaOptions {
  LlamaOptions(int64_t vocab_size, config::LlamaSpec sizes) : vocab_size_(vocab_size), sizes_(std::move(sizes)) {}
  const config::LlamaSpec& sizes() const { return sizes_; }
  int64_t resolved_head_dim() const {
    return sizes_.head_dim() > 0 ? sizes_.head_dim() : sizes_.hidden_size() / sizes_.heads();
  }
  TORCH_ARG(int64_t, vocab_size);
  TORCH_ARG(TroupeParts, parts);

 private:
  config::LlamaSpec sizes_;
};

// x * rsqrt(mean(x^2) + eps) * weight, computed in float32.
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t size, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  // `part` of a stream scaled as forward scales the whole `stream` (same shape;
  // its scale taken without gradient): what that part adds to forward(stream).
  torch::Tensor scale_as(const torch::Tensor& part, const torch::Tensor& stream);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  explicit LlamaAttentionImpl(const LlamaOptions& o);
  // x [B,T,H]; cos/sin [B,1,T,D]; mask [B,1,T,Tk]: boolean where the fused
  // kernels run (LibTorch 2.5+), an AttentionBias otherwise; role [B] (for the
  // adapters). Cached keys and values are per layer [B, kv_heads, T, head_dim].
  // `causal`: the mask is the plain causal one (no padding, no cache), which the
  // fused kernels take without reading it.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, const torch::Tensor& role, torch::Tensor* cache_k,
                        torch::Tensor* cache_v, bool causal = false);
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};
  RoleLora lora_q{nullptr}, lora_k{nullptr}, lora_v{nullptr}, lora_o{nullptr};
  // Guided attention: keep head `head`'s weights [B,T,Tk] from each forward pass (head < 0: none).
  void keep_head(int64_t head) { kept_head_ = head, kept_ = kept_input_ = torch::Tensor(); }
  const torch::Tensor& kept() const { return kept_; }
  // What the kept head writes to the residual stream [B,Tk,H] when it looks at one position alone: each
  // position's value through the head's columns of o_proj (no adapters: pretraining has none), from the
  // layer's input held fixed, or, `through_stream`, not.
  torch::Tensor kept_writes(bool through_stream) const;
  int64_t heads() const { return heads_; }

 private:
  int64_t heads_, kv_heads_, head_dim_;
  int64_t kept_head_ = -1;
  torch::Tensor kept_, kept_input_;  // the kept head's weights, and the layer's normed input [B,Tk,H]
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
                        const torch::Tensor& mask, const torch::Tensor& role, torch::Tensor* cache_k,
                        torch::Tensor* cache_v, bool causal = false);
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
  std::shared_ptr<PolicyModelImpl> fresh_copy() const override;
  void keep_attention(int64_t layer, int64_t head) override;
  torch::Tensor kept_attention(int64_t layer) const override;
  torch::Tensor kept_writes(int64_t layer, bool through_stream) const override;
  torch::Tensor direct_logits(const torch::Tensor& written, const torch::Tensor& stream) override;
  const LlamaOptions& options() const { return options_; }
  LlamaModel model{nullptr};
  torch::nn::Linear lm_head{nullptr};     // absent with tie_embeddings
  torch::nn::Linear value_head{nullptr};  // troupe's, not in the field's files
  torch::nn::Embedding role_emb{nullptr};  // troupe's, with several roles

 protected:
  LMOutput forward_blocks(const torch::Tensor& embeds, const torch::Tensor& positions, const torch::Tensor& key_valid,
                          const torch::Tensor& role, KvCache* cache, bool all_layers) override;

 private:
  LlamaAttentionImpl& attention_of(int64_t layer) const;
  LlamaOptions options_;
  torch::Tensor inv_freq_;  // RoPE frequencies, computed once per device
};
TORCH_MODULE(LlamaLM);

}  // namespace troupe
