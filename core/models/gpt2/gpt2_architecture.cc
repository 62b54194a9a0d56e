// The GPT-2 style decoder's LibTorch half: built from config::Gpt2Spec,
// stored as a Hugging Face folder. Hugging Face's own GPT-2 files name the
// body's tensors with or without the "transformer." prefix; both are read.
#include "core/models/gpt2/gpt2.h"
#include "core/models/hf_architecture.h"

namespace troupe {
namespace {

constexpr char kBody[] = "transformer.";

class Gpt2Architecture : public HfArchitecture {
 public:
  bool IsFieldParameter(const std::string& name) const override {
    const bool field = name.rfind(kBody, 0) == 0 || name.rfind("lm_head.", 0) == 0;
    return field && name.find(".lora_") == std::string::npos;
  }

 protected:
  PolicyModel BuildFresh(const ModelConfig& c) const override {
    return Gpt2LM(Gpt2Options(c.vocab_size, c.spec.gpt2()).parts(TroupePartsOf(c))).ptr();
  }

  std::vector<std::string> FileNames(const std::string& parameter) const override {
    if (parameter.rfind(kBody, 0) != 0) return {parameter};
    return {parameter, parameter.substr(sizeof(kBody) - 1)};
  }
};

}  // namespace

TROUPE_REGISTER_ARCHITECTURE("gpt2", Gpt2Architecture);

}  // namespace troupe
