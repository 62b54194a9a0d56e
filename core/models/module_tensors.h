// Modules' parameters and AdamW's state as safetensors files: what troupe's
// checkpoints hold. Read by troupe's own checked reader (core/safetensors.h,
// fuzzed), never by LibTorch's archive importer, which crashes on crafted
// files (fuzz/known_crashes_libtorch_importer_segv.pt); every tensor is checked
// against the shape the module or the optimiser needs.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "core/safetensors.h"

namespace troupe {

using ParameterFilter = std::function<bool(const std::string&)>;
// The file and tensor name a parameter is read from.
using ParameterSource = std::function<std::pair<const SafetensorsFile*, std::string>(const std::string&)>;

// The parameters `wanted` selects, as float32 (or bfloat16) tensors to write;
// `keep` holds the contiguous CPU copies they point into.
std::vector<SafetensorsTensor> ParametersToWrite(torch::nn::Module& module, bool bf16, const ParameterFilter& wanted,
                                                 std::vector<torch::Tensor>* keep);
// Copies each parameter `wanted` selects from the tensor `source` names,
// checked against its shape (CheckpointError naming the file and the tensor).
void ReadParameters(torch::nn::Module& module, const ParameterFilter& wanted, const ParameterSource& source);

// Every parameter of `module` into one safetensors file, and back: the file
// must hold exactly the module's parameters, in their shapes.
void SaveModuleTensors(torch::nn::Module& module, const std::string& path);
void LoadModuleTensors(torch::nn::Module& module, const std::string& path);

// AdamW's state (each parameter's moments and step, each group's learning
// rate), parameters in the optimiser's order, and back: the file must match
// the optimiser's groups and parameter shapes.
void SaveAdamW(torch::optim::AdamW& optimizer, const std::string& path);
void LoadAdamW(torch::optim::AdamW& optimizer, const std::string& path);

// A random generator's state (LibTorch's byte tensor) as a text file of hex
// digits, and back: the file must hold as many bytes as `like` (the state of
// the generator it is loaded into).
void SaveGeneratorState(const torch::Tensor& state, const std::string& path);
torch::Tensor LoadGeneratorState(const std::string& path, const torch::Tensor& like);

}  // namespace troupe
