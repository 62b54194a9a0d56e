// The Llama family's LibTorch half: built from config::LlamaSpec, stored as a
// Hugging Face folder.
#include "core/models/hf_architecture.h"
#include "core/models/llama/llama.h"

namespace troupe {
namespace {

class LlamaArchitecture : public HfArchitecture {
 public:
  bool IsFieldParameter(const std::string& name) const override {
    const bool field = name.rfind("model.", 0) == 0 || name.rfind("lm_head.", 0) == 0;
    return field && name.find(".lora_") == std::string::npos;
  }

 protected:
  PolicyModel BuildFresh(const ModelConfig& c) const override {
    return LlamaLM(LlamaOptions(c.vocab_size, c.spec.llama()).parts(TroupePartsOf(c))).ptr();
  }
};

}  // namespace

TROUPE_REGISTER_ARCHITECTURE("llama", LlamaArchitecture);

}  // namespace troupe
