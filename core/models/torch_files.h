// LibTorch archives (.pt) as checkpoints held them before troupe wrote
// safetensors (core/models/module_tensors.h): still read, for older runs.
// Every LibTorch failure (a file that is not an archive, a missing key, a
// tensor of another shape) becomes a CheckpointError naming the file.
// LibTorch's importer itself crashes on crafted archives (found by
// fuzz/fuzz_torch_archive.cc): load .pt files only from sources you trust.
#pragma once

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include <torch/torch.h>

#include "core/base/errors.h"

namespace troupe {

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

// Loads `stem`.safetensors through `load`, or, in a checkpoint an older troupe
// wrote (`stem`.pt and no `stem`.safetensors), `stem`.pt through LoadTorchFile.
template <typename T, typename LoadSafetensors>
void LoadSafetensorsOrOlder(T& value, const std::string& stem, const LoadSafetensors& load,
                            std::optional<torch::Device> device = std::nullopt) {
  if (std::filesystem::exists(stem + ".pt") && !std::filesystem::exists(stem + ".safetensors")) {
    LoadTorchFile(value, stem + ".pt", device);
  } else {
    load(stem + ".safetensors");
  }
}

}  // namespace troupe
