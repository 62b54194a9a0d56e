// PolicyModel: what the pool, the trainer, generation and hybrid messages need
// of an agent's language model, whatever its architecture (each
// registered by core/models/architecture.h). The parts every
// architecture shares live here: the KV cache, the output, per-role LoRA
// adapters and the latent projection of hybrid messages. Only translation
// units that need LibTorch include this header.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace troupe {

// Keys and values of earlier positions, one pair per layer.
struct KvCache {
  std::vector<torch::Tensor> keys, values;
  bool empty() const { return keys.empty(); }
  // Sizes the per-layer slots on first use.
  void reserve_layers(size_t layers) {
    if (keys.empty()) {
      keys.assign(layers, torch::Tensor());
      values.assign(layers, torch::Tensor());
    }
  }
};

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

// Which keys each query may attend to, [B,1,T,Tk], for T new queries after
// Tk - T cached keys: query t (absolute index Tk - T + t) sees the valid keys up
// to itself, and always itself. key_valid [B,Tk]; or [B,T,Tk], a mask of its own
// (prefix trees: each node sees its ancestors), returned as it is.
torch::Tensor AttentionMask(const torch::Tensor& key_valid, int64_t T);

// The low-rank term of per-role adapters: B_r A_r x for x [B,T,in], a [roles,in,r],
// b [roles,r,out], role [B].
torch::Tensor LoraDelta(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b,
                        const torch::Tensor& role);

// Per-role LoRA adapters beside a projection: parameters a [roles,in,r] (random)
// and b [roles,r,out] (zero, so a fresh adapter changes nothing).
class RoleLoraImpl : public torch::nn::Module {
 public:
  RoleLoraImpl(int64_t in, int64_t out, int64_t num_roles, int64_t rank);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& role) { return LoraDelta(x, a, b, role); }
  torch::Tensor a, b;
};
TORCH_MODULE(RoleLora);

// Adapters named `name` registered on `owner` when rank > 0; an empty holder otherwise.
RoleLora MaybeRoleLora(torch::nn::Module& owner, const char* name, int64_t in, int64_t out, int64_t num_roles,
                       int64_t rank);
// y, plus the role's adapter term for input x when there is an adapter.
inline torch::Tensor WithRoleLora(const torch::Tensor& y, RoleLora& lora, const torch::Tensor& x,
                                  const torch::Tensor& role) {
  return lora.is_empty() ? y : y + lora(x, role);
}

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

// The sizes every architecture's module has.
struct ModuleShape {
  int64_t width = 0;  // of the hidden states and input embeddings
  int64_t vocab_size = 0;
  int64_t max_len = 0;  // positions
};

// troupe's parts beside an architecture's own (never in the field's files).
struct TroupeParts {
  TORCH_ARG(int64_t, num_roles) = 1;        // > 1: role embeddings (and adapters) for the roles sharing the model
  TORCH_ARG(int64_t, lora_rank) = 0;        // > 0: per-role LoRA adapters on every projection
  TORCH_ARG(bool, latent) = false;          // a latent projection for hybrid messages (latent_proj)
  TORCH_ARG(int64_t, latent_in_width) = 0;  // != width: an adapter for vectors of that width
};

class PolicyModelImpl : public torch::nn::Module {
 public:
  explicit PolicyModelImpl(const ModuleShape& shape) : shape_(shape) {}
  // Input embeddings [B,T,d] of tokens [B,T]; a soft slot (Vocab::kSoft,
  // negative) gets a placeholder row for the caller to replace with its vector.
  torch::Tensor embed(const torch::Tensor& tokens) { return token_embeddings(tokens.clamp_min(0)); }
  // positions [B,T]; key_valid [B,Tk] (Tk = cached + T); role [B] (the role slot
  // of each row on this model). With `all_layers`, every block's output too.
  // The blocks, final norm and value head: hidden, values (and layers), no logits.
  // With bf16 on, the blocks run under autocast in bfloat16; what this returns
  // is float32 (the cache keeps what the blocks made).
  LMOutput forward_hidden(const torch::Tensor& embeds, const torch::Tensor& positions, const torch::Tensor& key_valid,
                          const torch::Tensor& role, KvCache* cache = nullptr, bool all_layers = false);
  // The LM head over final hidden states [B,T,d] of rows whose role slots are
  // `role` [B]: logits [B,T,V]. Callers that read a few positions of a long
  // sequence (a prompt's last, a call's response) apply it to those alone.
  virtual torch::Tensor lm_logits(const torch::Tensor& hidden, const torch::Tensor& role) = 0;
  // forward_hidden with logits at every position.
  LMOutput forward_embeds(const torch::Tensor& embeds, const torch::Tensor& positions, const torch::Tensor& key_valid,
                          const torch::Tensor& role, KvCache* cache = nullptr, bool all_layers = false) {
    LMOutput out = forward_hidden(embeds, positions, key_valid, role, cache, all_layers);
    out.logits = lm_logits(out.hidden, role);
    return out;
  }
  LMOutput forward(const torch::Tensor& tokens, const torch::Tensor& positions, const torch::Tensor& key_valid,
                   const torch::Tensor& role, KvCache* cache = nullptr) {
    return forward_embeds(embed(tokens), positions, key_valid, role, cache);
  }
  int64_t width() const { return shape_.width; }  // d of the hidden states and input embeddings
  // The embeddings of valid token ids.
  virtual torch::Tensor token_embeddings(const torch::Tensor& tokens) = 0;
  int64_t vocab_size() const { return shape_.vocab_size; }
  int64_t max_len() const { return shape_.max_len; }
  // A new model of the same architecture and options (its parameters freshly initialised).
  virtual std::shared_ptr<PolicyModelImpl> fresh_copy() const = 0;
  // Mixed precision: forward passes in bfloat16 (autocast on the model's
  // device); parameters, gradients, optimiser state and logits stay float32.
  void set_bf16(bool on) { bf16_ = on; }
  bool bf16() const { return bf16_; }

  // z = Prj(h) of hybrid messages; needs a latent projection.
  torch::Tensor project_latent(const torch::Tensor& h);
  // Another agent's vectors [..., w] as this model's input embeddings: the
  // adapter when w is the adapter's width, unchanged when w is width().
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
  // The projection's dropout generator (see LatentProjectionImpl); needs a latent projection.
  LatentProjectionImpl& latent_projection();
  bool has_latent_projection() const { return !latent_proj_.is_empty(); }
  // Guided attention (pretraining): from the next forward pass on, keep head
  // `head` of layer `layer`'s attention weights, for a loss on where that head
  // looks; head < 0 stops keeping them. Architectures that cannot throw ModelError.
  virtual void keep_attention(int64_t layer, int64_t head);
  // The kept weights [B,T,Tk] of the last forward pass (undefined before one).
  virtual torch::Tensor kept_attention(int64_t layer) const;
  // What the kept head of `layer` would add to the residual stream by looking
  // at each position alone [B,Tk,H], from the last forward pass. A loss on it
  // trains the head's value and output projections only; `through_stream`,
  // what the layers below put into the stream too.
  virtual torch::Tensor kept_writes(int64_t layer, bool through_stream = false) const;
  // Next-token logits read straight from a part `written` [...,H] of the last
  // layer's output `stream` [...,H] (the final norm scaling it as it scales the
  // whole stream there, then the unembedding): what that part adds to the logits.
  virtual torch::Tensor direct_logits(const torch::Tensor& written, const torch::Tensor& stream);

 protected:
  // The architecture's blocks, final norm and value head (forward_hidden's work).
  virtual LMOutput forward_blocks(const torch::Tensor& embeds, const torch::Tensor& positions,
                                  const torch::Tensor& key_valid, const torch::Tensor& role, KvCache* cache,
                                  bool all_layers) = 0;
  // Registers the latent projection (when parts.latent()) and an adapter for
  // vectors of parts.latent_in_width() (when positive and not the width), as
  // "latent_proj" and "latent_in".
  void register_latent_parts(const TroupeParts& parts);

 private:
  ModuleShape shape_;
  bool bf16_ = false;
  LatentProjection latent_proj_{nullptr};
  torch::nn::Linear latent_in_{nullptr};
};

using PolicyModel = std::shared_ptr<PolicyModelImpl>;

// Copies every parameter and buffer of `from` into `to` (same architecture).
void CopyParameters(PolicyModelImpl& from, PolicyModelImpl& to);

}  // namespace troupe
