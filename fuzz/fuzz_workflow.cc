// Workflow files (workflows/config/config_loader.h): the text format, then
// validation and compilation of the whole workflow, every game's parameters
// included.
#include "fuzz/fuzz_support.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  troupe::fuzz::Refusing([&] { troupe::CompileWorkflow(troupe::ParseWorkflowText(text, "fuzz.textproto")); });
  return 0;
}
