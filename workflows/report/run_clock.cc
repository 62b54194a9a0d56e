// Clock, durations, atomic files.
#include "workflows/report/run_clock.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/base/errors.h"

namespace troupe {

double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string FormatDuration(double s) {
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  else std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  return buf;
}

}  // namespace troupe
