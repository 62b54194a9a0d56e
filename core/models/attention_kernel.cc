// The loops are written so that the compiler vectorises them: every inner
// loop runs along contiguous memory without a loop-carried dependence, or is a
// reduction marked `omp simd` (this file is compiled with -fopenmp-simd, which
// needs no OpenMP runtime, and -fno-trapping-math, so that choices between
// values compile to vector blends rather than branches). On x86-64 each entry point is cloned for AVX-512,
// AVX2 + FMA and the baseline, chosen when the program loads.
#include "core/models/attention_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TROUPE_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TROUPE_CPU_CLONES
#endif
// The passes are inlined into each clone, so that they compile for its instruction set.
#define TROUPE_INLINE inline __attribute__((always_inline))

namespace troupe {

namespace {

// exp(x) for the x <= 0 a softmax meets (it is also right a little above 0):
// Cephes' single-precision exp (range reduction by ln 2 in two parts, then a
// degree-6 polynomial, relative error about 1e-7), and exactly 0 below -87, as
// float's own exp underflows to 0 for the masked scores near -1e9. Branch-free,
// so loops of it vectorise.
TROUPE_INLINE float ExpNonPositive(float x) {
  const float xc = x < -87.0f ? -87.0f : x;
  const float n = __builtin_floorf(xc * 1.44269504088896341f + 0.5f);  // the nearest integer
  const float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const float value = y * __builtin_bit_cast(float, (static_cast<int32_t>(n) + 127) << 23);
  return x < -87.0f ? 0.0f : value;  // a choice between two values computed either way: no branch
}

// Per-thread scratch for one unit: its keys and values and their gradients
// transposed ([d][j], so that every loop runs along the keys, in memory order,
// and none waits on the one before), and one query's rows of scores.
struct UnitScratch {
  std::vector<float> keys_t, values_t, d_keys_t, d_values_t, scores, grads;
  explicit UnitScratch(const AttentionKernelShape& s)
      : keys_t(s.head_dim * s.keys),
        values_t(s.head_dim * s.keys),
        d_keys_t(s.head_dim * s.keys),
        d_values_t(s.head_dim * s.keys),
        scores(s.keys),
        grads(s.keys) {}
};

TROUPE_INLINE void Transpose(const float* rows, int64_t n, int64_t d, float* out) {  // [n][d] -> [d][n]
  for (int64_t j = 0; j < n; ++j)
    for (int64_t e = 0; e < d; ++e) out[e * n + j] = rows[j * d + e];
}

// out[j] = base[j] (0 without one) + sum over e of x[e] * rows_t[e][j], for j
// in [lo, hi): a query's scores (x the query, rows_t its keys, base the bias) or
// its weights' gradient (x the output's gradient, rows_t the values). Blocks of
// 32 keys stay in registers while the head's width is summed.
template <int64_t DH>
TROUPE_INLINE void RowTimesMatrix(const float* x, const float* rows_t, const float* base, int64_t Tk,
                                  int64_t dh_runtime, int64_t lo, int64_t hi, float* out) {
  const int64_t dh = DH > 0 ? DH : dh_runtime;
  constexpr int64_t kBlock = 32;
  int64_t j = lo;
  for (; j + kBlock <= hi; j += kBlock) {
    float acc[kBlock];
    for (int64_t l = 0; l < kBlock; ++l) acc[l] = base != nullptr ? base[j + l] : 0.0f;
    for (int64_t e = 0; e < dh; ++e) {
      const float xe = x[e];
      const float* row = rows_t + e * Tk + j;
      for (int64_t l = 0; l < kBlock; ++l) acc[l] += xe * row[l];
    }
    for (int64_t l = 0; l < kBlock; ++l) out[j + l] = acc[l];
  }
  for (int64_t r = j; r < hi; ++r) out[r] = base != nullptr ? base[r] : 0.0f;
  for (int64_t e = 0; e < dh; ++e) {
    const float xe = x[e];
    const float* row = rows_t + e * Tk;
#pragma omp simd
    for (int64_t r = j; r < hi; ++r) out[r] += xe * row[r];
  }
}

// out[e] = sum over j in [lo, hi) of w[j] * rows_t[e][j] (rows_t [dh][Tk], the
// keys or values transposed): a query's output from its weights and the values,
// or its gradient from the scores' gradient and the keys.
template <int64_t DH>
TROUPE_INLINE void WeightedRowSum(const float* w, const float* rows_t, int64_t Tk, int64_t dh_runtime, int64_t lo,
                                  int64_t hi, float* out) {
  const int64_t dh = DH > 0 ? DH : dh_runtime;
  for (int64_t e = 0; e < dh; ++e) {
    const float* row = rows_t + e * Tk;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = lo; j < hi; ++j) sum += w[j] * row[j];
    out[e] = sum;
  }
}

// rows_t[e][j] += x[e] * w[j] for j in [lo, hi): the keys' and values'
// gradients, transposed.
template <int64_t DH>
TROUPE_INLINE void AddOuter(const float* w, const float* x, int64_t Tk, int64_t dh_runtime, int64_t lo, int64_t hi,
                            float* rows_t) {
  const int64_t dh = DH > 0 ? DH : dh_runtime;
  for (int64_t e = 0; e < dh; ++e) {
    const float xe = x[e];
    float* row = rows_t + e * Tk;
#pragma omp simd
    for (int64_t j = lo; j < hi; ++j) row[j] += xe * w[j];
  }
}

constexpr int64_t kSpanAlign = 16;  // floats in the widest vector (AVX-512)

}  // namespace

void AttentionKeySpans(const AttentionKernelShape& s, const float* bias, int32_t* spans) {
  for (int64_t r = 0; r < s.bias_batch * s.queries; ++r) {
    const float* row = bias + r * s.keys;
    int64_t lo = 0, hi = s.keys;
    while (lo < s.keys && row[lo] <= kBiasMasked / 2) ++lo;
    while (hi > lo && row[hi - 1] <= kBiasMasked / 2) --hi;
    if (lo == hi) lo = 0, hi = s.keys;  // nothing allowed: the whole row, as the composed softmax sees it
    // Whole vectors: spans start and end at multiples of kSpanAlign keys (or at
    // the row's end). The keys this adds are masked, so they weigh exactly 0.
    lo -= lo % kSpanAlign;
    hi = std::min<int64_t>(s.keys, (hi + kSpanAlign - 1) / kSpanAlign * kSpanAlign);
    spans[2 * r] = static_cast<int32_t>(lo);
    spans[2 * r + 1] = static_cast<int32_t>(hi);
  }
}

namespace {

// Units [begin, end): for each, start(unit), then query(head, i, row, lo, hi)
// for each query i of each of its query heads (`head` numbered over the batch,
// `row` the query's row of the bias and spans, [lo, hi) its span of keys),
// then finish(unit).
template <typename Start, typename Query, typename Finish>
TROUPE_INLINE void ForEachQuery(const AttentionKernelShape& s, const int32_t* spans, int64_t begin, int64_t end,
                                Start&& start, Query&& query, Finish&& finish) {
  const int64_t T = s.queries, group = s.q_heads / s.kv_heads;
  for (int64_t unit = begin; unit < end; ++unit) {
    const int64_t b = unit / s.kv_heads, g = unit % s.kv_heads;
    start(unit);
    const int64_t bias_b = s.bias_batch == 1 ? 0 : b;
    for (int64_t h = g * group; h < (g + 1) * group; ++h) {
      for (int64_t i = 0; i < T; ++i) {
        const int64_t row = bias_b * T + i;
        query(b * s.q_heads + h, i, row, int64_t{spans[2 * row]}, int64_t{spans[2 * row + 1]});
      }
    }
    finish(unit);
  }
}

// The passes for heads of width DH, known when compiled (0: s.head_dim at run
// time), so that the loops over a head's width unroll into whole vectors.
template <int64_t DH>
TROUPE_INLINE void ForwardUnits(const AttentionKernelShape& s, const float* q, const float* k, const float* v,
                                const float* bias, const int32_t* spans, float* out, float* stats, int64_t begin,
                                int64_t end) {
  const int64_t T = s.queries, Tk = s.keys, dh = DH > 0 ? DH : s.head_dim;
  UnitScratch scratch(s);
  float* scores = scratch.scores.data();
  const auto start = [&](int64_t unit) __attribute__((always_inline)) {
    Transpose(k + unit * Tk * dh, Tk, dh, scratch.keys_t.data());
    Transpose(v + unit * Tk * dh, Tk, dh, scratch.values_t.data());
  };
  const auto query = [&](int64_t head, int64_t i, int64_t row, int64_t lo, int64_t hi) __attribute__((always_inline)) {
    const float* qi = q + (head * T + i) * dh;
    RowTimesMatrix<DH>(qi, scratch.keys_t.data(), bias + row * Tk, Tk, dh, lo, hi, scores);
    float m = scores[lo];
#pragma omp simd reduction(max : m)
    for (int64_t j = lo; j < hi; ++j) {
      const float x = scores[j];
      m = x > m ? x : m;
    }
    float total = 0.0f;
#pragma omp simd reduction(+ : total)
    for (int64_t j = lo; j < hi; ++j) {
      scores[j] = ExpNonPositive(scores[j] - m);
      total += scores[j];
    }
    float* o = out + (head * T + i) * dh;
    WeightedRowSum<DH>(scores, scratch.values_t.data(), Tk, dh, lo, hi, o);
    const float inv = 1.0f / total;
    for (int64_t e = 0; e < dh; ++e) o[e] *= inv;
    stats[2 * (head * T + i)] = m;
    stats[2 * (head * T + i) + 1] = total;
  };
  ForEachQuery(s, spans, begin, end, start, query, [](int64_t) {});
}

template <int64_t DH>
TROUPE_INLINE void BackwardUnits(const AttentionKernelShape& s, const float* q, const float* k, const float* v,
                                 const float* bias, const int32_t* spans, const float* out, const float* stats,
                                 const float* d_out, float* d_q, float* d_k, float* d_v, int64_t begin, int64_t end) {
  const int64_t T = s.queries, Tk = s.keys, dh = DH > 0 ? DH : s.head_dim;
  UnitScratch scratch(s);
  float* probs = scratch.scores.data();
  float* grads = scratch.grads.data();
  const auto start = [&](int64_t unit) __attribute__((always_inline)) {
    Transpose(k + unit * Tk * dh, Tk, dh, scratch.keys_t.data());
    Transpose(v + unit * Tk * dh, Tk, dh, scratch.values_t.data());
    std::fill(scratch.d_keys_t.begin(), scratch.d_keys_t.end(), 0.0f);
    std::fill(scratch.d_values_t.begin(), scratch.d_values_t.end(), 0.0f);
  };
  const auto finish = [&](int64_t unit) __attribute__((always_inline)) {
    Transpose(scratch.d_keys_t.data(), dh, Tk, d_k + unit * Tk * dh);
    Transpose(scratch.d_values_t.data(), dh, Tk, d_v + unit * Tk * dh);
  };
  const auto query = [&](int64_t head, int64_t i, int64_t row, int64_t lo, int64_t hi) __attribute__((always_inline)) {
    const int64_t at = (head * T + i) * dh;
    const float* qi = q + at;
    const float* doi = d_out + at;
    // The weights again, from the saved statistics, exactly as the forward pass had them.
    RowTimesMatrix<DH>(qi, scratch.keys_t.data(), bias + row * Tk, Tk, dh, lo, hi, probs);
    const float m = stats[2 * (head * T + i)], inv = 1.0f / stats[2 * (head * T + i) + 1];
#pragma omp simd
    for (int64_t j = lo; j < hi; ++j) probs[j] = ExpNonPositive(probs[j] - m) * inv;
    // d weights = d_out . v_j; through the softmax: p_j (dp_j - d_out . out).
    float delta = 0.0f;
    for (int64_t e = 0; e < dh; ++e) delta += doi[e] * out[at + e];
    RowTimesMatrix<DH>(doi, scratch.values_t.data(), nullptr, Tk, dh, lo, hi, grads);
#pragma omp simd
    for (int64_t j = lo; j < hi; ++j) grads[j] = probs[j] * (grads[j] - delta);
    WeightedRowSum<DH>(grads, scratch.keys_t.data(), Tk, dh, lo, hi, d_q + at);
    AddOuter<DH>(grads, qi, Tk, dh, lo, hi, scratch.d_keys_t.data());
    AddOuter<DH>(probs, doi, Tk, dh, lo, hi, scratch.d_values_t.data());
  };
  ForEachQuery(s, spans, begin, end, start, query, finish);
}

}  // namespace

#define TROUPE_BY_HEAD_WIDTH(CALL) \
  switch (s.head_dim) {            \
    case 8: CALL(8); break;        \
    case 16: CALL(16); break;      \
    case 32: CALL(32); break;      \
    case 64: CALL(64); break;      \
    case 128: CALL(128); break;    \
    default: CALL(0); break;       \
  }

TROUPE_CPU_CLONES
void AttentionForwardUnits(const AttentionKernelShape& s, const float* q, const float* k, const float* v,
                           const float* bias, const int32_t* spans, float* out, float* stats, int64_t begin,
                           int64_t end){
#define TROUPE_FORWARD(W) ForwardUnits<W>(s, q, k, v, bias, spans, out, stats, begin, end)
    TROUPE_BY_HEAD_WIDTH(TROUPE_FORWARD)
#undef TROUPE_FORWARD
}

TROUPE_CPU_CLONES
    void AttentionBackwardUnits(const AttentionKernelShape& s, const float* q, const float* k, const float* v,
                                const float* bias, const int32_t* spans, const float* out, const float* stats,
                                const float* d_out, float* d_q, float* d_k, float* d_v, int64_t begin, int64_t end) {
#define TROUPE_BACKWARD(W) BackwardUnits<W>(s, q, k, v, bias, spans, out, stats, d_out, d_q, d_k, d_v, begin, end)
  TROUPE_BY_HEAD_WIDTH(TROUPE_BACKWARD)
#undef TROUPE_BACKWARD
}

}  // namespace troupe
