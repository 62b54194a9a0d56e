// The parts every policy architecture shares: LoRA adapters, the latent
// projection of hybrid messages and the K latent steps that send vectors.
#include "core/models/policy_model.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <cstdint>
#include <mutex>

#include "core/base/errors.h"
#include "core/models/torch_compat.h"

namespace troupe {

torch::Tensor AttentionMask(const torch::Tensor& key_valid, int64_t T) {
  if (key_valid.dim() == 3) return key_valid.unsqueeze(1);  // already a query-by-key mask
  const int64_t Tk = key_valid.size(1);
  if (T == 1) {  // decoding: the single query is the last position
    torch::Tensor allowed = key_valid.clone();
    allowed.select(1, Tk - 1).fill_(true);
    return allowed.unsqueeze(1).unsqueeze(1);
  }
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(key_valid.device());
  const torch::Tensor qi = torch::arange(Tk - T, Tk, opts).view({T, 1});
  const torch::Tensor kj = torch::arange(Tk, opts).view({1, Tk});
  return ((kj.le(qi).unsqueeze(0) & key_valid.unsqueeze(1)) | kj.eq(qi).unsqueeze(0)).unsqueeze(1);
}

namespace {

// Autocast to bfloat16 on `device` for the guard's life (as PyTorch's
// `torch.autocast(device, dtype=torch.bfloat16)`): matrix products run in
// bfloat16, the parameters stay float32. Restores what it found, and drops
// autocast's cached casts of the weights when the outermost guard ends (they
// would be stale after the next optimiser step).
class Bf16Autocast {
 public:
  Bf16Autocast(bool on, const torch::Device& device) : on_(on), device_(device.type()) {
    if (!on_) return;
    was_enabled_ = torch_compat::IsAutocastEnabled(device_);
    was_dtype_ = torch_compat::AutocastDtype(device_);
    torch_compat::SetAutocastEnabled(device_, true);
    torch_compat::SetAutocastDtype(device_, at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~Bf16Autocast() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    torch_compat::SetAutocastEnabled(device_, was_enabled_);
    torch_compat::SetAutocastDtype(device_, was_dtype_);
  }
  Bf16Autocast(const Bf16Autocast&) = delete;
  Bf16Autocast& operator=(const Bf16Autocast&) = delete;

 private:
  bool on_;
  c10::DeviceType device_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

torch::Tensor AsFloat(const torch::Tensor& t) {
  return t.defined() && t.scalar_type() != torch::kFloat ? t.to(torch::kFloat) : t;
}

}  // namespace

LMOutput PolicyModelImpl::forward_hidden(const torch::Tensor& embeds, const torch::Tensor& positions,
                                         const torch::Tensor& key_valid, const torch::Tensor& role, KvCache* cache,
                                         bool all_layers) {
  if (!bf16_) return forward_blocks(embeds, positions, key_valid, role, cache, all_layers);
  LMOutput out;
  {
    Bf16Autocast autocast(true, embeds.device());
    out = forward_blocks(embeds, positions, key_valid, role, cache, all_layers);
  }
  out.hidden = AsFloat(out.hidden);
  out.values = AsFloat(out.values);
  for (auto& layer : out.layers) layer = AsFloat(layer);
  return out;
}

void PolicyModelImpl::keep_attention(int64_t /*layer*/, int64_t /*head*/) {
  throw ModelError("this architecture does not expose its attention weights (guided attention needs a llama model)");
}

torch::Tensor PolicyModelImpl::kept_attention(int64_t /*layer*/) const {
  throw ModelError("this architecture does not expose its attention weights (guided attention needs a llama model)");
}

torch::Tensor PolicyModelImpl::kept_writes(int64_t /*layer*/, bool /*through_stream*/) const {
  throw ModelError("this architecture does not expose its attention heads' outputs (guided attention needs a llama model)");
}

torch::Tensor PolicyModelImpl::direct_logits(const torch::Tensor& /*written*/, const torch::Tensor& /*stream*/) {
  throw ModelError("this architecture does not read logits from parts of its residual stream (guided attention needs a llama model)");
}

torch::Tensor LoraDelta(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b,
                        const torch::Tensor& role) {
  return x.bmm(a.index_select(0, role)).bmm(b.index_select(0, role));
}

RoleLoraImpl::RoleLoraImpl(int64_t in, int64_t out, int64_t num_roles, int64_t rank) {
  a = register_parameter("a", torch::randn({num_roles, in, rank}) / std::sqrt(static_cast<double>(in)));
  b = register_parameter("b", torch::zeros({num_roles, rank, out}));
}

RoleLora MaybeRoleLora(torch::nn::Module& owner, const char* name, int64_t in, int64_t out, int64_t num_roles,
                       int64_t rank) {
  if (rank <= 0) return RoleLora(nullptr);
  return owner.register_module(name, RoleLora(in, out, num_roles, rank));
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

void PolicyModelImpl::register_latent_parts(const TroupeParts& parts) {
  const int64_t d = width(), in_width = parts.latent_in_width();
  if (parts.latent()) latent_proj_ = register_module("latent_proj", LatentProjection(d, 2 * d));
  if (in_width > 0 && in_width != d) latent_in_ = register_module("latent_in", torch::nn::Linear(in_width, d));
}

torch::Tensor PolicyModelImpl::project_latent(const torch::Tensor& h) { return latent_projection().forward(h); }

torch::Tensor PolicyModelImpl::adapt_latent(const torch::Tensor& z) {
  const int64_t w = z.size(-1);
  if (w == width()) return z;
  TORCH_CHECK(!latent_in_.is_empty() && w == latent_in_->options.in_features(), "latent vectors of width ", w,
              " reach a model of width ", width(), " that has no adapter for them");
  return latent_in_(z);
}

LatentStepsOutput PolicyModelImpl::send_latents(
    torch::Tensor h, int64_t K, const std::function<std::pair<torch::Tensor, torch::Tensor>(int64_t)>& at,
    const torch::Tensor& role, KvCache* cache) {
  LatentStepsOutput out;
  for (int64_t j = 0; j < K; ++j) {
    torch::Tensor z = project_latent(h);
    const auto [positions, keys] = at(j);
    out.steps.push_back(forward_hidden(z.unsqueeze(1), positions, keys, role, cache));  // no logits: none reads them
    out.z.push_back(z);
    h = out.steps.back().hidden.select(1, 0);
  }
  return out;
}

LatentProjectionImpl& PolicyModelImpl::latent_projection() {
  TORCH_CHECK(!latent_proj_.is_empty(), "this model has no latent projection (hybrid messages are off)");
  return *latent_proj_;
}

void PolicyModelImpl::set_latent_dropout(bool on) {
  if (!latent_proj_.is_empty()) latent_proj_->train(on);
}

void CopyParameters(PolicyModelImpl& from, PolicyModelImpl& to) {
  torch::NoGradGuard no_grad;
  auto source = from.named_parameters();
  for (auto& item : to.named_parameters()) item.value().copy_(source[item.key()]);
  auto buffers = from.named_buffers();
  for (auto& item : to.named_buffers()) item.value().copy_(buffers[item.key()]);
}

}  // namespace troupe
