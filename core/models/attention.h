// Masked attention weights shared by the architectures' own attention paths.
// A mask is applied as an additive bias built once per forward pass: adding it
// costs one pass over a layer's [B, H, T, Tk] scores and nothing in the
// backward pass, where filling a masked copy cost a pass each way plus the
// inverted mask per layer. At the update's tree rows and pretraining's long
// sequences those passes over the scores are most of the attention's time.
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

}  // namespace troupe
