// A small decoder-only transformer language model with a value head, in the
// LibTorch frontend's own shape. Roles sharing the model are told apart by a
// role embedding; partial sharing adds per-role LoRA adapters or per-role heads.
// Only translation units that need LibTorch include this header.
#pragma once

#include <cstdint>
#include <memory>

#include "comms/proto/workflow.pb.h"
#include "core/models/policy_model.h"

namespace troupe {

// The sizes are the workflow's options message itself (config::TransformerSpec).
struct TransformerLMOptions {
  TransformerLMOptions(int64_t vocab_size, config::TransformerSpec sizes)
      : vocab_size_(vocab_size), sizes_(std::move(sizes)) {}
  const config::TransformerSpec& sizes() const { return sizes_; }
  TORCH_ARG(int64_t, vocab_size);
  TORCH_ARG(TroupeParts, parts);
  TORCH_ARG(bool, role_heads) = false;  // per-role LM and value heads

 private:
  config::TransformerSpec sizes_;
};

// A linear layer with optional per-role low-rank adapters: y = W x + B_r A_r x.
class AdaptedLinearImpl : public torch::nn::Module {
 public:
  AdaptedLinearImpl(int64_t in, int64_t out, int64_t num_roles, int64_t rank);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& role);
  torch::nn::Linear base{nullptr};
  torch::Tensor lora_a, lora_b;  // [roles, in, rank], [roles, rank, out]; undefined without adapters
};
TORCH_MODULE(AdaptedLinear);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const TransformerLMOptions& o);
  // x [B,T,d]; mask [B,1,T,Tk], an AttentionBias (or a boolean mask); cache (per-layer) may be null.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& role,
                        torch::Tensor* cache_k, torch::Tensor* cache_v);

 private:
  int64_t heads_;
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  AdaptedLinear qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Block);

class TransformerLMImpl : public PolicyModelImpl {
 public:
  explicit TransformerLMImpl(const TransformerLMOptions& options);
  torch::Tensor token_embeddings(const torch::Tensor& tokens) override { return tok_emb(tokens); }

  torch::Tensor lm_logits(const torch::Tensor& hidden, const torch::Tensor& role) override;
  std::shared_ptr<PolicyModelImpl> fresh_copy() const override;
  const TransformerLMOptions& options() const { return options_; }

 protected:
  LMOutput forward_blocks(const torch::Tensor& embeds, const torch::Tensor& positions, const torch::Tensor& key_valid,
                          const torch::Tensor& role, KvCache* cache, bool all_layers) override;

 private:
  TransformerLMOptions options_;
  torch::nn::Embedding tok_emb{nullptr}, pos_emb{nullptr}, role_emb{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear lm_head{nullptr}, value_head{nullptr};
  torch::Tensor role_lm_w, role_value_w;  // [roles, d, V], [roles, d, 1] with role_heads
};
TORCH_MODULE(TransformerLM);

}  // namespace troupe
