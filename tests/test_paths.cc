// The paths CMake passes in (tests/CMakeLists.txt).
#include "tests/test_paths.h"

namespace troupe::testing {

const std::string& SourceDir() {
  static const std::string path = TROUPE_SOURCE_DIR;
  return path;
}

const std::string& BinaryDir() {
  static const std::string path = TROUPE_BINARY_DIR;
  return path;
}

const std::string& TroupeBinary() {
  static const std::string path = TROUPE_BINARY;
  return path;
}

const std::string& ViewBinary() {
  static const std::string path = TROUPE_VIEW_BINARY;
  return path;
}

}  // namespace troupe::testing
