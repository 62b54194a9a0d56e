// Whole-file reads and crash-safe writes (a temporary file, then a rename:
// a reader sees the old file or the new one, never half of one).
#pragma once

#include <string>

namespace troupe {

// Throws Error naming the path when it cannot be read.
std::string ReadWholeFile(const std::string& path);

// Creates the parent folder when missing; throws Error when it cannot write.
void WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace troupe
