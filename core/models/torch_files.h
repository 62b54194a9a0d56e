// LibTorch archives (models, optimisers, tensors) as checkpoint files.
//
// Written through memory: torch::save to a path writes as it serialises, and
// when the disk fills it throws from a destructor, which ends the process (a
// full disk during a checkpoint must be an error, not an abort). Serialised
// into memory first, the bytes are written like any file: checked, synced,
// renamed into place, an Error naming the path when they cannot be.
//
// Read with every LibTorch failure (a file that is not an archive, a missing
// key, a tensor of another shape) turned into a CheckpointError naming the
// file; fuzz/fuzz_torch_archive.cc feeds this reader damaged archives.
#pragma once

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include <torch/torch.h>

#include "core/base/errors.h"
#include "core/base/file_io.h"

namespace troupe {

template <typename T>
void SaveTorchFile(const T& value, const std::string& path) {
  std::ostringstream bytes;
  torch::save(value, bytes);
  WriteFileAtomically(path, bytes.str());
}

namespace torch_files_detail {

// The shapes of a module's parameters and buffers, by name.
template <typename T>
std::vector<std::pair<std::string, std::vector<int64_t>>> Shapes(const T& value) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  if constexpr (std::is_base_of_v<torch::nn::Module, typename std::remove_reference_t<decltype(*value)>>) {
    for (const auto& p : value->named_parameters()) shapes.emplace_back(p.key(), p.value().sizes().vec());
    for (const auto& b : value->named_buffers()) shapes.emplace_back(b.key(), b.value().sizes().vec());
  }
  return shapes;
}

// The first line with text of a message that may start with a newline.
inline std::string FirstLine(const std::string& text) {
  size_t at = text.find_first_not_of(" \n");
  if (at == std::string::npos) return "not a LibTorch archive";
  return text.substr(at, text.find('\n', at) - at);
}

}  // namespace torch_files_detail

// Loads `path` into `value` (a module holder, an optimiser or a tensor); a
// module's parameters keep the shapes they had (LibTorch would take the
// file's in silence).
template <typename T>
void LoadTorchFile(T& value, const std::string& path, std::optional<torch::Device> device = std::nullopt) {
  if (!std::filesystem::exists(path)) throw CheckpointError("checkpoint lacks " + path);
  try {
    if constexpr (std::is_same_v<T, torch::Tensor> || std::is_base_of_v<torch::optim::Optimizer, T>) {
      torch::load(value, path, device ? c10::optional<torch::Device>(*device) : c10::nullopt);
    } else {
      const auto before = torch_files_detail::Shapes(value);
      torch::load(value, path, device ? c10::optional<torch::Device>(*device) : c10::nullopt);
      if (torch_files_detail::Shapes(value) != before) {
        throw CheckpointError("cannot load " + path + ": its tensors have other shapes than the model's");
      }
    }
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw CheckpointError("cannot load " + path + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {  // the TorchScript reader's own errors (torch::jit::ErrorReport)
    throw CheckpointError("cannot load " + path + ": " + torch_files_detail::FirstLine(e.what()));
  }
}

}  // namespace troupe
