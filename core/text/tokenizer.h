// A byte-level BPE tokenizer as GPT-2, Llama 3 and Qwen use it
// (../shared/specs/language_models.md): added tokens matched first, an NFC
// normaliser, a Split(regex) pre-tokeniser, byte-level BPE merges by rank and
// the byte-level decoder. Loads the field's tokenizer.json and tiktoken rank
// files (r50k_base), and writes tokenizer.json. Thread-safe for encoding.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe {

struct AddedToken {
  int id = 0;
  std::string content;
  bool special = true;
};

// What a tokenizer is made of; tokens are raw bytes, merges pairs of token ids
// in rank order. BpeTrainer produces one; Tokenizer is built from one.
struct TokenizerModel {
  std::vector<std::string> tokens;          // id -> bytes
  std::vector<std::pair<int, int>> merges;  // rank -> (left id, right id); empty: merge by the rank of the bytes
  std::vector<AddedToken> added;
  std::string pattern;  // the Split pre-tokeniser's regex
  bool nfc = false;     // NFC normaliser
  bool ignore_merges = false;  // a pre-token that is a whole token is taken as it is
};

class Tokenizer {
 public:
  // A tokenizer.json; throws TokenizerError naming the file and what is wrong.
  static Tokenizer FromJsonFile(const std::string& path);
  static Tokenizer FromJson(const std::string& json_text, const std::string& origin);
  // A tiktoken rank file ("base64 rank" per line) with the given regex and
  // special tokens (r50k_base: kGpt2Pattern, {"<|endoftext|>", 50256}).
  static Tokenizer FromTiktokenFile(const std::string& path, const std::string& pattern,
                                    const std::vector<AddedToken>& specials);
  explicit Tokenizer(TokenizerModel model);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Token ids of `text` (UTF-8; TokenizerError at the first invalid byte).
  // Special added tokens are matched only when `allow_special`.
  std::vector<int> Encode(std::string_view text, bool allow_special = true) const;
  // The pre-tokens of `text` (valid UTF-8, no added tokens): normalised, then split.
  void PreTokenize(std::string_view text, std::vector<std::string>* pieces) const;
  // The text of `ids` (bytes that do not form UTF-8 are kept as they are).
  std::string Decode(const std::vector<int>& ids) const;

  int vocab_size() const;  // one past the largest id
  std::optional<int> TokenId(std::string_view token_bytes) const;
  const std::string& TokenBytes(int id) const;
  const TokenizerModel& model() const;

  // The field's tokenizer.json (vocab in the byte-level alphabet, merges as pairs).
  std::string ToJson() const;
  void SaveJson(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe
