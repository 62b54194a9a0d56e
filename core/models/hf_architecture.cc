// Hugging Face folders in checkpoints and as starting points, for every
// architecture that has one.
#include "core/models/hf_architecture.h"

#include <cstdint>
#include <filesystem>
#include <functional>

#include "core/base/errors.h"
#include "core/models/module_tensors.h"
#include "core/safetensors.h"

namespace troupe {

namespace {

std::string ModelDir(const ModelConfig& c, const std::string& dir) { return dir + "/model-" + c.name; }

// A model that reads text carries its tokenizer (tokenizer.json and, when one
// sits beside it, tokenizer_config.json), so the folder is whole on its own.
void CopyTokenizerFiles(const std::string& tokenizer_json, const std::string& folder) {
  if (tokenizer_json.empty()) return;
  namespace fs = std::filesystem;
  const fs::path from(tokenizer_json);
  const fs::path config = from.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  fs::copy_file(from, fs::path(folder) / "tokenizer.json", fs::copy_options::overwrite_existing, ec);
  if (!ec && fs::exists(config)) {
    fs::copy_file(config, fs::path(folder) / "tokenizer_config.json", fs::copy_options::overwrite_existing, ec);
  }
  if (ec)
    throw CheckpointError("cannot copy the tokenizer " + tokenizer_json + " into " + folder + ": " + ec.message());
}

}  // namespace

void HfArchitecture::LoadFieldWeights(PolicyModelImpl& model, const SafetensorsModel& weights) const {
  ReadParameters(
      model, [&](const std::string& name) { return IsFieldParameter(name); },
      [&](const std::string& parameter) -> std::pair<const SafetensorsFile*, std::string> {
        const std::vector<std::string> names = FileNames(parameter);
        for (const std::string& name : names) {
          if (weights.Has(name)) return {&weights.FileOf(name), name};
        }
        return {&weights.FileOf(names.front()), names.front()};  // throws, naming the tensor
      });
}

void HfArchitecture::ReadHfWeights(PolicyModelImpl& model, const std::string& dir) const {
  LoadFieldWeights(model, SafetensorsModel(dir));
}

PolicyModel HfArchitecture::Build(const ModelConfig& c) const {
  if (c.role_heads) {
    throw ModelError("model '" + c.name + "': the " + ArchitectureSpecOf(c.spec).name() +
                     " architecture has no per-role heads; use lora");
  }
  if (c.hf_dir.empty()) return BuildFresh(c);
  // The workflow took its sizes from the folder when it was compiled; the
  // folder must still hold that model.
  config::ModelSpec folder;
  folder.set_name(c.name);
  const int64_t vocab = ReadHfFolderConfig(c.hf_dir, &folder);
  const ModelSizes have = ArchitectureSpecOf(folder).Sizes(folder), want = ArchitectureSpecOf(c.spec).Sizes(c.spec);
  if (vocab != c.vocab_size || have.width != want.width || have.max_len < want.max_len) {
    throw ModelError("model '" + c.name + "': " + c.hf_dir + " holds a model of vocabulary " + std::to_string(vocab) +
                     " and width " + std::to_string(have.width) + "; the workflow expected " +
                     std::to_string(c.vocab_size) + " and " + std::to_string(want.width));
  }
  PolicyModel model = BuildFresh(c);
  ReadHfWeights(*model, c.hf_dir);
  return model;
}

void HfArchitecture::WriteHfFolder(PolicyModelImpl& model, const ModelConfig& c, const std::string& dir, bool bf16,
                                   size_t max_shard_bytes) const {
  std::filesystem::create_directories(dir);
  std::vector<torch::Tensor> keep;
  auto field = [&](const std::string& name) { return IsFieldParameter(name); };
  WriteSafetensorsModel(dir, ParametersToWrite(model, bf16, field, &keep), {{"format", "pt"}}, max_shard_bytes);
  WriteHfFolderConfig(c.spec, model.vocab_size(), dir, bf16 ? "bfloat16" : "float32");
}

void HfArchitecture::Save(PolicyModelImpl& model, const ModelConfig& c, const std::string& dir) const {
  const std::string folder = ModelDir(c, dir);
  WriteHfFolder(model, c, folder);
  std::vector<torch::Tensor> keep;
  auto own = [&](const std::string& name) { return !IsFieldParameter(name); };
  WriteSafetensors(folder + "/troupe.safetensors", ParametersToWrite(model, false, own, &keep), {{"format", "pt"}});
  CopyTokenizerFiles(c.tokenizer_json, folder);
}

void HfArchitecture::Load(PolicyModel& model, const ModelConfig& c, const std::string& dir, torch::Device) const {
  const std::string folder = ModelDir(c, dir);
  if (!std::filesystem::exists(folder)) throw CheckpointError("checkpoint lacks model folder " + folder);
  LoadFieldWeights(*model, SafetensorsModel(folder));
  const SafetensorsFile own(folder + "/troupe.safetensors");
  ReadParameters(
      *model, [&](const std::string& name) { return !IsFieldParameter(name); },
      [&](const std::string& name) -> std::pair<const SafetensorsFile*, std::string> {
        return {&own, name};
      });
}

}  // namespace troupe
