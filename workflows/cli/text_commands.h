// `troupe tokenizer ...` and `troupe lm ...`: check a tokenizer and a language
// model from the command line, without writing code.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace troupe::cli {

struct TextArgs {
  std::string tokenizer;  // a tokenizer.json or a folder holding one
  std::string file;       // input text (default: standard input)
  std::string out;
  std::vector<std::string> corpora;  // tokenizer train: corpus names
  std::vector<std::string> text_files;
  int vocab_size = 8192;
  int heldout_every = 50;
  std::string model;   // lm: a Hugging Face folder
  std::string prompt;  // lm generate
  bool greedy = false;
  bool json = false;
  bool no_special = false;
  int max_new = 32;
  double temperature = 1.0;
  int threads = 2;
  std::string device = "cpu";  // lm: where the model runs
  unsigned long long seed = 1;
};

// The text of `file`, or of standard input when it is empty or "-".
std::string ReadTextInput(const std::string& file);

// Adds `tokenizer` (encode, decode, train) and `lm` (score, generate) to `app`.
void AddTextCommands(CLI::App& app, TextArgs& args);

// Runs the text command `app` parsed; returns its exit status, or -1 when the
// parsed command is not one of them.
int RunTextCommand(CLI::App& app, const TextArgs& args);

}  // namespace troupe::cli
