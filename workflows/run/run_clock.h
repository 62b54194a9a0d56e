// What every run loop shares for its progress line and files: a monotonic
// clock, durations as people read them, and files written whole or not at all.
#pragma once

#include <string>

namespace troupe {

double MonotonicSeconds();
// "12m05s", or "1h02m" from an hour on.
std::string FormatDuration(double seconds);
// Writes `text` beside `path` and renames it into place; throws Error when it cannot.
void WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace troupe
