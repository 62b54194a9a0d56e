// How a physical model reads prompts and writes answers. Two kinds:
//   words: the game's words through the workflow's word vocabulary, one token
//          each (the micro-transformer's fast default);
//   text:  the game's text view (Decision::text) through a tokenizer, as a
//          ChatML conversation, the answer ended by <|im_end|> (language models:
//          one base model can play any game that renders text).
// The rollout, the trainer's demonstrations and the session's events ask a
// role's codec instead of knowing which kind its model reads.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/vocab.h"

namespace troupe {

class Tokenizer;

class PromptCodec {
 public:
  virtual ~PromptCodec() = default;
  virtual bool reads_text() const = 0;
  virtual int vocab_size() const = 0;
  virtual int eos() const = 0;
  // Text codecs: the prompt of `role` reading `text` (word prompts, with their
  // latent messages, are built by the rollout from the vocabulary).
  virtual std::vector<int> TextPrompt(int role, const std::string& text) const = 0;
  // The tokens of an answer made of `words`, <eos> included when it fits in
  // MaxNewTokens(max_words): what a demonstration teaches.
  virtual std::vector<int> Answer(const std::vector<std::string>& words, int max_words) const = 0;
  // The words of a generated answer (up to <eos>), as the game reads them.
  virtual std::vector<std::string> Words(const std::vector<int>& tokens) const = 0;
  // Guided decoding: the first token of each option.
  virtual std::vector<int> FirstTokens(const std::vector<std::string>& options) const = 0;
  // Whether each option is one token whole (its answer, guided, is that token).
  virtual bool OneTokenEach(const std::vector<std::string>& options) const = 0;
  // The longest answer, in tokens, of a decision that reads `max_words` words.
  virtual int MaxNewTokens(int max_words) const = 0;
  // The text of a generated answer (up to <eos>): a pipeline node's output.
  virtual std::string Text(const std::vector<int>& tokens) const = 0;
  // Tokens as a person reads them (session events, the viewer).
  virtual std::string Show(const std::vector<int>& tokens) const = 0;
  // The tokens around a latent message's vectors, <bot> and <eot>. Throws
  // ConfigError when the vocabulary or tokenizer has none.
  virtual std::pair<int, int> MessageMarkers() const = 0;
};

std::shared_ptr<const PromptCodec> MakeWordCodec(Vocab vocab);

// Loads `tokenizer_json`; `role_names` name the roles in each prompt's system
// message. Throws ConfigError when the tokenizer lacks ChatML's tokens.
std::shared_ptr<const PromptCodec> MakeTextCodec(const std::string& tokenizer_json,
                                                 std::vector<std::string> role_names);

// The words of a text answer: lower-cased, split at anything but letters,
// digits and '+', '-', '#'.
std::vector<std::string> WordsOfText(const std::string& text);

}  // namespace troupe
