#include "core/models/attention.h"

#include <torch/torch.h>

#include <cmath>

#include "core/models/attention_kernel.h"

namespace troupe {

namespace {

constexpr double kMasked = kBiasMasked;

// The CPU kernels of attention_kernel.h as an autograd function: the backward
// pass recomputes the weights from each query's saved softmax statistics.
class CpuAttention : public torch::autograd::Function<CpuAttention> {
 public:
  static AttentionKernelShape Shape(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& bias) {
    AttentionKernelShape s;
    s.batch = q.size(0);
    s.q_heads = q.size(1);
    s.kv_heads = k.size(1);
    s.queries = q.size(2);
    s.keys = k.size(2);
    s.head_dim = q.size(3);
    s.bias_batch = bias.size(0);
    return s;
  }

  // q already scaled; bias [1 or B, T, Tk].
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q_in,
                               const torch::Tensor& k_in, const torch::Tensor& v_in, const torch::Tensor& bias_in) {
    const torch::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous(),
                        bias = bias_in.contiguous();
    const AttentionKernelShape s = Shape(q, k, bias);
    const torch::Tensor spans = torch::empty({s.bias_batch, s.queries, 2}, torch::kInt);
    AttentionKeySpans(s, bias.data_ptr<float>(), spans.data_ptr<int32_t>());
    torch::Tensor out = torch::empty_like(q), stats = torch::empty({s.batch, s.q_heads, s.queries, 2}, q.options());
    at::parallel_for(0, s.units(), 1, [&](int64_t begin, int64_t end) {
      AttentionForwardUnits(s, q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), bias.data_ptr<float>(),
                            spans.data_ptr<int32_t>(), out.data_ptr<float>(), stats.data_ptr<float>(), begin, end);
    });
    ctx->save_for_backward({q, k, v, bias, spans, out, stats});
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &bias = saved[3], &spans = saved[4],
                        &out = saved[5], &stats = saved[6];
    const torch::Tensor d_out = grads[0].contiguous();
    const AttentionKernelShape s = Shape(q, k, bias);
    torch::Tensor d_q = torch::empty_like(q), d_k = torch::empty_like(k), d_v = torch::empty_like(v);
    at::parallel_for(0, s.units(), 1, [&](int64_t begin, int64_t end) {
      AttentionBackwardUnits(s, q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), bias.data_ptr<float>(),
                             spans.data_ptr<int32_t>(), out.data_ptr<float>(), stats.data_ptr<float>(),
                             d_out.data_ptr<float>(), d_q.data_ptr<float>(), d_k.data_ptr<float>(),
                             d_v.data_ptr<float>(), begin, end);
    });
    return {d_q, d_k, d_v, torch::Tensor()};
  }
};

// Whether the CPU kernels can take these: float32 on the CPU, an additive bias
// of one row of keys per query for one or every sequence, whole groups of heads.
bool CpuKernelsCanTake(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       const torch::Tensor& mask) {
  auto cpu_float = [](const torch::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == torch::kFloat; };
  const int64_t B = q.size(0), T = q.size(2), Tk = k.size(2);
  return cpu_float(q) && cpu_float(k) && cpu_float(v) && cpu_float(mask) && !mask.requires_grad() && q.dim() == 4 &&
         mask.dim() == 4 && (mask.size(0) == 1 || mask.size(0) == B) && mask.size(1) == 1 && mask.size(2) == T &&
         mask.size(3) == Tk && q.size(1) % k.size(1) == 0;
}

}  // namespace

torch::Tensor AttentionBias(const torch::Tensor& allowed) {
  return torch::zeros(allowed.sizes(), torch::TensorOptions().dtype(torch::kFloat).device(allowed.device()))
      .masked_fill_(allowed.logical_not(), kMasked);
}

torch::Tensor MaskedAttentionWeights(const torch::Tensor& scores, const torch::Tensor& mask) {
  // A bias is float32, so the sum is float32 whatever the scores' type.
  const torch::Tensor masked = mask.scalar_type() == torch::kBool
                                   ? scores.to(torch::kFloat).masked_fill(mask.logical_not(), kMasked)
                                   : scores + mask;
  return torch::softmax(masked, -1).to(scores.scalar_type());
}

torch::Tensor ComposedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& mask, torch::Tensor* weights) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), dh = q.size(3), KV = k.size(1), Tk = k.size(2);
  // Each key/value head serves `group` consecutive query heads: those heads'
  // queries are stacked as one longer query block of their key/value head, so
  // the keys and values are never copied per query head.
  const int64_t group = H / KV;
  const torch::Tensor scores = (q / std::sqrt(static_cast<double>(dh)))
                                   .reshape({B, KV, group * T, dh})
                                   .matmul(k.transpose(-2, -1))
                                   .view({B, H, T, Tk});
  const torch::Tensor att = MaskedAttentionWeights(scores, mask);
  if (weights != nullptr) *weights = att;
  return att.view({B, KV, group * T, Tk}).matmul(v).view({B, H, T, dh});
}

torch::Tensor KernelAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& mask) {
  TORCH_CHECK(CpuKernelsCanTake(q, k, v, mask),
              "the CPU attention kernels take float32 CPU tensors and an additive bias [B or 1, 1, T, Tk]");
  const torch::Tensor scaled = q / std::sqrt(static_cast<double>(q.size(3)));
  return CpuAttention::apply(scaled, k, v, mask.squeeze(1));
}

torch::Tensor Attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask) {
  if (q.size(3) <= kKernelAttentionMaxHeadDim && CpuKernelsCanTake(q, k, v, mask)) {
    return KernelAttention(q, k, v, mask);
  }
  return ComposedAttention(q, k, v, mask);
}

}  // namespace troupe
