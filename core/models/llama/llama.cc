// The Llama-family decoder's forward pass.
#include "core/models/llama/llama.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "core/base/errors.h"
#include "core/models/attention.h"
#include "core/models/torch_compat.h"

namespace troupe {

namespace {

// [x1, x2] -> [-x2, x1] over the last dimension's halves.
torch::Tensor RotateHalf(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// RoPE's inverse frequencies theta^(-2i/D), rescaled as config.json's
// rope_scaling says (Hugging Face's formulas, docs/models.md).
torch::Tensor InverseFrequencies(const config::LlamaSpec& o, int64_t D) {
  torch::Tensor inv = torch::pow(o.rope_theta(), -torch::arange(0, D, 2, torch::kFloat) / static_cast<double>(D));
  const config::RopeScalingSpec& r = o.rope_scaling();
  if (r.type() == "linear") inv = inv / r.factor();
  if (r.type() == "llama3") {
    // Wavelengths longer than the original context / low_freq_factor are
    // divided by factor, shorter than context / high_freq_factor kept, and
    // those between interpolated smoothly.
    const double context = r.original_max_len();
    const torch::Tensor wavelength = 2 * M_PI / inv;
    const torch::Tensor scaled = torch::where(wavelength > context / r.low_freq_factor(), inv / r.factor(), inv);
    const torch::Tensor smooth = (context / wavelength - r.low_freq_factor()) / (r.high_freq_factor() - r.low_freq_factor());
    const torch::Tensor smoothed = (1 - smooth) * scaled / r.factor() + smooth * scaled;
    const torch::Tensor medium =
        (wavelength >= context / r.high_freq_factor()).logical_and(wavelength <= context / r.low_freq_factor());
    inv = torch::where(medium, smoothed, scaled);
  }
  // "dynamic" changes the base only past max_len, where troupe never runs.
  return inv;
}

void CheckOptions(const LlamaOptions& options) {
  const config::LlamaSpec& o = options.sizes();
  TORCH_CHECK(options.vocab_size() > 0 && o.hidden_size() > 0 && o.intermediate_size() > 0 && o.layers() > 0 &&
                  o.heads() > 0 && o.kv_heads() > 0 && o.max_len() > 0 && o.rms_eps() > 0 && o.rope_theta() > 0,
              "a Llama decoder needs positive sizes, rms_eps and rope_theta");
  TORCH_CHECK(o.heads() % o.kv_heads() == 0, "heads (", o.heads(), ") must be a multiple of kv_heads (", o.kv_heads(),
              ")");
  TORCH_CHECK(options.resolved_head_dim() % 2 == 0, "the head dimension must be even for rotary embeddings");
}

}  // namespace

RMSNormImpl::RMSNormImpl(int64_t size, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({size}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = x.to(torch::kFloat);
  h = h * torch::rsqrt(h.pow(2).mean(-1, true) + eps_);
  return weight * h.to(x.scalar_type());
}

torch::Tensor RMSNormImpl::scale_as(const torch::Tensor& part, const torch::Tensor& stream) {
  const torch::Tensor scale = torch::rsqrt(stream.detach().to(torch::kFloat).pow(2).mean(-1, true) + eps_);
  return weight * (part.to(torch::kFloat) * scale).to(part.scalar_type());
}

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaOptions& o)
    : heads_(o.sizes().heads()), kv_heads_(o.sizes().kv_heads()), head_dim_(o.resolved_head_dim()) {
  const int64_t H = o.sizes().hidden_size();
  auto linear = [](int64_t in, int64_t out, bool bias) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
  };
  q_proj = register_module("q_proj", linear(H, heads_ * head_dim_, o.sizes().qkv_bias()));
  k_proj = register_module("k_proj", linear(H, kv_heads_ * head_dim_, o.sizes().qkv_bias()));
  v_proj = register_module("v_proj", linear(H, kv_heads_ * head_dim_, o.sizes().qkv_bias()));
  o_proj = register_module("o_proj", linear(heads_ * head_dim_, H, false));
  if (o.sizes().qk_norm()) {
    q_norm = register_module("q_norm", RMSNorm(head_dim_, o.sizes().rms_eps()));
    k_norm = register_module("k_norm", RMSNorm(head_dim_, o.sizes().rms_eps()));
  }
  lora_q = MaybeRoleLora(*this, "lora_q", H, heads_ * head_dim_, o.parts().num_roles(), o.parts().lora_rank());
  lora_k = MaybeRoleLora(*this, "lora_k", H, kv_heads_ * head_dim_, o.parts().num_roles(), o.parts().lora_rank());
  lora_v = MaybeRoleLora(*this, "lora_v", H, kv_heads_ * head_dim_, o.parts().num_roles(), o.parts().lora_rank());
  lora_o = MaybeRoleLora(*this, "lora_o", heads_ * head_dim_, H, o.parts().num_roles(), o.parts().lora_rank());
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                          const torch::Tensor& mask, const torch::Tensor& role,
                                          torch::Tensor* cache_k, torch::Tensor* cache_v, bool causal) {
  const int64_t B = x.size(0), T = x.size(1);
  torch::Tensor q = WithRoleLora(q_proj(x), lora_q, x, role).view({B, T, heads_, head_dim_});
  torch::Tensor k = WithRoleLora(k_proj(x), lora_k, x, role).view({B, T, kv_heads_, head_dim_});
  torch::Tensor v = WithRoleLora(v_proj(x), lora_v, x, role).view({B, T, kv_heads_, head_dim_}).transpose(1, 2);
  if (!q_norm.is_empty()) {  // Qwen3: per head, before the rotation
    q = q_norm(q);
    k = k_norm(k);
  }
  q = q.transpose(1, 2);
  k = k.transpose(1, 2);
  q = q * cos + RotateHalf(q) * sin;
  k = k * cos + RotateHalf(k) * sin;
  if (cache_k != nullptr) {
    if (cache_k->defined()) {
      k = torch::cat({*cache_k, k}, 2);
      v = torch::cat({*cache_v, v}, 2);
    }
    *cache_k = k;
    *cache_v = v;
  }
  if (torch_compat::kHasFusedAttention && kept_head_ < 0) {  // no weights to keep: the fused kernels
    const torch::Tensor out = torch_compat::FusedAttention(q, k, v, causal ? torch::Tensor() : mask);
    const torch::Tensor merged = out.transpose(1, 2).reshape({B, T, heads_ * head_dim_});
    return WithRoleLora(o_proj(merged), lora_o, merged, role);
  }
  torch::Tensor out;
  if (kept_head_ < 0) {
    out = Attention(q, k, v, mask);
  } else {  // one head's weights are kept (guided attention reads them): LibTorch's operators
    torch::Tensor weights;
    out = ComposedAttention(q, k, v, mask, &weights);
    kept_ = weights.select(1, kept_head_);
    kept_input_ = x;
  }
  const torch::Tensor merged = out.transpose(1, 2).reshape({B, T, heads_ * head_dim_});
  return WithRoleLora(o_proj(merged), lora_o, merged, role);
}

torch::Tensor LlamaAttentionImpl::kept_writes(bool through_stream) const {
  if (!kept_input_.defined()) return kept_input_;
  // The values are recomputed from the input, detached unless `through_stream`, so a loss on the writes
  // trains v_proj and o_proj only, not what the layers below put into the stream (where the other heads'
  // keys are formed).
  const int64_t rows = kept_head_ / (heads_ / kv_heads_) * head_dim_;
  const torch::Tensor input =
      (through_stream ? kept_input_ : kept_input_.detach()).to(v_proj->weight.scalar_type());  // bfloat16 under autocast
  torch::Tensor values = torch::matmul(input, v_proj->weight.narrow(0, rows, head_dim_).t());
  if (v_proj->bias.defined()) values = values + v_proj->bias.narrow(0, rows, head_dim_);
  const torch::Tensor columns = o_proj->weight.narrow(1, kept_head_ * head_dim_, head_dim_);
  return torch::matmul(values, columns.t());
}

LlamaMlpImpl::LlamaMlpImpl(const LlamaOptions& o) {
  auto linear = [](int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
  };
  gate_proj = register_module("gate_proj", linear(o.sizes().hidden_size(), o.sizes().intermediate_size()));
  up_proj = register_module("up_proj", linear(o.sizes().hidden_size(), o.sizes().intermediate_size()));
  down_proj = register_module("down_proj", linear(o.sizes().intermediate_size(), o.sizes().hidden_size()));
  lora_gate = MaybeRoleLora(*this, "lora_gate", o.sizes().hidden_size(), o.sizes().intermediate_size(), o.parts().num_roles(), o.parts().lora_rank());
  lora_up = MaybeRoleLora(*this, "lora_up", o.sizes().hidden_size(), o.sizes().intermediate_size(), o.parts().num_roles(), o.parts().lora_rank());
  lora_down = MaybeRoleLora(*this, "lora_down", o.sizes().intermediate_size(), o.sizes().hidden_size(), o.parts().num_roles(), o.parts().lora_rank());
}

torch::Tensor LlamaMlpImpl::forward(const torch::Tensor& x, const torch::Tensor& role) {
  const torch::Tensor h = torch::silu(WithRoleLora(gate_proj(x), lora_gate, x, role)) * WithRoleLora(up_proj(x), lora_up, x, role);
  return WithRoleLora(down_proj(h), lora_down, h, role);
}

LlamaLayerImpl::LlamaLayerImpl(const LlamaOptions& o) {
  self_attn = register_module("self_attn", LlamaAttention(o));
  mlp = register_module("mlp", LlamaMlp(o));
  input_layernorm = register_module("input_layernorm", RMSNorm(o.sizes().hidden_size(), o.sizes().rms_eps()));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(o.sizes().hidden_size(), o.sizes().rms_eps()));
}

torch::Tensor LlamaLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                      const torch::Tensor& mask, const torch::Tensor& role, torch::Tensor* cache_k,
                                      torch::Tensor* cache_v, bool causal) {
  torch::Tensor h = x + self_attn(input_layernorm(x), cos, sin, mask, role, cache_k, cache_v, causal);
  return h + mlp(post_attention_layernorm(h), role);
}

LlamaModelImpl::LlamaModelImpl(const LlamaOptions& o) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(o.vocab_size(), o.sizes().hidden_size()));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.sizes().layers(); ++i) layers->push_back(LlamaLayer(o));
  norm = register_module("norm", RMSNorm(o.sizes().hidden_size(), o.sizes().rms_eps()));
}

LlamaLMImpl::LlamaLMImpl(const LlamaOptions& options)
    : PolicyModelImpl({options.sizes().hidden_size(), options.vocab_size(), options.sizes().max_len()}),
      options_(options) {
  CheckOptions(options_);
  const int64_t H = options_.sizes().hidden_size();
  model = register_module("model", LlamaModel(options_));
  if (!options_.sizes().tie_embeddings()) {
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(H, options_.vocab_size()).bias(false)));
  }
  value_head = register_module("value_head", torch::nn::Linear(H, 1));
  if (options_.parts().num_roles() > 1) role_emb = register_module("role_emb", torch::nn::Embedding(options_.parts().num_roles(), H));
  register_latent_parts(options_.parts());
  torch::NoGradGuard no_grad;
  model->embed_tokens->weight.normal_(0, 0.02);
  if (role_emb) role_emb->weight.zero_();  // a loaded model starts as it was for every role
}

std::shared_ptr<PolicyModelImpl> LlamaLMImpl::fresh_copy() const { return std::make_shared<LlamaLMImpl>(options_); }

LlamaAttentionImpl& LlamaLMImpl::attention_of(int64_t layer) const {
  if (layer < 0 || layer >= static_cast<int64_t>(model->layers->size())) {
    throw ModelError("no layer " + std::to_string(layer) + " in a model of " + std::to_string(model->layers->size()) +
                     " layers");
  }
  return *model.ptr()->layers[layer]->as<LlamaLayer>()->self_attn;
}

void LlamaLMImpl::keep_attention(int64_t layer, int64_t head) {
  LlamaAttentionImpl& attention = attention_of(layer);
  if (head >= attention.heads()) {
    throw ModelError("no head " + std::to_string(head) + " in a layer of " + std::to_string(attention.heads()) +
                     " heads");
  }
  attention.keep_head(head);
}

torch::Tensor LlamaLMImpl::kept_attention(int64_t layer) const { return attention_of(layer).kept(); }

torch::Tensor LlamaLMImpl::kept_writes(int64_t layer, bool through_stream) const {
  return attention_of(layer).kept_writes(through_stream);
}

torch::Tensor LlamaLMImpl::direct_logits(const torch::Tensor& written, const torch::Tensor& stream) {
  return lm_logits(model->norm->scale_as(written, stream), {});
}

LMOutput LlamaLMImpl::forward_blocks(const torch::Tensor& embeds, const torch::Tensor& positions,
                                     const torch::Tensor& key_valid, const torch::Tensor& role, KvCache* cache,
                                     bool all_layers) {
  const int64_t B = embeds.size(0), T = embeds.size(1), D = options_.resolved_head_dim();
  TORCH_CHECK(positions.max().item<int64_t>() < options_.sizes().max_len(), "sequence longer than max_len ",
              options_.sizes().max_len());
  const torch::Tensor roles =
      role.defined() ? role : torch::zeros({B}, torch::TensorOptions().dtype(torch::kLong).device(embeds.device()));
  // Rotary angles: position * inverse frequency, duplicated to D.
  if (!inv_freq_.defined() || inv_freq_.device() != embeds.device()) {
    inv_freq_ = InverseFrequencies(options_.sizes(), D).to(embeds.device());
  }
  torch::Tensor angles = positions.to(torch::kFloat).unsqueeze(-1) * inv_freq_;  // [B,T,D/2]
  angles = torch::cat({angles, angles}, -1).unsqueeze(1);                        // [B,1,T,D]
  const torch::Tensor cos = angles.cos().to(embeds.scalar_type()), sin = angles.sin().to(embeds.scalar_type());
  // The fused kernels take the boolean mask; the path of our own an additive one, built once for every layer.
  const torch::Tensor allowed = AttentionMask(key_valid, T),
                      mask = torch_compat::kHasFusedAttention ? allowed : AttentionBias(allowed);
  // No padding and nothing cached: the fused kernels' own causal mask (FlashAttention) will do.
  const bool causal = torch_compat::kHasFusedAttention && cache == nullptr && key_valid.dim() == 2 &&
                      key_valid.size(1) == T && key_valid.all().item<bool>();
  if (cache != nullptr) cache->reserve_layers(model->layers->size());
  torch::Tensor x = role_emb ? embeds + role_emb(roles).unsqueeze(1) : embeds;
  LMOutput out;
  for (size_t i = 0; i < model->layers->size(); ++i) {
    x = model->layers[i]->as<LlamaLayer>()->forward(x, cos, sin, mask, roles, cache ? &cache->keys[i] : nullptr,
                                                    cache ? &cache->values[i] : nullptr, causal);
    if (all_layers) out.layers.push_back(x);
  }
  out.hidden = model->norm(x);
  out.values = value_head(out.hidden).squeeze(-1);
  return out;
}

torch::Tensor LlamaLMImpl::lm_logits(const torch::Tensor& hidden, const torch::Tensor& /*role*/) {
  return options_.sizes().tie_embeddings() ? torch::matmul(hidden, model->embed_tokens->weight.t()) : lm_head(hidden);
}

}  // namespace troupe
