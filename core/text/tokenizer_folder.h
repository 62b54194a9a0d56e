// A tokenizer as the field keeps it in a model folder: tokenizer.json and
// tokenizer_config.json (special tokens and the chat template).
#pragma once

#include <string>

#include "core/text/tokenizer.h"

namespace troupe {

// `path` is a tokenizer.json or a folder holding one.
Tokenizer LoadTokenizer(const std::string& path);

// Writes dir/tokenizer.json and dir/tokenizer_config.json (ChatML template,
// <|im_end|> as end of turn, <|endoftext|> as padding when the tokenizer has them).
void WriteTokenizerFolder(const Tokenizer& tokenizer, const std::string& dir);

}  // namespace troupe
