// The word and text codecs.
#include "workflows/config/prompt_codec.h"

#include <algorithm>
#include <cctype>

#include "core/base/errors.h"
#include "core/text/chat_template.h"
#include "core/text/tokenizer.h"

namespace troupe {

std::vector<std::string> WordsOfText(const std::string& text) {
  std::vector<std::string> words;
  std::string w;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '+' || c == '-' || c == '#') {
      w.push_back(static_cast<char>(std::tolower(c)));
    } else if (!w.empty()) {
      words.push_back(std::move(w));
      w.clear();
    }
  }
  if (!w.empty()) words.push_back(std::move(w));
  return words;
}

namespace {

class WordCodec : public PromptCodec {
 public:
  explicit WordCodec(Vocab vocab) : vocab_(std::move(vocab)), bot_(vocab_.Id("<bot>")), eot_(vocab_.Id("<eot>")) {}
  bool reads_text() const override { return false; }
  int vocab_size() const override { return vocab_.size(); }
  int eos() const override { return Vocab::kEos; }
  std::vector<int> TextPrompt(int, const std::string&) const override {
    throw Error("a word-vocabulary model has no text prompts");
  }
  std::vector<int> Answer(const std::vector<std::string>& words, int max_words) const override {
    std::vector<int> ids = vocab_.Encode(words);
    if (static_cast<int>(ids.size()) < max_words) ids.push_back(Vocab::kEos);
    ids.resize(std::min<size_t>(ids.size(), static_cast<size_t>(max_words)));
    return ids;
  }
  std::vector<std::string> Words(const std::vector<int>& tokens) const override { return vocab_.Decode(tokens); }
  std::vector<int> FirstTokens(const std::vector<std::string>& options) const override {
    return vocab_.Encode(options);
  }
  bool OneTokenEach(const std::vector<std::string>&) const override { return true; }
  int MaxNewTokens(int max_words) const override { return max_words; }
  std::string Show(const std::vector<int>& tokens) const override {
    std::string s;
    for (const auto& w : vocab_.Decode(tokens)) s += (s.empty() ? "" : " ") + w;
    return s;
  }
  std::string Text(const std::vector<int>& tokens) const override { return Show(tokens); }
  std::pair<int, int> MessageMarkers() const override {
    if (bot_ == Vocab::kUnk || eot_ == Vocab::kUnk) throw ConfigError("the word vocabulary has no <bot> and <eot>");
    return {bot_, eot_};
  }

 private:
  Vocab vocab_;
  int bot_, eot_;  // latent messages' markers, looked up once
};

class TextCodec : public PromptCodec {
 public:
  TextCodec(Tokenizer tokenizer, std::vector<std::string> role_names, int eos)
      : tokenizer_(std::move(tokenizer)),
        role_names_(std::move(role_names)),
        eos_(eos),
        bot_(tokenizer_.TokenId("<bot>")),
        eot_(tokenizer_.TokenId("<eot>")) {}
  bool reads_text() const override { return true; }
  int vocab_size() const override { return tokenizer_.vocab_size(); }
  int eos() const override { return eos_; }
  // A text that is already a ChatML conversation (a recorded prompt) is read as it is.
  std::vector<int> TextPrompt(int role, const std::string& text) const override {
    if (text.rfind("<|im_start|>", 0) == 0) return tokenizer_.Encode(text);
    return tokenizer_.Encode(ChatMl({{"system", "You are " + role_names_.at(role) + "."}, {"user", text}}, true));
  }
  std::vector<int> Answer(const std::vector<std::string>& words, int max_words) const override {
    std::string text;
    for (const auto& w : words) text += (text.empty() ? "" : " ") + w;
    std::vector<int> ids = EncodeAnswer(text);
    ids.push_back(eos_);
    ids.resize(std::min<size_t>(ids.size(), static_cast<size_t>(MaxNewTokens(max_words))));
    return ids;
  }
  std::vector<std::string> Words(const std::vector<int>& tokens) const override {
    return WordsOfText(tokenizer_.Decode(UpToEos(tokens)));
  }
  std::vector<int> FirstTokens(const std::vector<std::string>& options) const override {
    std::vector<int> first;
    for (const auto& o : options) {
      const std::vector<int> ids = EncodeAnswer(o);
      if (!ids.empty() && std::find(first.begin(), first.end(), ids[0]) == first.end()) first.push_back(ids[0]);
    }
    return first;
  }
  bool OneTokenEach(const std::vector<std::string>& options) const override {
    return std::all_of(options.begin(), options.end(), [&](const std::string& o) { return EncodeAnswer(o).size() == 1; });
  }
  // A word is a token or two on average; the words and the end token fit in twice as many plus one.
  int MaxNewTokens(int max_words) const override { return 2 * max_words + 1; }
  std::string Show(const std::vector<int>& tokens) const override { return tokenizer_.Decode(tokens); }
  std::string Text(const std::vector<int>& tokens) const override { return tokenizer_.Decode(UpToEos(tokens)); }
  std::pair<int, int> MessageMarkers() const override {
    if (!bot_ || !eot_) {
      throw ConfigError("the tokenizer has no <bot> and <eot> tokens for latent messages (tokenizers troupe learns "
                        "reserve them: retrain, or add them as special tokens)");
    }
    return {*bot_, *eot_};
  }

 private:
  // An answer's tokens: its text, or the text after a space when that takes
  // fewer tokens (a vocabulary learnt on prose holds " red" whole more often
  // than "red"), so that guided choices and demonstrations agree on one form.
  std::vector<int> EncodeAnswer(const std::string& text) const {
    std::vector<int> plain = tokenizer_.Encode(text, false);
    std::vector<int> spaced = tokenizer_.Encode(" " + text, false);
    return spaced.size() < plain.size() ? spaced : plain;
  }
  std::vector<int> UpToEos(const std::vector<int>& tokens) const {
    return {tokens.begin(), std::find(tokens.begin(), tokens.end(), eos_)};
  }

  Tokenizer tokenizer_;
  std::vector<std::string> role_names_;
  int eos_;
  std::optional<int> bot_, eot_;  // latent messages' markers, looked up once
};

}  // namespace

std::shared_ptr<const PromptCodec> MakeWordCodec(Vocab vocab) {
  return std::make_shared<WordCodec>(std::move(vocab));
}

std::shared_ptr<const PromptCodec> MakeTextCodec(const std::string& tokenizer_json,
                                                 std::vector<std::string> role_names) {
  Tokenizer tokenizer = Tokenizer::FromJsonFile(tokenizer_json);
  for (const char* t : {"<|im_start|>", "<|im_end|>"}) {
    if (!tokenizer.TokenId(t)) {
      throw ConfigError(tokenizer_json + ": no " + t +
                        " token; text prompts are ChatML conversations (train a tokenizer with troupe tokenizer "
                        "train, which adds them)");
    }
  }
  const int eos = *tokenizer.TokenId("<|im_end|>");
  return std::make_shared<TextCodec>(std::move(tokenizer), std::move(role_names), eos);
}

}  // namespace troupe
