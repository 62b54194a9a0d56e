// The CUDA device counter that the models library installs.
#include "core/device_support.h"

#include <utility>

namespace troupe {

namespace {
std::function<int()>& Counter() {
  static std::function<int()> counter;
  return counter;
}
}  // namespace

std::optional<int> CudaDeviceCount() {
  if (!Counter()) return std::nullopt;
  return Counter()();
}

bool SetCudaDeviceCounter(std::function<int()> counter) {
  Counter() = std::move(counter);
  return true;
}

}  // namespace troupe
