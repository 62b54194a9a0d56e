// QA datasets in JSONL (games/qa/qa_dataset.h): questions and passages.
#include "fuzz/fuzz_support.h"
#include "games/qa/qa_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = troupe::fuzz::AsFile(data, size, "data.jsonl");
  troupe::fuzz::Refusing([&] { troupe::qa::ReadQuestions(path); });
  troupe::fuzz::Refusing([&] { troupe::qa::ReadPassages(path); });
  return 0;
}
