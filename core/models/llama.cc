// The Llama-family decoder's forward pass and its loading from safetensors.
#include "core/models/llama.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
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

}  // namespace

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
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                          const torch::Tensor& allowed, torch::Tensor* cache_k,
                                          torch::Tensor* cache_v) {
  const int64_t B = x.size(0), T = x.size(1);
  torch::Tensor q = q_proj(x).view({B, T, heads_, head_dim_});
  torch::Tensor k = k_proj(x).view({B, T, kv_heads_, head_dim_});
  torch::Tensor v = v_proj(x).view({B, T, kv_heads_, head_dim_}).transpose(1, 2);
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
  const int64_t group = heads_ / kv_heads_;  // each key/value head serves `group` query heads
  if (group > 1) {
    k = k.repeat_interleave(group, 1);
    v = v.repeat_interleave(group, 1);
  }
  torch::Tensor scores = q.matmul(k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim_));
  scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  torch::Tensor att = torch::softmax(scores.to(torch::kFloat), -1).to(q.scalar_type());
  return o_proj(att.matmul(v).transpose(1, 2).reshape({B, T, heads_ * head_dim_}));
}

LlamaMlpImpl::LlamaMlpImpl(const LlamaOptions& o) {
  auto linear = [](int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
  };
  gate_proj = register_module("gate_proj", linear(o.hidden_size(), o.intermediate_size()));
  up_proj = register_module("up_proj", linear(o.hidden_size(), o.intermediate_size()));
  down_proj = register_module("down_proj", linear(o.intermediate_size(), o.hidden_size()));
}

torch::Tensor LlamaMlpImpl::forward(const torch::Tensor& x) {
  return down_proj(torch::silu(gate_proj(x)) * up_proj(x));
}

LlamaLayerImpl::LlamaLayerImpl(const LlamaOptions& o) {
  self_attn = register_module("self_attn", LlamaAttention(o));
  mlp = register_module("mlp", LlamaMlp(o));
  input_layernorm = register_module("input_layernorm", RMSNorm(o.hidden_size(), o.rms_eps()));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(o.hidden_size(), o.rms_eps()));
}

torch::Tensor LlamaLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                      const torch::Tensor& allowed, torch::Tensor* cache_k, torch::Tensor* cache_v) {
  torch::Tensor h = x + self_attn(input_layernorm(x), cos, sin, allowed, cache_k, cache_v);
  return h + mlp(post_attention_layernorm(h));
}

LlamaModelImpl::LlamaModelImpl(const LlamaOptions& o) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(o.vocab_size(), o.hidden_size()));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.layers(); ++i) layers->push_back(LlamaLayer(o));
  norm = register_module("norm", RMSNorm(o.hidden_size(), o.rms_eps()));
}

LlamaLMImpl::LlamaLMImpl(const LlamaOptions& options) : options_(options) {
  CheckOptions(options_);
  model = register_module("model", LlamaModel(options_));
  if (!options_.tie_embeddings()) {
    lm_head = register_module(
        "lm_head",
        torch::nn::Linear(torch::nn::LinearOptions(options_.hidden_size(), options_.vocab_size()).bias(false)));
  }
  value_head = register_module("value_head", torch::nn::Linear(options_.hidden_size(), 1));
  torch::NoGradGuard no_grad;
  model->embed_tokens->weight.normal_(0, 0.02);
}

LlamaOutput LlamaLMImpl::forward(const torch::Tensor& tokens, const torch::Tensor& positions,
                                 const torch::Tensor& key_valid, LlamaCache* cache) {
  const int64_t T = tokens.size(1), Tk = key_valid.size(1), D = options_.resolved_head_dim();
  TORCH_CHECK(positions.max().item<int64_t>() < options_.max_len(), "sequence longer than max_len ",
              options_.max_len());
  // Rotary angles: position * theta^(-2i/D), duplicated to D.
  if (!inv_freq_.defined() || inv_freq_.device() != tokens.device()) {
    inv_freq_ = torch::pow(options_.rope_theta(), -torch::arange(0, D, 2, torch::kFloat) / static_cast<double>(D))
                    .to(tokens.device());
  }
  torch::Tensor angles = positions.to(torch::kFloat).unsqueeze(-1) * inv_freq_;  // [B,T,D/2]
  angles = torch::cat({angles, angles}, -1).unsqueeze(1);                        // [B,1,T,D]
  const torch::Tensor cos = angles.cos(), sin = angles.sin();
  // Query t (absolute index Tk - T + t) sees valid keys up to itself, and
  // always itself; a single new query (decoding) is the last position.
  torch::Tensor allowed;
  if (T == 1) {
    allowed = key_valid.clone();
    allowed.select(1, Tk - 1).fill_(true);
    allowed = allowed.unsqueeze(1).unsqueeze(1);  // [B,1,1,Tk]
  } else {
    const auto opts = torch::TensorOptions().dtype(torch::kLong).device(tokens.device());
    auto qi = torch::arange(Tk - T, Tk, opts).view({T, 1});
    auto kj = torch::arange(Tk, opts).view({1, Tk});
    allowed = ((kj.le(qi).unsqueeze(0) & key_valid.unsqueeze(1)) | kj.eq(qi).unsqueeze(0)).unsqueeze(1);
  }
  if (cache != nullptr && cache->keys.empty()) {
    cache->keys.assign(model->layers->size(), torch::Tensor());
    cache->values.assign(model->layers->size(), torch::Tensor());
  }
  torch::Tensor x = model->embed_tokens(tokens);
  for (size_t i = 0; i < model->layers->size(); ++i) {
    x = model->layers[i]->as<LlamaLayer>()->forward(x, cos, sin, allowed, cache ? &cache->keys[i] : nullptr,
                                                    cache ? &cache->values[i] : nullptr);
  }
  LlamaOutput out;
  out.hidden = model->norm(x);
  out.logits =
      options_.tie_embeddings() ? torch::matmul(out.hidden, model->embed_tokens->weight.t()) : lm_head(out.hidden);
  out.values = value_head(out.hidden).squeeze(-1);
  return out;
}

LlamaOptions ReadLlamaConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CheckpointError(path + ": cannot open");
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(path + ": not JSON: " + e.what());
  }
  auto number = [&](const char* field) {
    if (!c.contains(field) || !c[field].is_number()) throw CheckpointError(path + ": needs a number '" + field + "'");
    return c[field].get<double>();
  };
  auto count = [&](const char* field) { return static_cast<int64_t>(number(field)); };
  const std::string type = c.value("model_type", "llama");
  if (type != "llama" && type != "qwen2" && type != "qwen3") {
    throw CheckpointError(path + ": model_type '" + type + "' is not a Llama-family decoder (llama, qwen2, qwen3)");
  }
  LlamaOptions o(count("vocab_size"));
  o.hidden_size(count("hidden_size"))
      .intermediate_size(count("intermediate_size"))
      .layers(count("num_hidden_layers"))
      .heads(count("num_attention_heads"))
      .kv_heads(c.contains("num_key_value_heads") ? count("num_key_value_heads") : count("num_attention_heads"))
      .head_dim(c.contains("head_dim") && !c["head_dim"].is_null() ? count("head_dim") : 0)
      .max_len(count("max_position_embeddings"))
      .rms_eps(number("rms_norm_eps"))
      .rope_theta(c.contains("rope_theta") ? number("rope_theta") : 10000.0)  // the field's default
      .qkv_bias(type == "qwen2")
      .qk_norm(type == "qwen3")
      .tie_embeddings(c.value("tie_word_embeddings", false));
  return o;
}

void LoadLlamaWeights(LlamaLM& model, const SafetensorsFile& file) {
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    const std::string& name = p.key();
    if (name.rfind("value_head.", 0) == 0) continue;  // troupe's own head: not in the field's files
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

void WriteLlamaFolder(LlamaLM& model, const std::string& dir, bool bf16) {
  const LlamaOptions& o = model->options();
  const char* type = o.qk_norm() ? "qwen3" : o.qkv_bias() ? "qwen2" : "llama";
  const char* architecture = o.qk_norm() ? "Qwen3ForCausalLM" : o.qkv_bias() ? "Qwen2ForCausalLM" : "LlamaForCausalLM";
  nlohmann::json c = {{"architectures", {architecture}},
                      {"model_type", type},
                      {"vocab_size", o.vocab_size()},
                      {"hidden_size", o.hidden_size()},
                      {"intermediate_size", o.intermediate_size()},
                      {"num_hidden_layers", o.layers()},
                      {"num_attention_heads", o.heads()},
                      {"num_key_value_heads", o.kv_heads()},
                      {"head_dim", o.resolved_head_dim()},
                      {"max_position_embeddings", o.max_len()},
                      {"rms_norm_eps", o.rms_eps()},
                      {"rope_theta", o.rope_theta()},
                      {"tie_word_embeddings", o.tie_embeddings()},
                      {"hidden_act", "silu"},
                      {"torch_dtype", bf16 ? "bfloat16" : "float32"}};
  std::filesystem::create_directories(dir);
  std::vector<torch::Tensor> keep;  // contiguous float32 copies the views point into
  std::vector<SafetensorsTensor> tensors;
  for (const auto& p : model->named_parameters()) {
    if (p.key().rfind("value_head.", 0) == 0) continue;
    keep.push_back(p.value().detach().to(torch::kCPU, torch::kFloat).contiguous());
    tensors.push_back({p.key(), keep.back().sizes().vec(), keep.back().data_ptr<float>(),
                       bf16 ? SafetensorsDtype::kBF16 : SafetensorsDtype::kF32});
  }
  WriteSafetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
  const std::string config = dir + "/config.json", tmp = config + ".tmp";
  std::ofstream(tmp) << c.dump(2) << "\n";
  std::filesystem::rename(tmp, config);
}

LlamaLM LoadLlamaFolder(const std::string& dir) {
  LlamaLM model(ReadLlamaConfig(dir + "/config.json"));
  LoadLlamaWeights(model, SafetensorsFile(dir + "/model.safetensors"));
  return model;
}

}  // namespace troupe
