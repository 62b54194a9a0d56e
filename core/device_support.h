// How many CUDA devices the linked LibTorch can use, asked from torch-free
// code (workflow validation): the models library answers when it is linked
// (core/models/model_pool.cc); without it the answer is unknown.
#pragma once

#include <functional>
#include <optional>

namespace troupe {

// The CUDA devices this build can use; nullopt when no LibTorch is linked.
std::optional<int> CudaDeviceCount();
// Installed by the library that links LibTorch, at static initialisation.
bool SetCudaDeviceCounter(std::function<int()> counter);

}  // namespace troupe
