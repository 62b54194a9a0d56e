// Names no corpus holds: 2-3 syllables drawn at random ("Quellin", "Zorvia"),
// for the reading probes' items and the reading documents pretraining reads,
// so that answering about them needs the context, not memory.
#pragma once

#include <cstdint>
#include <string>

namespace troupe {

// The name `draw` makes, capitalised; the same draw gives the same name.
std::string InventedName(uint64_t draw);

}  // namespace troupe
