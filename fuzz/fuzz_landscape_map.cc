// Sugarscape landscape maps (games/sugarscape/landscape.h).
#include "fuzz/fuzz_support.h"
#include "games/sugarscape/landscape.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  troupe::fuzz::Refusing([&] { troupe::sugarscape::ParseMap(text, "fuzz"); });
  return 0;
}
