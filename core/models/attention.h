// Attention shared by the architectures' own attention paths. A mask is
// applied as an additive bias built once per forward pass: adding it costs one
// pass over a layer's [B, H, T, Tk] scores and nothing in the backward pass,
// where filling a masked copy cost a pass each way plus the inverted mask per
// layer. Narrow heads on the CPU skip those tensors altogether (KernelAttention).
#pragma once

#include <torch/types.h>

namespace troupe {

// The additive form of a query-by-key mask (`allowed`, true where a query may
// look; as AttentionMask returns it): 0 there and -1e9 elsewhere, float32.
// A large finite number rather than -inf, so that a row seeing nothing would
// come out uniform, not NaN (every row the masks here build sees itself).
torch::Tensor AttentionBias(const torch::Tensor& allowed);

// softmax over the keys of `scores` [B, H, T, Tk] (already scaled) under
// `mask` [B, 1, T, Tk]: an AttentionBias, added, or a boolean mask, filled.
// Computed in float32 and returned in the scores' type.
torch::Tensor MaskedAttentionWeights(const torch::Tensor& scores, const torch::Tensor& mask);

// softmax(q k^T / sqrt(head_dim) + mask) v for q [B, H, T, head_dim] and k, v
// [B, KV, Tk, head_dim], H a multiple of KV (key/value head g serves query
// heads g * H/KV onwards); `mask` [B or 1, 1, T, Tk] as above. Heads of up to
// kKernelAttentionMaxHeadDim in float32 on the CPU under a bias go to
// KernelAttention; everything else to ComposedAttention.
torch::Tensor Attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask);

// The CPU kernels of attention_kernel.h, whatever the head width (float32 on
// the CPU, an additive bias): no [B, H, T, Tk] tensor is made or kept. Measured
// against ComposedAttention (bench/attention_bench.cc): faster with heads of
// width 8 (the main job's), slower from 16 on, where LibTorch's matrix
// products make better use of each pass; hence the limit.
constexpr int64_t kKernelAttentionMaxHeadDim = 8;
torch::Tensor KernelAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& mask);

// The same from LibTorch's operators, on every device and type; `weights`, when
// given, receives the attention weights [B, H, T, Tk].
torch::Tensor ComposedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& mask, torch::Tensor* weights = nullptr);

}  // namespace troupe
