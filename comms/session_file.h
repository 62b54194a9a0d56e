// Session files: a header record ("troupe-session 1": the format and its
// version), then session events as checksummed records (core/base/record_file.h).
// A file cut short by a crash reads back up to its last complete record.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comms/proto/session.pb.h"
#include "core/base/record_file.h"

namespace troupe {

class SessionWriter {
 public:
  // Starts a new file, or continues one with `append` (a resumed run).
  explicit SessionWriter(const std::string& path, bool append = false);
  // Appends one event; `flush` pushes it to the kernel (survives a killed process).
  void Write(const session::Event& event, bool flush = false);
  void Flush() { writer_.Flush(); }
  int64_t written() const { return written_; }

 private:
  bool fresh_ = false;  // set before writer_ is built: whether the header is written
  RecordWriter writer_;
  std::string buffer_;
  int64_t written_ = 0;
};

struct SessionContents {
  std::vector<session::Event> events;
  std::string error;  // why reading stopped early (torn or corrupt record), empty when clean
};

// Reads every complete event of a session file; a file cut short reads up to
// its last complete event (`error` says where it stopped). Throws CommsError
// when the file cannot be opened, does not start with the session header (an
// empty file, random bytes, a TensorBoard event file), or is of another format version.
SessionContents ReadSessionFile(const std::string& path);

// A few lines saying what a session holds (`troupe replay FILE --summary`).
std::string SummarizeSession(const SessionContents& contents);

}  // namespace troupe
