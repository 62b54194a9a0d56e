// Whole-file reads and crash-safe writes.
#include "core/base/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/errors.h"

namespace troupe {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void SyncToDisk(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(path + ": cannot open to sync: " + std::strerror(errno));
  const bool failed = ::fsync(fd) != 0 && !(std::filesystem::is_directory(path) && (errno == EINVAL || errno == EROFS));
  const int error = errno;
  ::close(fd);
  if (failed) throw Error(path + ": cannot write: " + std::strerror(error));
}

void WriteFileAtomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  // A name of its own per process and call: writers racing for one path each
  // rename a whole file into place, never interleave into one.
  static std::atomic<unsigned> calls{0};
  const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(calls++);
  try {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();  // the last bytes reach the file here: check after it
    if (!out) throw Error(path + ": cannot write: " + std::strerror(errno));
    SyncToDisk(tmp);
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(path + ": cannot replace: " + ec.message());
  }
  SyncToDisk(target.has_parent_path() ? target.parent_path().string() : ".");
}

}  // namespace troupe
