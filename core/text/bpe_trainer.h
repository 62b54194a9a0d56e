// Learning a byte-level BPE vocabulary from text, as the field's trainers do:
// pre-tokenise (NFC, the Qwen regex), count the pieces, then merge the most
// frequent adjacent pair again and again until the vocabulary is full.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/text/tokenizer.h"

namespace troupe {

struct BpeTrainerOptions {
  int vocab_size = 8192;  // bytes + merges + special tokens
  int min_frequency = 2;  // a pair seen fewer times is not merged
  // ChatML's three, then <bot> and <eot>, which bracket the latent vectors of a
  // hybrid message (so a base model can send and read them later).
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<bot>", "<eot>"};
  std::string pattern;  // empty: the Qwen pre-tokeniser regex
  bool nfc = true;
};

class BpeTrainer {
 public:
  explicit BpeTrainer(BpeTrainerOptions options);
  // Counts the pre-tokens of one text (valid UTF-8).
  void Add(std::string_view text);
  // The merges, with `progress(merges so far, merges wanted)` now and then.
  TokenizerModel Train(const std::function<void(int, int)>& progress = nullptr) const;
  size_t distinct_pieces() const;

 private:
  BpeTrainerOptions options_;
  Tokenizer splitter_;  // bytes only: its normaliser and pre-tokeniser
  std::unordered_map<std::string, long long> counts_;  // pre-token -> occurrences
};

}  // namespace troupe
