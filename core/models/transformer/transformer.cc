// The decoder-only transformer: embeddings, causal self-attention blocks with a
// KV cache, LM head and value head, with optional per-role adapters and heads.
#include "core/models/transformer/transformer.h"

#include "core/models/attention.h"

#include <cmath>
#include <cstdint>

namespace troupe {

AdaptedLinearImpl::AdaptedLinearImpl(int64_t in, int64_t out, int64_t num_roles, int64_t rank) {
  base = register_module("base", torch::nn::Linear(in, out));
  if (rank > 0) {
    lora_a = register_parameter("lora_a", torch::randn({num_roles, in, rank}) / std::sqrt(static_cast<double>(in)));
    lora_b = register_parameter("lora_b", torch::zeros({num_roles, rank, out}));
  }
}

torch::Tensor AdaptedLinearImpl::forward(const torch::Tensor& x, const torch::Tensor& role) {
  torch::Tensor y = base(x);
  return lora_a.defined() ? y + LoraDelta(x, lora_a, lora_b, role) : y;
}

BlockImpl::BlockImpl(const TransformerLMOptions& o) : heads_(o.sizes().heads()) {
  const int64_t d = o.sizes().d_model(), r = o.parts().lora_rank(), n = o.parts().num_roles();
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  qkv = register_module("qkv", AdaptedLinear(d, 3 * d, n, r));
  proj = register_module("proj", AdaptedLinear(d, d, n, r));
  fc1 = register_module("fc1", AdaptedLinear(d, o.sizes().ff_mult() * d, n, r));
  fc2 = register_module("fc2", AdaptedLinear(o.sizes().ff_mult() * d, d, n, r));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& role,
                                 torch::Tensor* cache_k, torch::Tensor* cache_v) {
  const int64_t B = x.size(0), T = x.size(1), d = x.size(2), dh = d / heads_;
  auto parts = qkv(ln1(x), role).chunk(3, -1);
  auto split = [&](const torch::Tensor& t) { return t.view({B, T, heads_, dh}).transpose(1, 2); };
  torch::Tensor q = split(parts[0]), k = split(parts[1]), v = split(parts[2]);
  if (cache_k != nullptr) {
    if (cache_k->defined()) {
      k = torch::cat({*cache_k, k}, 2);
      v = torch::cat({*cache_v, v}, 2);
    }
    *cache_k = k;
    *cache_v = v;
  }
  torch::Tensor h = Attention(q, k, v, mask).transpose(1, 2).reshape({B, T, d});
  torch::Tensor y = x + proj(h, role);
  return y + fc2(torch::gelu(fc1(ln2(y), role)), role);
}

TransformerLMImpl::TransformerLMImpl(const TransformerLMOptions& o)
    : PolicyModelImpl({o.sizes().d_model(), o.vocab_size(), o.sizes().max_len()}), options_(o) {
  const int64_t d = o.sizes().d_model();
  TORCH_CHECK(d > 0 && o.sizes().layers() > 0 && o.sizes().heads() > 0 && o.sizes().max_len() > 0 && o.sizes().ff_mult() > 0,
              "a transformer needs positive d_model, layers, heads, max_len and ff_mult");
  TORCH_CHECK(d % o.sizes().heads() == 0, "d_model must be divisible by heads");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(o.vocab_size(), d));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(o.sizes().max_len(), d));
  role_emb = register_module("role_emb", torch::nn::Embedding(o.parts().num_roles(), d));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.sizes().layers(); ++i) blocks->push_back(Block(o));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  if (o.role_heads()) {
    role_lm_w = register_parameter("role_lm_w", torch::randn({o.parts().num_roles(), d, o.vocab_size()}) * 0.02);
    role_value_w = register_parameter("role_value_w", torch::zeros({o.parts().num_roles(), d, 1}));
  } else {
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(d, o.vocab_size()).bias(false)));
    value_head = register_module("value_head", torch::nn::Linear(d, 1));
  }
  register_latent_parts(o.parts());
  // Small initial embeddings keep the untrained policy close to uniform.
  torch::NoGradGuard no_grad;
  tok_emb->weight.normal_(0, 0.02);
  pos_emb->weight.normal_(0, 0.02);
  role_emb->weight.normal_(0, 0.02);
  if (lm_head) lm_head->weight.normal_(0, 0.02);
}

std::shared_ptr<PolicyModelImpl> TransformerLMImpl::fresh_copy() const {
  return std::make_shared<TransformerLMImpl>(options_);
}

LMOutput TransformerLMImpl::forward_blocks(const torch::Tensor& embeds, const torch::Tensor& positions,
                                           const torch::Tensor& key_valid, const torch::Tensor& role, KvCache* cache,
                                           bool all_layers) {
  const int64_t T = embeds.size(1);
  TORCH_CHECK(positions.max().item<int64_t>() < options_.sizes().max_len(), "sequence longer than max_len ",
              options_.sizes().max_len());
  LMOutput out;
  torch::Tensor x = embeds + pos_emb(positions) + role_emb(role).unsqueeze(1);
  const torch::Tensor mask = AttentionBias(AttentionMask(key_valid, T));  // once for every block
  if (cache != nullptr) cache->reserve_layers(blocks->size());
  for (size_t i = 0; i < blocks->size(); ++i) {
    x = blocks[i]->as<Block>()->forward(x, mask, role, cache ? &cache->keys[i] : nullptr,
                                        cache ? &cache->values[i] : nullptr);
    if (all_layers) out.layers.push_back(x);
  }
  x = ln_f(x);
  out.hidden = x;
  out.values = options_.role_heads() ? x.bmm(role_value_w.index_select(0, role)).squeeze(-1) : value_head(x).squeeze(-1);
  return out;
}

torch::Tensor TransformerLMImpl::lm_logits(const torch::Tensor& hidden, const torch::Tensor& role) {
  return options_.role_heads() ? hidden.bmm(role_lm_w.index_select(0, role)) : lm_head(hidden);
}

}  // namespace troupe
