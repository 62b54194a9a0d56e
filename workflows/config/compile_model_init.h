// Compiling a model's init_from: the checkpoint it names, the run that wrote
// it (compiled again from its resolved workflow), and whether that model fits
// this one: the same architecture and parts, the same tokenizer or a word
// vocabulary mostly shared. Fills ModelConfig::init with the checkpoint folder,
// the source model's config and the token and role-slot maps.
#pragma once

#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"

namespace troupe {

// After the roles and prompts are compiled (vocabulary, role slots, codecs).
// ConfigError at the model's init_from (or init_model) when it cannot work.
void CompileModelInits(const LoadedWorkflow& workflow, CompiledWorkflow& compiled);

}  // namespace troupe
