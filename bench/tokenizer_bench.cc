// Encoding speed of troupe's tokenizer on the reference corpus (over 1 MB of
// Moby-Dick and Factbook text) with Qwen3's tokenizer.json and r50k_base.
// bench/tokenizer_speed.sh runs it beside the field's JavaScript tokenizers.
// Usage: tokenizer_bench REFERENCE_DIR QWEN3_TOKENIZER_JSON  (prints one JSON object)
#include <chrono>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/text/regex_splitter.h"
#include "core/text/tokenizer.h"

using namespace troupe;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Seconds and tokens to encode every document once, with a tokenizer fresh from its file (its cache empty).
std::pair<double, size_t> EncodeAll(const Tokenizer& t, const std::vector<std::string>& documents) {
  const double t0 = Now();
  size_t tokens = 0;
  for (const std::string& d : documents) tokens += t.Encode(d, false).size();
  return {Now() - t0, tokens};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tokenizer_bench REFERENCE_DIR QWEN3_TOKENIZER_JSON\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::ifstream in(dir + "/reference.json");
  const auto documents = nlohmann::json::parse(in)["documents"].get<std::vector<std::string>>();
  size_t bytes = 0;
  for (const auto& d : documents) bytes += d.size();
  const Tokenizer qwen3 = Tokenizer::FromJsonFile(argv[2]);
  const Tokenizer r50k =
      Tokenizer::FromTiktokenFile(dir + "/r50k_base.tiktoken", kGpt2Pattern, {{50256, "<|endoftext|>", true}});
  const auto [qs, qt] = EncodeAll(qwen3, documents);
  const auto [rs, rt] = EncodeAll(r50k, documents);
  std::printf("{\"bytes\": %zu, \"qwen3\": {\"seconds\": %.4f, \"tokens\": %zu}, \"r50k\": {\"seconds\": %.4f, \"tokens\": %zu}}\n",
              bytes, qs, qt, rs, rt);
  return 0;
}
