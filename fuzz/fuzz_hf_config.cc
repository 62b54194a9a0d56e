// A Hugging Face folder's config.json (core/models/architecture_spec.h): every
// architecture's fields, rope_scaling, limits and refusals.
#include "core/models/architecture_spec.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  troupe::fuzz::AsFile(data, size, "config.json");
  troupe::fuzz::Refusing([&] {
    troupe::config::ModelSpec model;
    troupe::ReadHfFolderConfig(troupe::fuzz::WorkDir(), &model);
  });
  return 0;
}
