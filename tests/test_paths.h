// Where the tests find the source tree and the binaries they run. Kept out of
// the test files' compile flags (tests/test_paths.cc alone gets them), so a
// clone in another folder still finds those files in the compiler cache.
#pragma once

#include <string>

namespace troupe::testing {

const std::string& SourceDir();     // the project's source folder
const std::string& BinaryDir();     // the build folder
const std::string& TroupeBinary();  // the `troupe` command
const std::string& ViewBinary();    // `troupe-view`

}  // namespace troupe::testing
