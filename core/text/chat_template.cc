// ChatML.
#include "core/text/chat_template.h"

namespace troupe {

const char kChatMlJinja[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

std::string ChatMl(const std::vector<ChatMessage>& messages, bool generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace troupe
