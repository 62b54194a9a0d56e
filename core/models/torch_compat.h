// What differs between the LibTorch versions troupe builds against: Debian 12's
// 1.13 (the CPU build every test runs on) and PyTorch 2.x's bundled LibTorch
// (the CUDA build). Only code under core/models includes it; each shim is the
// newer API's shape, answered by the older one where that is what is there.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#define TROUPE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace troupe::torch_compat {

// Autocast's per-device switches and dtypes. LibTorch 2.4 made them one API
// keyed by device type and deprecated the per-device functions of 1.x.
inline bool IsAutocastEnabled(c10::DeviceType device) {
#if TROUPE_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void SetAutocastEnabled(c10::DeviceType device, bool enabled) {
#if TROUPE_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

inline at::ScalarType AutocastDtype(c10::DeviceType device) {
#if TROUPE_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void SetAutocastDtype(c10::DeviceType device, at::ScalarType dtype) {
#if TROUPE_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

// Fused attention (FlashAttention / memory-efficient kernels on CUDA, a fused
// loop on CPU) arrived in LibTorch 2.0; grouped key/value heads in 2.5.
constexpr bool kHasFusedAttention = TROUPE_TORCH_AT_LEAST(2, 5);

// softmax(q k^T / sqrt(d) masked by `allowed`) v for q [B, H, T, d] and k, v
// [B, KV, Tk, d] with H a multiple of KV (each key/value head serves H/KV
// consecutive query heads); `allowed` [B, 1, T, Tk] is true where a query may
// look, or undefined for the plain causal mask (T == Tk). Only where
// kHasFusedAttention; callers keep their own path otherwise.
inline torch::Tensor FusedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& allowed) {
#if TROUPE_TORCH_AT_LEAST(2, 5)
  const bool causal = !allowed.defined();
  return at::scaled_dot_product_attention(q, k, v, causal ? std::optional<at::Tensor>() : std::optional<at::Tensor>(allowed),
                                          0.0, causal, std::nullopt, q.size(1) != k.size(1));
#else
  (void)q, (void)k, (void)v, (void)allowed;
  TORCH_CHECK(false, "fused attention needs LibTorch 2.5 or newer");
#endif
}

}  // namespace troupe::torch_compat
