// tokenizer.json and tiktoken rank files (core/text/tokenizer.h), then an
// encode and decode with whatever loaded.
#include "core/text/regex_splitter.h"
#include "core/text/tokenizer.h"
#include "core/text/tokenizer_folder.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte chooses the file's kind; the rest is its content.
  if (size == 0) return 0;
  const bool json = data[0] % 2 == 1;
  const std::string path = troupe::fuzz::AsFile(data + 1, size - 1, json ? "tokenizer.json" : "ranks.tiktoken");
  troupe::fuzz::Refusing([&] {
    const troupe::Tokenizer tokenizer = json ? troupe::LoadTokenizer(path)
                                             : troupe::Tokenizer::FromTiktokenFile(path, troupe::kGpt2Pattern,
                                                                                  {troupe::AddedToken{50256, "<|endoftext|>", true}});
    tokenizer.Decode(tokenizer.Encode("Hello, world! 12 apples <|im_end|> \xc3\xa9t\xc3\xa9"));
  });
  return 0;
}
