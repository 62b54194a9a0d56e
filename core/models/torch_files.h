// LibTorch archives written through memory. torch::save to a path writes as
// it serialises, and when the disk fills it throws from a destructor, which
// ends the process (a full disk during a checkpoint must be an error, not an
// abort). Serialised into memory first, the bytes are written like any file:
// checked, synced, renamed into place, an Error naming the path when they
// cannot be.
#pragma once

#include <sstream>
#include <string>

#include <torch/torch.h>

#include "core/base/file_io.h"

namespace troupe {

template <typename T>
void SaveTorchFile(const T& value, const std::string& path) {
  std::ostringstream bytes;
  torch::save(value, bytes);
  WriteFileAtomically(path, bytes.str());
}

}  // namespace troupe
