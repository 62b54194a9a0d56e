// The Llama-family decoder's forward pass and its loading from safetensors.
#include "core/models/llama.h"

#include <cmath>
#include <filesystem>
#include <functional>

#include "core/base/errors.h"
#include "core/hf_config.h"
#include "core/safetensors.h"

namespace troupe {

namespace {

// [x1, x2] -> [-x2, x1] over the last dimension's halves.
torch::Tensor RotateHalf(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

void CheckOptions(const LlamaOptions& o) {
  TORCH_CHECK(o.vocab_size() > 0 && o.hidden_size() > 0 && o.intermediate_size() > 0 && o.layers() > 0 &&
                  o.heads() > 0 && o.kv_heads() > 0 && o.max_len() > 0 && o.rms_eps() > 0 && o.rope_theta() > 0,
              "a Llama decoder needs positive sizes, rms_eps and rope_theta");
  TORCH_CHECK(o.heads() % o.kv_heads() == 0, "heads (", o.heads(), ") must be a multiple of kv_heads (", o.kv_heads(),
              ")");
  TORCH_CHECK(o.resolved_head_dim() % 2 == 0, "the head dimension must be even for rotary embeddings");
}

// y = linear(x), plus the role's adapter when there is one.
torch::Tensor Project(torch::nn::Linear& linear, RoleLora& lora, const torch::Tensor& x, const torch::Tensor& role) {
  torch::Tensor y = linear(x);
  return lora.is_empty() ? y : y + lora(x, role);
}

RoleLora MaybeLora(torch::nn::Module& owner, const char* name, int64_t in, int64_t out, const LlamaOptions& o) {
  if (o.lora_rank() <= 0) return RoleLora(nullptr);
  return owner.register_module(name, RoleLora(in, out, o.num_roles(), o.lora_rank()));
}

// Copies the parameters of `model` that `wanted` selects from the file
// `file_of` gives for each, by name, each checked against its shape.
void LoadParameters(torch::nn::Module& model, const std::function<const SafetensorsFile&(const std::string&)>& file_of,
                    const std::function<bool(const std::string&)>& wanted) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    const std::string& name = p.key();
    if (!wanted(name)) continue;
    const SafetensorsFile& file = file_of(name);
    const SafetensorsView& v = file.Tensor(name);
    const std::vector<int64_t> want = p.value().sizes().vec();
    if (v.shape != want) {
      throw CheckpointError(file.path() + ": tensor '" + name + "' has shape " + ShapeText(v.shape) +
                            ", the model needs " + ShapeText(want));
    }
    torch::Tensor values = torch::empty(want, torch::kFloat);
    file.CopyFloats(name, values.data_ptr<float>());  // one copy out of the mapping
    p.value().copy_(values.to(p.value().device(), p.value().scalar_type()));
  }
}

// The parameters of `model` that `wanted` selects, as float32 views over `keep`.
std::vector<SafetensorsTensor> Selected(torch::nn::Module& model, bool bf16,
                                        const std::function<bool(const std::string&)>& wanted,
                                        std::vector<torch::Tensor>* keep_out) {
  std::vector<torch::Tensor>& keep = *keep_out;  // contiguous float32 copies the views point into
  std::vector<SafetensorsTensor> tensors;
  for (const auto& p : model.named_parameters()) {
    if (!wanted(p.key())) continue;
    keep.push_back(p.value().detach().to(torch::kCPU, torch::kFloat).contiguous());
    tensors.push_back({p.key(), keep.back().sizes().vec(), keep.back().data_ptr<float>(),
                       bf16 ? SafetensorsDtype::kBF16 : SafetensorsDtype::kF32});
  }
  return tensors;
}


}  // namespace

bool IsFieldParameter(const std::string& name) {
  const bool field_prefix = name.rfind("model.", 0) == 0 || name.rfind("lm_head.", 0) == 0;
  return field_prefix && name.find(".lora_") == std::string::npos;
}

RMSNormImpl::RMSNormImpl(int64_t size, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({size}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = x.to(torch::kFloat);
  h = h * torch::rsqrt(h.pow(2).mean(-1, true) + eps_);
  return weight * h.to(x.scalar_type());
}

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaOptions& o)
    : heads_(o.heads()), kv_heads_(o.kv_heads()), head_dim_(o.resolved_head_dim()) {
  const int64_t H = o.hidden_size();
  auto linear = [](int64_t in, int64_t out, bool bias) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
  };
  q_proj = register_module("q_proj", linear(H, heads_ * head_dim_, o.qkv_bias()));
  k_proj = register_module("k_proj", linear(H, kv_heads_ * head_dim_, o.qkv_bias()));
  v_proj = register_module("v_proj", linear(H, kv_heads_ * head_dim_, o.qkv_bias()));
  o_proj = register_module("o_proj", linear(heads_ * head_dim_, H, false));
  if (o.qk_norm()) {
    q_norm = register_module("q_norm", RMSNorm(head_dim_, o.rms_eps()));
    k_norm = register_module("k_norm", RMSNorm(head_dim_, o.rms_eps()));
  }
  lora_q = MaybeLora(*this, "lora_q", H, heads_ * head_dim_, o);
  lora_k = MaybeLora(*this, "lora_k", H, kv_heads_ * head_dim_, o);
  lora_v = MaybeLora(*this, "lora_v", H, kv_heads_ * head_dim_, o);
  lora_o = MaybeLora(*this, "lora_o", heads_ * head_dim_, H, o);
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                          const torch::Tensor& allowed, const torch::Tensor& role,
                                          torch::Tensor* cache_k, torch::Tensor* cache_v) {
  const int64_t B = x.size(0), T = x.size(1);
  torch::Tensor q = Project(q_proj, lora_q, x, role).view({B, T, heads_, head_dim_});
  torch::Tensor k = Project(k_proj, lora_k, x, role).view({B, T, kv_heads_, head_dim_});
  torch::Tensor v = Project(v_proj, lora_v, x, role).view({B, T, kv_heads_, head_dim_}).transpose(1, 2);
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
  // Each key/value head serves `group` consecutive query heads: those heads'
  // queries are stacked as one longer query block of their key/value head, so
  // the keys and values (and the cache) are never copied per query head.
  const int64_t group = heads_ / kv_heads_, Tk = k.size(2);
  const torch::Tensor grouped = q.reshape({B, kv_heads_, group * T, head_dim_});
  torch::Tensor scores = grouped.matmul(k.transpose(-2, -1)).view({B, heads_, T, Tk}) /
                         std::sqrt(static_cast<double>(head_dim_));
  scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  torch::Tensor att = torch::softmax(scores.to(torch::kFloat), -1).to(q.scalar_type());
  const torch::Tensor out = att.view({B, kv_heads_, group * T, Tk}).matmul(v).view({B, heads_, T, head_dim_});
  return Project(o_proj, lora_o, out.transpose(1, 2).reshape({B, T, heads_ * head_dim_}), role);
}

LlamaMlpImpl::LlamaMlpImpl(const LlamaOptions& o) {
  auto linear = [](int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
  };
  gate_proj = register_module("gate_proj", linear(o.hidden_size(), o.intermediate_size()));
  up_proj = register_module("up_proj", linear(o.hidden_size(), o.intermediate_size()));
  down_proj = register_module("down_proj", linear(o.intermediate_size(), o.hidden_size()));
  lora_gate = MaybeLora(*this, "lora_gate", o.hidden_size(), o.intermediate_size(), o);
  lora_up = MaybeLora(*this, "lora_up", o.hidden_size(), o.intermediate_size(), o);
  lora_down = MaybeLora(*this, "lora_down", o.intermediate_size(), o.hidden_size(), o);
}

torch::Tensor LlamaMlpImpl::forward(const torch::Tensor& x, const torch::Tensor& role) {
  const torch::Tensor h = torch::silu(Project(gate_proj, lora_gate, x, role)) * Project(up_proj, lora_up, x, role);
  return Project(down_proj, lora_down, h, role);
}

LlamaLayerImpl::LlamaLayerImpl(const LlamaOptions& o) {
  self_attn = register_module("self_attn", LlamaAttention(o));
  mlp = register_module("mlp", LlamaMlp(o));
  input_layernorm = register_module("input_layernorm", RMSNorm(o.hidden_size(), o.rms_eps()));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(o.hidden_size(), o.rms_eps()));
}

torch::Tensor LlamaLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                      const torch::Tensor& allowed, const torch::Tensor& role, torch::Tensor* cache_k,
                                      torch::Tensor* cache_v) {
  torch::Tensor h = x + self_attn(input_layernorm(x), cos, sin, allowed, role, cache_k, cache_v);
  return h + mlp(post_attention_layernorm(h), role);
}

LlamaModelImpl::LlamaModelImpl(const LlamaOptions& o) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(o.vocab_size(), o.hidden_size()));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.layers(); ++i) layers->push_back(LlamaLayer(o));
  norm = register_module("norm", RMSNorm(o.hidden_size(), o.rms_eps()));
}

LlamaLMImpl::LlamaLMImpl(const LlamaOptions& options) : options_(options) {
  CheckOptions(options_);
  const int64_t H = options_.hidden_size();
  model = register_module("model", LlamaModel(options_));
  if (!options_.tie_embeddings()) {
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(H, options_.vocab_size()).bias(false)));
  }
  value_head = register_module("value_head", torch::nn::Linear(H, 1));
  if (options_.num_roles() > 1) role_emb = register_module("role_emb", torch::nn::Embedding(options_.num_roles(), H));
  register_latent_parts(H, options_.latent(), options_.latent_in_width());
  torch::NoGradGuard no_grad;
  model->embed_tokens->weight.normal_(0, 0.02);
  if (role_emb) role_emb->weight.zero_();  // a loaded model starts as it was for every role
}

std::shared_ptr<PolicyModelImpl> LlamaLMImpl::fresh_copy() const { return std::make_shared<LlamaLMImpl>(options_); }

LMOutput LlamaLMImpl::forward_blocks(const torch::Tensor& embeds, const torch::Tensor& positions,
                                     const torch::Tensor& key_valid, const torch::Tensor& role, KvCache* cache,
                                     bool all_layers) {
  const int64_t B = embeds.size(0), T = embeds.size(1), D = options_.resolved_head_dim();
  TORCH_CHECK(positions.max().item<int64_t>() < options_.max_len(), "sequence longer than max_len ",
              options_.max_len());
  const torch::Tensor roles =
      role.defined() ? role : torch::zeros({B}, torch::TensorOptions().dtype(torch::kLong).device(embeds.device()));
  // Rotary angles: position * theta^(-2i/D), duplicated to D.
  if (!inv_freq_.defined() || inv_freq_.device() != embeds.device()) {
    inv_freq_ = torch::pow(options_.rope_theta(), -torch::arange(0, D, 2, torch::kFloat) / static_cast<double>(D))
                    .to(embeds.device());
  }
  torch::Tensor angles = positions.to(torch::kFloat).unsqueeze(-1) * inv_freq_;  // [B,T,D/2]
  angles = torch::cat({angles, angles}, -1).unsqueeze(1);                        // [B,1,T,D]
  const torch::Tensor cos = angles.cos().to(embeds.scalar_type()), sin = angles.sin().to(embeds.scalar_type());
  const torch::Tensor allowed = AttentionMask(key_valid, T);
  if (cache != nullptr) cache->reserve_layers(model->layers->size());
  torch::Tensor x = role_emb ? embeds + role_emb(roles).unsqueeze(1) : embeds;
  LMOutput out;
  for (size_t i = 0; i < model->layers->size(); ++i) {
    x = model->layers[i]->as<LlamaLayer>()->forward(x, cos, sin, allowed, roles, cache ? &cache->keys[i] : nullptr,
                                                    cache ? &cache->values[i] : nullptr);
    if (all_layers) out.layers.push_back(x);
  }
  out.hidden = model->norm(x);
  out.values = value_head(out.hidden).squeeze(-1);
  return out;
}

torch::Tensor LlamaLMImpl::lm_logits(const torch::Tensor& hidden, const torch::Tensor& /*role*/) {
  return options_.tie_embeddings() ? torch::matmul(hidden, model->embed_tokens->weight.t()) : lm_head(hidden);
}

LlamaOptions LlamaOptionsOf(const HfDecoderConfig& h) {
  return LlamaOptions(h.vocab_size)
      .hidden_size(h.hidden_size)
      .intermediate_size(h.intermediate_size)
      .layers(h.layers)
      .heads(h.heads)
      .kv_heads(h.kv_heads)
      .head_dim(h.head_dim)
      .max_len(h.max_len)
      .rms_eps(h.rms_eps)
      .rope_theta(h.rope_theta)
      .qkv_bias(h.qkv_bias())
      .qk_norm(h.qk_norm())
      .tie_embeddings(h.tie_embeddings);
}

HfDecoderConfig HfConfigOf(const LlamaOptions& o) {
  HfDecoderConfig h;
  h.model_type = o.qk_norm() ? "qwen3" : o.qkv_bias() ? "qwen2" : "llama";
  h.vocab_size = o.vocab_size();
  h.hidden_size = o.hidden_size();
  h.intermediate_size = o.intermediate_size();
  h.layers = o.layers();
  h.heads = o.heads();
  h.kv_heads = o.kv_heads();
  h.head_dim = o.resolved_head_dim();
  h.max_len = o.max_len();
  h.rms_eps = o.rms_eps();
  h.rope_theta = o.rope_theta();
  h.tie_embeddings = o.tie_embeddings();
  return h;
}

LlamaOptions ReadLlamaConfig(const std::string& path) { return LlamaOptionsOf(ReadHfDecoderConfig(path)); }

void LoadLlamaWeights(LlamaLM& model, const SafetensorsFile& file) {
  LoadParameters(*model, [&](const std::string&) -> const SafetensorsFile& { return file; }, IsFieldParameter);
}

void LoadLlamaWeights(LlamaLM& model, const SafetensorsModel& weights) {
  LoadParameters(
      *model, [&](const std::string& name) -> const SafetensorsFile& { return weights.FileOf(name); },
      IsFieldParameter);
}

void WriteLlamaFolder(LlamaLM& model, const std::string& dir, bool bf16, size_t max_shard_bytes) {
  std::filesystem::create_directories(dir);
  std::vector<torch::Tensor> keep;
  WriteSafetensorsModel(dir, Selected(*model, bf16, IsFieldParameter, &keep), {{"format", "pt"}}, max_shard_bytes);
  WriteHfDecoderConfig(HfConfigOf(model->options()), dir + "/config.json", bf16 ? "bfloat16" : "float32");
}

LlamaLM LoadLlamaFolder(const std::string& dir, const LlamaOptions* extra) {
  LlamaOptions o = ReadLlamaConfig(dir + "/config.json");
  if (extra != nullptr) {
    o.num_roles(extra->num_roles()).lora_rank(extra->lora_rank()).latent(extra->latent());
    o.latent_in_width(extra->latent_in_width());
  }
  LlamaLM model(o);
  LoadLlamaWeights(model, SafetensorsModel(dir));
  return model;
}

namespace {
bool IsTroupePart(const std::string& name) { return !IsFieldParameter(name); }
}  // namespace

void WriteTroupeParts(LlamaLM& model, const std::string& path) {
  std::vector<torch::Tensor> keep;
  WriteSafetensors(path, Selected(*model, false, IsTroupePart, &keep), {{"format", "pt"}});
}

void LoadTroupeParts(LlamaLM& model, const std::string& path) {
  const SafetensorsFile file(path);
  LoadParameters(*model, [&](const std::string&) -> const SafetensorsFile& { return file; }, IsTroupePart);
}

}  // namespace troupe
