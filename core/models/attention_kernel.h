// Softmax attention of small heads on the CPU, one (sequence, key/value head)
// at a time, with every intermediate in a few kilobytes of scratch.
//
// Composed of LibTorch operators, attention materialises a [B, H, T, Tk]
// tensor for the scores, another for the weights, and two more in the
// backward pass; with the heads of troupe's own models (8-32 wide) those
// passes over fresh memory, not the arithmetic, are the cost. These kernels
// read q, k and v once, keep a query's scores in a row buffer, save only each
// query's softmax statistics for the backward pass (which recomputes the weights, as
// FlashAttention does), and skip keys outside each query's allowed span.
// Torch-free: plain contiguous float32 arrays, so it compiles in a second.
#pragma once

#include <cstdint>

namespace troupe {

struct AttentionKernelShape {
  int64_t batch = 0;
  int64_t q_heads = 0;  // a multiple of kv_heads: query head h reads key/value head h / (q_heads / kv_heads)
  int64_t kv_heads = 0;
  int64_t queries = 0;  // T
  int64_t keys = 0;     // Tk
  int64_t head_dim = 0;
  int64_t bias_batch = 0;  // 1 (one bias for every sequence) or batch
  int64_t units() const { return batch * kv_heads; }
};

// Layouts, all contiguous: q, out, d_out, d_q [batch, q_heads, queries, head_dim];
// k, v, d_k, d_v [batch, kv_heads, keys, head_dim]; bias [bias_batch, queries, keys],
// added to the (already scaled) scores, with entries at or below kBiasMasked/2
// counted as masked; spans [bias_batch, queries, 2], each query's first and
// one-past-last unmasked key (the whole row if none is); stats [batch, q_heads, queries, 2],
// each query's largest score and the sum of exp(score - largest) (kept apart rather
// than as one log-sum-exp, which a row of masked scores near -1e9 would round away).
constexpr float kBiasMasked = -1e9f;

// Fills `spans` from `bias`.
void AttentionKeySpans(const AttentionKernelShape& shape, const float* bias, int32_t* spans);

// Units are (sequence, key/value head) pairs, numbered b * kv_heads + g; a call
// handles units [begin, end), so callers may split them across threads.
void AttentionForwardUnits(const AttentionKernelShape& shape, const float* q, const float* k, const float* v,
                           const float* bias, const int32_t* spans, float* out, float* stats, int64_t begin,
                           int64_t end);

// Gradients of the forward pass above for units [begin, end); d_q, d_k and d_v
// are written, not accumulated.
void AttentionBackwardUnits(const AttentionKernelShape& shape, const float* q, const float* k, const float* v,
                            const float* bias, const int32_t* spans, const float* out, const float* stats,
                            const float* d_out, float* d_q, float* d_k, float* d_v, int64_t begin, int64_t end);

}  // namespace troupe
