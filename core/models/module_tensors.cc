#include "core/models/module_tensors.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/base/errors.h"
#include "core/base/file_io.h"

namespace troupe {

namespace {

// A float32 CPU copy of `t`, kept alive in `keep` (the view points into its storage), as a tensor to write.
SafetensorsTensor ToWrite(const std::string& name, const torch::Tensor& t, bool bf16, std::vector<torch::Tensor>* keep) {
  keep->push_back(t.detach().to(torch::kCPU, torch::kFloat).contiguous());
  return {name, keep->back().sizes().vec(), keep->back().data_ptr<float>(),
          bf16 ? SafetensorsDtype::kBF16 : SafetensorsDtype::kF32};
}

// The tensor `name` of `file` as float32 on `like`'s device and dtype, checked against `like`'s shape.
torch::Tensor ReadLike(const SafetensorsFile& file, const std::string& name, const torch::Tensor& like) {
  const SafetensorsView& v = file.Tensor(name);
  const std::vector<int64_t> want = like.sizes().vec();
  if (v.shape != want) {
    throw CheckpointError(file.path() + ": tensor '" + name + "' has shape " + ShapeText(v.shape) + ", the " +
                          "model needs " + ShapeText(want));
  }
  torch::Tensor values = torch::empty(want, torch::kFloat);
  file.CopyFloats(name, values.data_ptr<float>());  // one copy out of the mapping
  return values.to(like.device(), like.scalar_type());
}

void RequireFile(const std::string& path) {
  if (!std::filesystem::exists(path)) throw CheckpointError("checkpoint lacks " + path);
}

std::string StateName(size_t group, size_t param, const char* what) {
  return "group" + std::to_string(group) + ".param" + std::to_string(param) + "." + what;
}

int64_t MetadataInt(const SafetensorsFile& file, const std::string& key) {
  const auto it = file.metadata().find(key);
  if (it == file.metadata().end()) throw CheckpointError(file.path() + ": its metadata lacks '" + key + "'");
  try {
    size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= 0) return v;
  } catch (const std::logic_error&) {
  }
  throw CheckpointError(file.path() + ": metadata '" + key + "' is not a count: '" + it->second + "'");
}

double MetadataDouble(const SafetensorsFile& file, const std::string& key) {
  const auto it = file.metadata().find(key);
  if (it == file.metadata().end()) throw CheckpointError(file.path() + ": its metadata lacks '" + key + "'");
  try {
    size_t used = 0;
    const double v = std::stod(it->second, &used);
    if (used == it->second.size() && std::isfinite(v)) return v;
  } catch (const std::logic_error&) {
  }
  throw CheckpointError(file.path() + ": metadata '" + key + "' is not a number: '" + it->second + "'");
}

}  // namespace

std::vector<SafetensorsTensor> ParametersToWrite(torch::nn::Module& module, bool bf16, const ParameterFilter& wanted,
                                                 std::vector<torch::Tensor>* keep) {
  std::vector<SafetensorsTensor> tensors;
  for (const auto& p : module.named_parameters()) {
    if (wanted(p.key())) tensors.push_back(ToWrite(p.key(), p.value(), bf16, keep));
  }
  return tensors;
}

void ReadParameters(torch::nn::Module& module, const ParameterFilter& wanted, const ParameterSource& source) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.named_parameters()) {
    if (!wanted(p.key())) continue;
    const auto [file, name] = source(p.key());
    p.value().copy_(ReadLike(*file, name, p.value()));
  }
}

void SaveModuleTensors(torch::nn::Module& module, const std::string& path) {
  std::vector<torch::Tensor> keep;
  WriteSafetensors(path, ParametersToWrite(module, false, [](const std::string&) { return true; }, &keep),
                   {{"format", "pt"}});
}

void LoadModuleTensors(torch::nn::Module& module, const std::string& path) {
  RequireFile(path);
  const SafetensorsFile file(path);
  std::set<std::string> names;
  for (const auto& p : module.named_parameters()) names.insert(p.key());
  for (const std::string& name : file.names()) {
    if (!names.count(name)) throw CheckpointError(path + ": tensor '" + name + "' is no parameter of the model");
  }
  ReadParameters(module, [](const std::string&) { return true; },
                 [&](const std::string& name) -> std::pair<const SafetensorsFile*, std::string> { return {&file, name}; });
}

void SaveGeneratorState(const torch::Tensor& state, const std::string& path) {
  const torch::Tensor bytes = state.to(torch::kCPU, torch::kUInt8).contiguous();
  static const char kHex[] = "0123456789abcdef";
  std::string text;
  for (int64_t i = 0; i < bytes.numel(); ++i) {
    const uint8_t b = bytes.data_ptr<uint8_t>()[i];
    text += kHex[b >> 4];
    text += kHex[b & 15];
  }
  WriteFileAtomically(path, text + "\n");
}

torch::Tensor LoadGeneratorState(const std::string& path, const torch::Tensor& like) {
  RequireFile(path);
  std::string text = ReadWholeFile(path);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (static_cast<int64_t>(text.size()) != 2 * like.numel()) {
    throw CheckpointError(path + ": a generator state of " + std::to_string(text.size() / 2) + " bytes, this one has " +
                          std::to_string(like.numel()));
  }
  torch::Tensor bytes = torch::empty({like.numel()}, torch::kUInt8);
  auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw CheckpointError(path + ": not hex digits");
  };
  for (int64_t i = 0; i < like.numel(); ++i) {
    bytes.data_ptr<uint8_t>()[i] = static_cast<uint8_t>(digit(text[2 * i]) * 16 + digit(text[2 * i + 1]));
  }
  return bytes;
}

void SaveAdamW(torch::optim::AdamW& optimizer, const std::string& path) {
  std::vector<torch::Tensor> keep;
  std::vector<SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata = {{"format", "troupe-adamw"}};
  auto& groups = optimizer.param_groups();
  metadata["groups"] = std::to_string(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(groups[g].options());
    std::ostringstream lr;
    lr.precision(17);
    lr << options.lr();
    metadata["group" + std::to_string(g) + ".lr"] = lr.str();
    metadata["group" + std::to_string(g) + ".params"] = std::to_string(groups[g].params().size());
    for (size_t i = 0; i < groups[g].params().size(); ++i) {
      const auto it = optimizer.state().find(c10::guts::to_string(groups[g].params()[i].unsafeGetTensorImpl()));
      if (it == optimizer.state().end()) continue;  // not stepped yet
      const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
      metadata[StateName(g, i, "step")] = std::to_string(s.step());
      tensors.push_back(ToWrite(StateName(g, i, "exp_avg"), s.exp_avg(), false, &keep));
      tensors.push_back(ToWrite(StateName(g, i, "exp_avg_sq"), s.exp_avg_sq(), false, &keep));
      if (s.max_exp_avg_sq().defined()) {
        tensors.push_back(ToWrite(StateName(g, i, "max_exp_avg_sq"), s.max_exp_avg_sq(), false, &keep));
      }
    }
  }
  WriteSafetensors(path, tensors, metadata);
}

void LoadAdamW(torch::optim::AdamW& optimizer, const std::string& path) {
  RequireFile(path);
  const SafetensorsFile file(path);
  auto& groups = optimizer.param_groups();
  if (MetadataInt(file, "groups") != static_cast<int64_t>(groups.size())) {
    throw CheckpointError(path + ": an optimiser of " + file.metadata().at("groups") + " parameter groups, this one has " +
                          std::to_string(groups.size()));
  }
  torch::NoGradGuard no_grad;
  optimizer.state().clear();  // loading sets the saved entries only
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string group = "group" + std::to_string(g);
    if (MetadataInt(file, group + ".params") != static_cast<int64_t>(groups[g].params().size())) {
      throw CheckpointError(path + ": " + group + " holds another number of parameters than the model's");
    }
    static_cast<torch::optim::AdamWOptions&>(groups[g].options()).lr(MetadataDouble(file, group + ".lr"));
    for (size_t i = 0; i < groups[g].params().size(); ++i) {
      const torch::Tensor& p = groups[g].params()[i];
      if (!file.metadata().count(StateName(g, i, "step"))) continue;  // not stepped when saved
      auto s = std::make_unique<torch::optim::AdamWParamState>();
      s->step(MetadataInt(file, StateName(g, i, "step")));
      s->exp_avg(ReadLike(file, StateName(g, i, "exp_avg"), p));
      s->exp_avg_sq(ReadLike(file, StateName(g, i, "exp_avg_sq"), p));
      if (file.Has(StateName(g, i, "max_exp_avg_sq"))) s->max_exp_avg_sq(ReadLike(file, StateName(g, i, "max_exp_avg_sq"), p));
      optimizer.state()[c10::guts::to_string(p.unsafeGetTensorImpl())] = std::move(s);
    }
  }
}

}  // namespace troupe
