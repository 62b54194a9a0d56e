// The LibTorch side of ModelPool, for core files that train or save models.
#pragma once

#include <cstdint>
#include <vector>

#include "core/models/model_pool.h"
#include "core/models/policy_model.h"
#include "core/models/prefix_cache.h"

namespace troupe {

struct ModelPool::Impl {
  std::vector<ModelConfig> configs;
  std::vector<PolicyModel> models;
  std::vector<torch::Device> devices;
  std::vector<int64_t> forward_calls;
  std::vector<int64_t> encoded_positions;
  std::vector<PrefixCache> prefixes;  // per model (GenerateQuery::cache_key)
};

// Parses "cpu" or "cuda:N"; throws ModelError when the device cannot be used.
torch::Device ParseDevice(const std::string& text);

}  // namespace troupe
