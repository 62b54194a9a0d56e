// The micro transformer's LibTorch half: built from config::TransformerSpec,
// saved as safetensors (model-NAME.safetensors in a checkpoint folder; older
// checkpoints hold LibTorch's archive, model-NAME.pt, still read).
#include <filesystem>

#include "core/base/errors.h"
#include "core/models/architecture.h"
#include "core/models/transformer/transformer.h"
#include "core/models/module_tensors.h"
#include "core/models/torch_files.h"

namespace troupe {
namespace {

// The model's file without its extension: model-NAME.safetensors (model-NAME.pt before).
std::string ModelStem(const ModelConfig& c, const std::string& dir) { return dir + "/model-" + c.name; }

class TransformerArchitecture : public Architecture {
 public:
  PolicyModel Build(const ModelConfig& c) const override {
    if (!c.hf_dir.empty()) throw ModelError("model '" + c.name + "': the micro transformer has no Hugging Face folder");
    return TransformerLM(TransformerLMOptions(c.vocab_size, c.spec.transformer())
                             .parts(TroupePartsOf(c))
                             .role_heads(c.role_heads))
        .ptr();
  }

  void Save(PolicyModelImpl& model, const ModelConfig& c, const std::string& dir) const override {
    SaveModuleTensors(model, ModelStem(c, dir) + ".safetensors");
  }

  void Load(PolicyModel& model, const ModelConfig& c, const std::string& dir, torch::Device device) const override {
    LoadSafetensorsOrOlder(model, ModelStem(c, dir), [&](const std::string& f) { LoadModuleTensors(*model, f); },
                           device);
  }

  bool IsFieldParameter(const std::string&) const override { return true; }

  void WriteHfFolder(PolicyModelImpl&, const ModelConfig& c, const std::string&, bool, size_t) const override {
    throw ModelError("model '" + c.name + "': the micro transformer has no Hugging Face folder");
  }
  void ReadHfWeights(PolicyModelImpl&, const std::string& dir) const override {
    throw ModelError(dir + ": the micro transformer has no Hugging Face folder");
  }
};

}  // namespace

TROUPE_REGISTER_ARCHITECTURE("transformer", TransformerArchitecture);

}  // namespace troupe
