// The GPT-2 style decoder's forward pass.
#include "core/models/gpt2/gpt2.h"

#include <cmath>
#include <cstdint>

#include "core/models/attention.h"

namespace troupe {

Conv1DImpl::Conv1DImpl(int64_t in, int64_t out) {
  weight = register_parameter("weight", torch::randn({in, out}) * 0.02);
  bias = register_parameter("bias", torch::zeros({out}));
}

torch::Tensor Conv1DImpl::forward(const torch::Tensor& x) {
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = weight.size(1);
  return torch::addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(shape);
}

Gpt2AttentionImpl::Gpt2AttentionImpl(const Gpt2Options& o)
    : heads_(o.sizes().heads()), head_dim_(o.sizes().hidden_size() / o.sizes().heads()) {
  const int64_t H = o.sizes().hidden_size();
  c_attn = register_module("c_attn", Conv1D(H, 3 * H));
  c_proj = register_module("c_proj", Conv1D(H, H));
  lora_attn = MaybeRoleLora(*this, "lora_attn", H, 3 * H, o.parts().num_roles(), o.parts().lora_rank());
  lora_proj = MaybeRoleLora(*this, "lora_proj", H, H, o.parts().num_roles(), o.parts().lora_rank());
}

torch::Tensor Gpt2AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask,
                                         const torch::Tensor& role, torch::Tensor* cache_k, torch::Tensor* cache_v) {
  const int64_t B = x.size(0), T = x.size(1), H = heads_ * head_dim_;
  const std::vector<torch::Tensor> qkv = WithRoleLora(c_attn(x), lora_attn, x, role).split(H, -1);
  auto heads = [&](const torch::Tensor& t) { return t.view({B, T, heads_, head_dim_}).transpose(1, 2); };
  torch::Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  if (cache_k != nullptr) {
    if (cache_k->defined()) {
      k = torch::cat({*cache_k, k}, 2);
      v = torch::cat({*cache_v, v}, 2);
    }
    *cache_k = k;
    *cache_v = v;
  }
  const torch::Tensor out = Attention(q, k, v, mask).transpose(1, 2).reshape({B, T, H});
  return WithRoleLora(c_proj(out), lora_proj, out, role);
}

Gpt2MlpImpl::Gpt2MlpImpl(const Gpt2Options& o) : approximate_(o.sizes().activation() == "gelu" ? "none" : "tanh") {
  const int64_t H = o.sizes().hidden_size(), I = o.inner_size();
  c_fc = register_module("c_fc", Conv1D(H, I));
  c_proj = register_module("c_proj", Conv1D(I, H));
  lora_fc = MaybeRoleLora(*this, "lora_fc", H, I, o.parts().num_roles(), o.parts().lora_rank());
  lora_proj = MaybeRoleLora(*this, "lora_proj", I, H, o.parts().num_roles(), o.parts().lora_rank());
}

torch::Tensor Gpt2MlpImpl::forward(const torch::Tensor& x, const torch::Tensor& role) {
  const torch::Tensor h = torch::gelu(WithRoleLora(c_fc(x), lora_fc, x, role), approximate_);
  return WithRoleLora(c_proj(h), lora_proj, h, role);
}

Gpt2BlockImpl::Gpt2BlockImpl(const Gpt2Options& o) {
  const int64_t H = o.sizes().hidden_size();
  const double eps = o.sizes().layer_norm_eps();
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({H}).eps(eps)));
  attn = register_module("attn", Gpt2Attention(o));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({H}).eps(eps)));
  mlp = register_module("mlp", Gpt2Mlp(o));
}

torch::Tensor Gpt2BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& role,
                                     torch::Tensor* cache_k, torch::Tensor* cache_v) {
  const torch::Tensor h = x + attn(ln_1(x), mask, role, cache_k, cache_v);
  return h + mlp(ln_2(h), role);
}

Gpt2ModelImpl::Gpt2ModelImpl(const Gpt2Options& o) {
  const int64_t H = o.sizes().hidden_size();
  wte = register_module("wte", torch::nn::Embedding(o.vocab_size(), H));
  wpe = register_module("wpe", torch::nn::Embedding(o.sizes().max_len(), H));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.sizes().layers(); ++i) h->push_back(Gpt2Block(o));
  ln_f =
      register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({H}).eps(o.sizes().layer_norm_eps())));
}

Gpt2LMImpl::Gpt2LMImpl(const Gpt2Options& options)
    : PolicyModelImpl({options.sizes().hidden_size(), options.vocab_size(), options.sizes().max_len()}),
      options_(options) {
  const config::Gpt2Spec& s = options_.sizes();
  TORCH_CHECK(options_.vocab_size() > 0 && s.hidden_size() > 0 && s.layers() > 0 && s.heads() > 0 && s.max_len() > 0,
              "a GPT-2 decoder needs positive sizes");
  TORCH_CHECK(s.hidden_size() % s.heads() == 0, "hidden_size must be divisible by heads");
  const int64_t H = s.hidden_size();
  transformer = register_module("transformer", Gpt2Model(options_));
  if (!s.tie_embeddings()) {
    lm_head =
        register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(H, options_.vocab_size()).bias(false)));
  }
  value_head = register_module("value_head", torch::nn::Linear(H, 1));
  if (options_.parts().num_roles() > 1) role_emb = register_module("role_emb", torch::nn::Embedding(options_.parts().num_roles(), H));
  register_latent_parts(options_.parts());
  // The field's initialisation: N(0, 0.02), the residual projections scaled by 1/sqrt(2 layers).
  torch::NoGradGuard no_grad;
  transformer->wte->weight.normal_(0, 0.02);
  transformer->wpe->weight.normal_(0, 0.02);
  const double residual = 0.02 / std::sqrt(2.0 * s.layers());
  for (const auto& block : *transformer->h) {
    block->as<Gpt2Block>()->attn->c_proj->weight.normal_(0, residual);
    block->as<Gpt2Block>()->mlp->c_proj->weight.normal_(0, residual);
  }
  if (lm_head) lm_head->weight.normal_(0, 0.02);
  if (role_emb) role_emb->weight.zero_();  // a loaded model starts as it was for every role
}

std::shared_ptr<PolicyModelImpl> Gpt2LMImpl::fresh_copy() const { return std::make_shared<Gpt2LMImpl>(options_); }

LMOutput Gpt2LMImpl::forward_blocks(const torch::Tensor& embeds, const torch::Tensor& positions,
                                    const torch::Tensor& key_valid, const torch::Tensor& role, KvCache* cache,
                                    bool all_layers) {
  const int64_t B = embeds.size(0), T = embeds.size(1);
  TORCH_CHECK(positions.max().item<int64_t>() < max_len(), "sequence longer than max_len ", max_len());
  const torch::Tensor roles =
      role.defined() ? role : torch::zeros({B}, torch::TensorOptions().dtype(torch::kLong).device(embeds.device()));
  torch::Tensor x = embeds + transformer->wpe(positions);
  if (role_emb) x = x + role_emb(roles).unsqueeze(1);
  const torch::Tensor mask = AttentionBias(AttentionMask(key_valid, T));  // once for every block
  if (cache != nullptr) cache->reserve_layers(transformer->h->size());
  LMOutput out;
  for (size_t i = 0; i < transformer->h->size(); ++i) {
    x = transformer->h[i]->as<Gpt2Block>()->forward(x, mask, roles, cache ? &cache->keys[i] : nullptr,
                                                    cache ? &cache->values[i] : nullptr);
    if (all_layers) out.layers.push_back(x);
  }
  out.hidden = transformer->ln_f(x);
  out.values = value_head(out.hidden).squeeze(-1);
  return out;
}

torch::Tensor Gpt2LMImpl::lm_logits(const torch::Tensor& hidden, const torch::Tensor& /*role*/) {
  return options_.sizes().tie_embeddings() ? torch::matmul(hidden, transformer->wte->weight.t()) : lm_head(hidden);
}

}  // namespace troupe
