// The data cache's location.
#include "core/base/data_cache.h"

#include <cstdlib>
#include <filesystem>

#include "core/base/errors.h"

namespace troupe {

std::string DataCacheDir() {
  if (const char* dir = std::getenv("TROUPE_CACHE"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/troupe";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/troupe";
}

std::string RequireCached(const std::string& relative) {
  const std::string path = DataCacheDir() + "/" + relative;
  if (!std::filesystem::exists(path)) {
    throw Error(path + " is missing: scripts/fetch_data.sh fetches it (scripts/setup.sh runs it)");
  }
  return path;
}

}  // namespace troupe
