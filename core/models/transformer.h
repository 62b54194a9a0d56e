// A small decoder-only transformer language model with a value head, in the
// LibTorch frontend's own shape. Roles sharing the model are told apart by a
// role embedding; partial sharing adds per-role LoRA adapters or per-role heads.
// Only translation units that need LibTorch include this header.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <utility>
#include <vector>

namespace troupe {

// No defaults here: a workflow's are in one table (workflows/config/defaults.cc);
// zero sizes are refused when the model is built.
struct TransformerLMOptions {
  explicit TransformerLMOptions(int64_t vocab_size) : vocab_size_(vocab_size) {}
  TORCH_ARG(int64_t, vocab_size);
  TORCH_ARG(int64_t, d_model) = 0;
  TORCH_ARG(int64_t, layers) = 0;
  TORCH_ARG(int64_t, heads) = 0;
  TORCH_ARG(int64_t, max_len) = 0;
  TORCH_ARG(int64_t, ff_mult) = 0;
  TORCH_ARG(int64_t, num_roles) = 1;        // role embeddings (and adapters/heads) on this model
  TORCH_ARG(int64_t, lora_rank) = 0;        // > 0: per-role LoRA adapters on every projection
  TORCH_ARG(bool, role_heads) = false;      // per-role LM and value heads
  TORCH_ARG(bool, latent) = false;          // a latent projection for hybrid messages (latent_proj)
  TORCH_ARG(int64_t, latent_in_width) = 0;  // != d_model: a learned adapter for vectors of that width
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

// Keys and values of earlier positions, one pair per layer.
struct KvCache {
  std::vector<torch::Tensor> keys, values;
  bool empty() const { return keys.empty(); }
};

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const TransformerLMOptions& o);
  // x [B,T,d]; allowed [B,1,T,Tk] attention mask; cache (per-layer) may be null.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& allowed, const torch::Tensor& role,
                        torch::Tensor* cache_k, torch::Tensor* cache_v);

 private:
  int64_t heads_;
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  AdaptedLinear qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Block);

struct LMOutput {
  torch::Tensor logits;               // [B,T,V]
  torch::Tensor values;               // [B,T]
  torch::Tensor hidden;               // [B,T,d]: the last layer's output after the final norm
  std::vector<torch::Tensor> layers;  // [B,T,d] per block, when asked for
};

// What a sender's K latent steps produced: the vectors z_1..z_K [B,d] and the
// model's output at each step (where z_k was read).
struct LatentStepsOutput {
  std::vector<torch::Tensor> z;
  std::vector<LMOutput> steps;
};

// Prj of hybrid messages: Dropout -> Linear(d, h') -> GELU -> Linear(h', d) -> LayerNorm(d).
// The dropout masks come from the projection's own generator (not LibTorch's
// global one): a model draws the same masks whichever thread or process serves
// it, and a checkpoint saves where its generator stands.
class LatentProjectionImpl : public torch::nn::Module {
 public:
  LatentProjectionImpl(int64_t d, int64_t hidden);
  torch::Tensor forward(const torch::Tensor& h);
  void seed_dropout(uint64_t seed);
  torch::Tensor dropout_state() const;
  void set_dropout_state(const torch::Tensor& state);

 private:
  double drop_p_ = 0.1;
  mutable at::Generator generator_;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(LatentProjection);

class TransformerLMImpl : public torch::nn::Module {
 public:
  explicit TransformerLMImpl(const TransformerLMOptions& options);
  // tokens/positions [B,T]; key_valid [B,Tk] (Tk = cached + T); role [B].
  LMOutput forward(const torch::Tensor& tokens, const torch::Tensor& positions, const torch::Tensor& key_valid,
                   const torch::Tensor& role, KvCache* cache = nullptr);
  // The same from input embeddings [B,T,d] (token embeddings and spliced latent vectors).
  LMOutput forward_embeds(const torch::Tensor& embeds, const torch::Tensor& positions, const torch::Tensor& key_valid,
                          const torch::Tensor& role, KvCache* cache = nullptr, bool all_layers = false);
  torch::Tensor embed(const torch::Tensor& tokens) { return tok_emb(tokens); }
  // z = Prj(h) of hybrid messages; needs options.latent(true).
  torch::Tensor project_latent(const torch::Tensor& h);
  // Another agent's vectors [..., w] as this model's input embeddings: the
  // adapter when w is latent_in_width, unchanged when w is d_model.
  torch::Tensor adapt_latent(const torch::Tensor& z);
  // The K latent steps of a hybrid message after a prefix whose keys are in
  // `cache`: z = Prj(h) goes back in as the next input embedding, K times, h
  // starting at the prefix's last hidden state [B,d]. `at(j)` gives step j's
  // positions [B,1] and key mask [B,Tk]. Generation, the trainer's recompute
  // and the distillation all send vectors this way (generation step by step).
  LatentStepsOutput send_latents(torch::Tensor h, int64_t K,
                                 const std::function<std::pair<torch::Tensor, torch::Tensor>(int64_t)>& at,
                                 const torch::Tensor& role, KvCache* cache);
  // Reinforcement learning needs the vectors a call sent to be recomputed exactly
  // when training: its projection's dropout is switched off there (on by default).
  void set_latent_dropout(bool on);
  // The projection's dropout generator (see LatentProjectionImpl); needs options.latent(true).
  LatentProjectionImpl& latent_projection();
  const TransformerLMOptions& options() const { return options_; }

 private:
  TransformerLMOptions options_;
  torch::nn::Embedding tok_emb{nullptr}, pos_emb{nullptr}, role_emb{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear lm_head{nullptr}, value_head{nullptr};
  LatentProjection latent_proj{nullptr};
  torch::nn::Linear latent_in{nullptr};
  torch::Tensor role_lm_w, role_value_w;  // [roles, d, V], [roles, d, 1] with role_heads
};
TORCH_MODULE(TransformerLM);

}  // namespace troupe
