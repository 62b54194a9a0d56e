// A GPT-2 style decoder in the LibTorch frontend's shape, as Hugging Face's
// GPT2LMHeadModel computes it: learned token and position embeddings,
// pre-norm blocks with LayerNorm, one fused q/k/v projection (c_attn),
// causal attention scaled by 1/sqrt(head_dim), a GELU MLP (c_fc, c_proj), a
// final LayerNorm and a head tied to the token embeddings (or its own). The
// projections are the field's Conv1D: weights stored [in, out]. As a
// PolicyModel it adds troupe's parts: a value head, role embeddings (zero at
// first) when roles share it, per-role LoRA adapters on every projection, the
// latent parts of hybrid messages. Parameter names are the field's
// (transformer.h.{i}.attn.c_attn.weight, ...). Only translation units that
// need LibTorch include this header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comms/proto/workflow.pb.h"
#include "core/models/policy_model.h"

namespace troupe {

// The sizes are the workflow's options message itself (config::Gpt2Spec).
struct Gpt2Options {
  Gpt2Options(int64_t vocab_size, config::Gpt2Spec sizes) : vocab_size_(vocab_size), sizes_(std::move(sizes)) {}
  const config::Gpt2Spec& sizes() const { return sizes_; }
  int64_t inner_size() const {
    return sizes_.intermediate_size() > 0 ? sizes_.intermediate_size() : 4 * static_cast<int64_t>(sizes_.hidden_size());
  }
  TORCH_ARG(int64_t, vocab_size);
  TORCH_ARG(TroupeParts, parts);

 private:
  config::Gpt2Spec sizes_;
};

// The field's Conv1D: y = x W + b with W [in, out].
class Conv1DImpl : public torch::nn::Module {
 public:
  Conv1DImpl(int64_t in, int64_t out);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight, bias;
};
TORCH_MODULE(Conv1D);

class Gpt2AttentionImpl : public torch::nn::Module {
 public:
  explicit Gpt2AttentionImpl(const Gpt2Options& o);
  // x [B,T,H]; mask [B,1,T,Tk] (an AttentionBias); role [B]; cached keys/values [B, heads, T, head_dim].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& role,
                        torch::Tensor* cache_k, torch::Tensor* cache_v);
  Conv1D c_attn{nullptr}, c_proj{nullptr};
  RoleLora lora_attn{nullptr}, lora_proj{nullptr};

 private:
  int64_t heads_, head_dim_;
};
TORCH_MODULE(Gpt2Attention);

class Gpt2MlpImpl : public torch::nn::Module {
 public:
  explicit Gpt2MlpImpl(const Gpt2Options& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& role);  // c_proj(gelu(c_fc(x)))
  Conv1D c_fc{nullptr}, c_proj{nullptr};
  RoleLora lora_fc{nullptr}, lora_proj{nullptr};

 private:
  std::string approximate_;  // "tanh" (gelu_new) or "none" (gelu)
};
TORCH_MODULE(Gpt2Mlp);

class Gpt2BlockImpl : public torch::nn::Module {
 public:
  explicit Gpt2BlockImpl(const Gpt2Options& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& role,
                        torch::Tensor* cache_k, torch::Tensor* cache_v);
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  Gpt2Attention attn{nullptr};
  Gpt2Mlp mlp{nullptr};
};
TORCH_MODULE(Gpt2Block);

// The decoder body: transformer.wte, transformer.wpe, transformer.h, transformer.ln_f.
class Gpt2ModelImpl : public torch::nn::Module {
 public:
  explicit Gpt2ModelImpl(const Gpt2Options& o);
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Gpt2Model);

class Gpt2LMImpl : public PolicyModelImpl {
 public:
  explicit Gpt2LMImpl(const Gpt2Options& options);
  torch::Tensor token_embeddings(const torch::Tensor& tokens) override { return transformer->wte(tokens); }
  torch::Tensor lm_logits(const torch::Tensor& hidden, const torch::Tensor& role) override;
  std::shared_ptr<PolicyModelImpl> fresh_copy() const override;
  const Gpt2Options& options() const { return options_; }
  Gpt2Model transformer{nullptr};
  torch::nn::Linear lm_head{nullptr};      // absent with tie_embeddings
  torch::nn::Linear value_head{nullptr};   // troupe's, not in the field's files
  torch::nn::Embedding role_emb{nullptr};  // troupe's, with several roles

 protected:
  LMOutput forward_blocks(const torch::Tensor& embeds, const torch::Tensor& positions, const torch::Tensor& key_valid,
                          const torch::Tensor& role, KvCache* cache, bool all_layers) override;

 private:
  Gpt2Options options_;
};
TORCH_MODULE(Gpt2LM);

}  // namespace troupe
