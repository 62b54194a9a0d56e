// The architecture registry's LibTorch side: building, saving and loading
// whatever architecture a ModelConfig names.
#include "core/models/architecture.h"

#include <cstdint>
#include <map>

#include "core/base/errors.h"
#include "core/models/model_init.h"

namespace troupe {

const Architecture& ArchitectureOf(const ModelConfig& c) {
  static const auto all = [] {
    std::map<std::string, std::unique_ptr<Architecture>> made;
    for (const std::string& name : ArchitectureRegistry::Get().Names())
      made[name] = ArchitectureRegistry::Get().Create(name);
    return made;
  }();
  const std::string name = ArchitectureSpecOf(c.spec).name();
  auto it = all.find(name);
  if (it == all.end()) throw ModelError("model '" + c.name + "': architecture '" + name + "' has no LibTorch side");
  return *it->second;
}

TroupeParts TroupePartsOf(const ModelConfig& c) {
  return TroupeParts().num_roles(c.num_roles).lora_rank(c.lora_rank).latent(c.latent).latent_in_width(c.latent_in_width);
}

int64_t FieldParameterCount(PolicyModelImpl& model, const ModelConfig& c) {
  const Architecture& architecture = ArchitectureOf(c);
  int64_t n = 0;
  for (const auto& p : model.named_parameters()) {
    if (architecture.IsFieldParameter(p.key())) n += p.value().numel();
  }
  return n;
}

PolicyModel BuildPolicyModel(const ModelConfig& c) {
  PolicyModel model = ArchitectureOf(c).Build(c);
  StartFromCheckpoint(*model, c);
  model->set_bf16(c.bf16);
  return model;
}

void SavePolicyModel(PolicyModelImpl& model, const ModelConfig& c, const std::string& dir) {
  ArchitectureOf(c).Save(model, c, dir);
}

void LoadPolicyModel(PolicyModel& model, const ModelConfig& c, const std::string& dir, torch::Device device) {
  ArchitectureOf(c).Load(model, c, dir, device);
}

ModelConfig HfFolderConfig(const std::string& dir) {
  ModelConfig c;
  c.name = "model";
  c.spec.set_name(c.name);
  c.vocab_size = static_cast<int>(ReadHfFolderConfig(dir, &c.spec));
  c.hf_dir = dir;
  c.device = "cpu";
  return c;
}

PolicyModel LoadHfFolder(const std::string& dir) { return BuildPolicyModel(HfFolderConfig(dir)); }

}  // namespace troupe
