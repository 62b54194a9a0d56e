// Session recordings (comms/session_file.h): the header, checksummed records,
// every event message, and the summary troupe replay prints.
#include "comms/session_file.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = troupe::fuzz::AsFile(data, size, "run.session");
  troupe::fuzz::Refusing([&] { troupe::SummarizeSession(troupe::ReadSessionFile(path)); });
  return 0;
}
