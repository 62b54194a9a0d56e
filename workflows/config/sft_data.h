// Supervised demonstrations from data (trainer.sft.jsonl, trainer.sft.session),
// read and checked whole when the workflow compiles: each names a trained role
// of the workflow and is written in its game's vocabulary.
#pragma once

#include <string>
#include <vector>

namespace troupe {

class LoadedWorkflow;
struct CompiledWorkflow;

struct Demonstration {
  int role = 0;                        // index among the workflow's roles (trained)
  std::vector<std::string> prompt;     // the observation the role reads, word by word
  std::string prompt_text;             // the same as written (text models read it through their tokenizer)
  std::vector<std::string> response;   // what it should answer
  std::string origin;                  // "file:line" or "file: event N", for messages
};

// trainer.sft's jsonl file ({"role": NAME, "prompt": "words ...", "response":
// "words ..."} a line) and recorded session (its valid text calls of roles
// this workflow trains, with the prompts they read). Fails at the field, or
// at the file's line, on anything it cannot use.
std::vector<Demonstration> LoadDemonstrations(const LoadedWorkflow& loaded, const CompiledWorkflow& workflow);

}  // namespace troupe
