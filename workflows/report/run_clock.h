// What every run loop shares for its progress line and files: a monotonic
// clock, durations as people read them, and files written whole or not at all.
#pragma once

#include <string>

#include "core/base/file_io.h"  // WriteFileAtomically, which the run folders use

namespace troupe {

double MonotonicSeconds();
// "12m05s", or "1h02m" from an hour on.
std::string FormatDuration(double seconds);

}  // namespace troupe
