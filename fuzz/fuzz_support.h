// What the fuzz targets share: the input written to a file of this process
// (the parsers under test read files, as troupe does), and the one outcome
// besides success that a parser may have: a troupe::Error saying what is
// wrong. Anything else (a crash, a sanitizer report, another exception, a
// hang) is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/base/errors.h"

namespace troupe::fuzz {

// A folder of this process in memory-backed /dev/shm when there is one.
inline const std::string& WorkDir() {
  static const std::string dir = [] {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    const std::filesystem::path d = base / ("troupe-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

// `data` as the file `name` in WorkDir(); its path.
inline std::string AsFile(const uint8_t* data, size_t size, const std::string& name) {
  const std::string path = WorkDir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
  return path;
}

// Runs `parse`; a troupe::Error is a refusal, as it should be for bad input.
template <typename F>
void Refusing(F parse) {
  try {
    parse();
  } catch (const troupe::Error&) {
  }
}

}  // namespace troupe::fuzz
