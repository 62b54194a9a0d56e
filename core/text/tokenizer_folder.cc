// tokenizer.json + tokenizer_config.json.
#include "core/text/tokenizer_folder.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/text/chat_template.h"
#include "core/base/file_io.h"

namespace troupe {

Tokenizer LoadTokenizer(const std::string& path) {
  if (std::filesystem::is_directory(path)) {
    const std::string file = path + "/tokenizer.json";
    if (!std::filesystem::exists(file)) throw TokenizerError(path + " holds no tokenizer.json");
    return Tokenizer::FromJsonFile(file);
  }
  return Tokenizer::FromJsonFile(path);
}

void WriteTokenizerFolder(const Tokenizer& tokenizer, const std::string& dir) {
  std::filesystem::create_directories(dir);
  tokenizer.SaveJson(dir + "/tokenizer.json");
  nlohmann::ordered_json config;
  config["tokenizer_class"] = "PreTrainedTokenizerFast";
  config["model_max_length"] = 131072;
  config["clean_up_tokenization_spaces"] = false;
  config["chat_template"] = std::string(kChatMlJinja);
  auto special = [&](const char* key, const char* token) {
    config[key] = tokenizer.TokenId(token) ? nlohmann::ordered_json(token) : nlohmann::ordered_json(nullptr);
  };
  config["bos_token"] = nullptr;  // documents are separated by <|endoftext|>, not opened by a token
  special("eos_token", "<|im_end|>");
  special("pad_token", "<|endoftext|>");
  WriteFileAtomically(dir + "/tokenizer_config.json", config.dump(2) + "\n");
}

}  // namespace troupe
