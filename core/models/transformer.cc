// The decoder-only transformer: embeddings, causal self-attention blocks with a
// KV cache, LM head and value head, with optional per-role adapters and heads.
#include "core/models/transformer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <mutex>

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
  if (lora_a.defined()) {
    torch::Tensor a = lora_a.index_select(0, role);  // [B,in,r]
    torch::Tensor b = lora_b.index_select(0, role);  // [B,r,out]
    y = y + x.bmm(a).bmm(b);
  }
  return y;
}

BlockImpl::BlockImpl(const TransformerLMOptions& o) : heads_(o.heads()) {
  const int64_t d = o.d_model(), r = o.lora_rank(), n = o.num_roles();
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  qkv = register_module("qkv", AdaptedLinear(d, 3 * d, n, r));
  proj = register_module("proj", AdaptedLinear(d, d, n, r));
  fc1 = register_module("fc1", AdaptedLinear(d, o.ff_mult() * d, n, r));
  fc2 = register_module("fc2", AdaptedLinear(o.ff_mult() * d, d, n, r));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& allowed, const torch::Tensor& role,
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
  torch::Tensor att = q.matmul(k.transpose(-2, -1)) / std::sqrt(static_cast<double>(dh));
  att = att.masked_fill(allowed.logical_not(), -1e9).softmax(-1);
  torch::Tensor h = att.matmul(v).transpose(1, 2).reshape({B, T, d});
  torch::Tensor y = x + proj(h, role);
  return y + fc2(torch::gelu(fc1(ln2(y), role)), role);
}

LatentProjectionImpl::LatentProjectionImpl(int64_t d, int64_t hidden)
    : generator_(at::make_generator<at::CPUGeneratorImpl>()) {
  fc1 = register_module("fc1", torch::nn::Linear(d, hidden));
  fc2 = register_module("fc2", torch::nn::Linear(hidden, d));
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
}

torch::Tensor LatentProjectionImpl::forward(const torch::Tensor& h) {
  torch::Tensor x = h;
  if (is_training() && drop_p_ > 0) {
    // Drawn on the CPU from this projection's generator, then moved to h's device.
    torch::Tensor keep = torch::empty(h.sizes(), torch::kFloat).bernoulli_(1.0 - drop_p_, generator_);
    x = h * (keep / (1.0 - drop_p_)).to(h.device(), h.scalar_type());
  }
  return norm(fc2(torch::gelu(fc1(x))));
}

void LatentProjectionImpl::seed_dropout(uint64_t seed) {
  std::lock_guard<std::mutex> lock(generator_.mutex());
  generator_.set_current_seed(seed);
}

torch::Tensor LatentProjectionImpl::dropout_state() const {
  std::lock_guard<std::mutex> lock(generator_.mutex());
  return generator_.get_state();
}

void LatentProjectionImpl::set_dropout_state(const torch::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator_.mutex());
  generator_.set_state(state);
}

TransformerLMImpl::TransformerLMImpl(const TransformerLMOptions& o) : options_(o) {
  const int64_t d = o.d_model();
  TORCH_CHECK(d > 0 && o.layers() > 0 && o.heads() > 0 && o.max_len() > 0 && o.ff_mult() > 0,
              "a transformer needs positive d_model, layers, heads, max_len and ff_mult");
  TORCH_CHECK(d % o.heads() == 0, "d_model must be divisible by heads");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(o.vocab_size(), d));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(o.max_len(), d));
  role_emb = register_module("role_emb", torch::nn::Embedding(o.num_roles(), d));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.layers(); ++i) blocks->push_back(Block(o));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  if (o.role_heads()) {
    role_lm_w = register_parameter("role_lm_w", torch::randn({o.num_roles(), d, o.vocab_size()}) * 0.02);
    role_value_w = register_parameter("role_value_w", torch::zeros({o.num_roles(), d, 1}));
  } else {
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(d, o.vocab_size()).bias(false)));
    value_head = register_module("value_head", torch::nn::Linear(d, 1));
  }
  if (o.latent()) latent_proj = register_module("latent_proj", LatentProjection(d, 2 * d));
  if (o.latent_in_width() > 0 && o.latent_in_width() != d) {
    latent_in = register_module("latent_in", torch::nn::Linear(o.latent_in_width(), d));
  }
  // Small initial embeddings keep the untrained policy close to uniform.
  torch::NoGradGuard no_grad;
  tok_emb->weight.normal_(0, 0.02);
  pos_emb->weight.normal_(0, 0.02);
  role_emb->weight.normal_(0, 0.02);
  if (lm_head) lm_head->weight.normal_(0, 0.02);
}

torch::Tensor TransformerLMImpl::project_latent(const torch::Tensor& h) {
  TORCH_CHECK(!latent_proj.is_empty(), "this model has no latent projection (hybrid messages are off)");
  return latent_proj(h);
}

torch::Tensor TransformerLMImpl::adapt_latent(const torch::Tensor& z) {
  const int64_t w = z.size(-1);
  if (w == options_.d_model()) return z;
  TORCH_CHECK(!latent_in.is_empty() && w == options_.latent_in_width(), "latent vectors of width ", w,
              " reach a model of width ", options_.d_model(), " that has no adapter for them");
  return latent_in(z);
}

LatentStepsOutput TransformerLMImpl::send_latents(
    torch::Tensor h, int64_t K, const std::function<std::pair<torch::Tensor, torch::Tensor>(int64_t)>& at,
    const torch::Tensor& role, KvCache* cache) {
  LatentStepsOutput out;
  for (int64_t j = 0; j < K; ++j) {
    torch::Tensor z = project_latent(h);
    const auto [positions, keys] = at(j);
    out.steps.push_back(forward_embeds(z.unsqueeze(1), positions, keys, role, cache));
    out.z.push_back(z);
    h = out.steps.back().hidden.select(1, 0);
  }
  return out;
}

LatentProjectionImpl& TransformerLMImpl::latent_projection() {
  TORCH_CHECK(!latent_proj.is_empty(), "this model has no latent projection (hybrid messages are off)");
  return *latent_proj;
}

void TransformerLMImpl::set_latent_dropout(bool on) {
  if (!latent_proj.is_empty()) latent_proj->train(on);
}

LMOutput TransformerLMImpl::forward(const torch::Tensor& tokens, const torch::Tensor& positions,
                                    const torch::Tensor& key_valid, const torch::Tensor& role, KvCache* cache) {
  return forward_embeds(tok_emb(tokens), positions, key_valid, role, cache);
}

LMOutput TransformerLMImpl::forward_embeds(const torch::Tensor& embeds, const torch::Tensor& positions,
                                           const torch::Tensor& key_valid, const torch::Tensor& role, KvCache* cache,
                                           bool all_layers) {
  const int64_t T = embeds.size(1), Tk = key_valid.size(1);
  TORCH_CHECK(positions.max().item<int64_t>() < options_.max_len(), "sequence longer than max_len ",
              options_.max_len());
  LMOutput out;
  torch::Tensor x = embeds + pos_emb(positions) + role_emb(role).unsqueeze(1);
  // Query t (absolute index Tk - T + t) may see valid keys j <= its index, and always itself.
  auto qi = torch::arange(Tk - T, Tk, torch::kLong).view({T, 1});
  auto kj = torch::arange(Tk, torch::kLong).view({1, Tk});
  torch::Tensor causal = kj.le(qi);                                                            // [T,Tk]
  torch::Tensor self = kj.eq(qi);                                                              // [T,Tk]
  torch::Tensor allowed = (causal.unsqueeze(0) & key_valid.unsqueeze(1)) | self.unsqueeze(0);  // [B,T,Tk]
  allowed = allowed.unsqueeze(1);
  if (cache != nullptr && cache->empty()) {
    cache->keys.assign(blocks->size(), torch::Tensor());
    cache->values.assign(blocks->size(), torch::Tensor());
  }
  for (size_t i = 0; i < blocks->size(); ++i) {
    x = blocks[i]->as<Block>()->forward(x, allowed, role, cache ? &cache->keys[i] : nullptr,
                                        cache ? &cache->values[i] : nullptr);
    if (all_layers) out.layers.push_back(x);
  }
  x = ln_f(x);
  out.hidden = x;
  if (options_.role_heads()) {
    out.logits = x.bmm(role_lm_w.index_select(0, role));
    out.values = x.bmm(role_value_w.index_select(0, role)).squeeze(-1);
  } else {
    out.logits = lm_head(x);
    out.values = value_head(x).squeeze(-1);
  }
  return out;
}

}  // namespace troupe
