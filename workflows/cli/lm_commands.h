// `troupe lm score`, `troupe lm generate` and `troupe lm probe` on a Hugging Face model folder.
#pragma once

#include "workflows/cli/text_commands.h"

namespace troupe::cli {

void AddLmCommands(CLI::App& app, TextArgs& args);
int RunLmCommand(CLI::App& command, const TextArgs& args);

}  // namespace troupe::cli
