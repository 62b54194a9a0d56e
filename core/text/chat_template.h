// Role prompts in the chat format Qwen-style models are trained on (ChatML):
// <|im_start|>ROLE\nCONTENT<|im_end|>\n ... then <|im_start|>assistant\n.
#pragma once

#include <string>
#include <vector>

namespace troupe {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// The conversation as text; with `generation_prompt`, ends where the assistant's reply begins.
std::string ChatMl(const std::vector<ChatMessage>& messages, bool generation_prompt);

// The same template as tokenizer_config.json's "chat_template" (Jinja), for the field's tools.
extern const char kChatMlJinja[];

}  // namespace troupe
