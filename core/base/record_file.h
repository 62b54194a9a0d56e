// Length-delimited, checksummed records in the TFRecord layout:
// u64 length, u32 masked crc32c(length), bytes, u32 masked crc32c(bytes).
// A reader stops cleanly at the last complete record of a torn file.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

namespace troupe {

class RecordWriter {
 public:
  // Appends to `path` (creating it); throws CommsError when it cannot.
  explicit RecordWriter(const std::string& path);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void Write(const std::string& payload);
  void Flush();

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

class RecordReader {
 public:
  explicit RecordReader(const std::string& path);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // The next record, or nullopt at the end; error() says why a read stopped early.
  std::optional<std::string> Next();
  const std::string& error() const { return error_; }

 private:
  std::FILE* file_ = nullptr;
  std::string error_;
};

}  // namespace troupe
