// TFRecord-layout record files: writing and checked reading.
#include "core/base/record_file.h"

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/base/crc32c.h"
#include "core/base/errors.h"

namespace troupe {

namespace {
void PutU32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }  // little-endian hosts only (x86-64, arm64)
void PutU64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
}  // namespace

RecordWriter::RecordWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "ab");
  if (file_ == nullptr) throw CommsError("cannot open " + path + " for writing: " + std::strerror(errno));
}

RecordWriter::~RecordWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void RecordWriter::Write(const std::string& payload) {
  char header[12];
  PutU64(header, payload.size());
  PutU32(header + 8, MaskCrc(Crc32c(header, 8)));
  char footer[4];
  PutU32(footer, MaskCrc(Crc32c(payload.data(), payload.size())));
  if (std::fwrite(header, 1, 12, file_) != 12 ||
      std::fwrite(payload.data(), 1, payload.size(), file_) != payload.size() ||
      std::fwrite(footer, 1, 4, file_) != 4) {
    throw CommsError("cannot write " + path_ + ": " + std::strerror(errno));
  }
}

void RecordWriter::Flush() {
  // Buffered records reach the file here, so a full disk shows here too.
  if (std::fflush(file_) != 0) throw CommsError("cannot write " + path_ + ": " + std::strerror(errno));
}

RecordReader::RecordReader(const std::string& path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) throw CommsError("cannot open " + path + ": " + std::strerror(errno));
}

RecordReader::~RecordReader() {
  if (file_ != nullptr) std::fclose(file_);
}

std::optional<std::string> RecordReader::Next() {
  char header[12];
  const size_t got = std::fread(header, 1, 12, file_);
  if (got == 0) return std::nullopt;
  if (got < 12) {
    error_ = "truncated record header";
    return std::nullopt;
  }
  uint64_t length = 0;
  uint32_t crc = 0;
  std::memcpy(&length, header, 8);
  std::memcpy(&crc, header + 8, 4);
  if (crc != MaskCrc(Crc32c(header, 8))) {
    error_ = "corrupt record length";
    return std::nullopt;
  }
  if (length > (1ull << 31)) {
    error_ = "record length too large";
    return std::nullopt;
  }
  std::string payload(length, '\0');
  char footer[4];
  if (std::fread(payload.data(), 1, length, file_) != length || std::fread(footer, 1, 4, file_) != 4) {
    error_ = "truncated record";
    return std::nullopt;
  }
  std::memcpy(&crc, footer, 4);
  if (crc != MaskCrc(Crc32c(payload.data(), payload.size()))) {
    error_ = "corrupt record data";
    return std::nullopt;
  }
  return payload;
}

}  // namespace troupe
