// safetensors files (core/safetensors.h): header, dtypes, shapes, byte ranges.
#include "core/safetensors.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = troupe::fuzz::AsFile(data, size, "model.safetensors");
  troupe::fuzz::Refusing([&] {
    troupe::SafetensorsFile file(path);
    for (const std::string& name : file.names()) {
      const troupe::SafetensorsView& t = file.Tensor(name);
      if (t.dtype != troupe::SafetensorsDtype::kI64) file.Floats(name);
    }
  });
  return 0;
}
