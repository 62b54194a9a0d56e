#include "core/models/attention.h"

#include <torch/torch.h>

namespace troupe {

namespace {
constexpr double kMasked = -1e9;
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

}  // namespace troupe
