// Wire frames: a 12-byte header (magic "TRPE", u16 protocol version, u16 flags,
// u32 body length, little-endian) and a Protobuf body. Decoding checks size,
// magic, version and length before parsing, and says why a frame is rejected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <google/protobuf/message_lite.h>

namespace troupe {

constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kFrameHeaderBytes = 12;
constexpr size_t kDefaultMaxFrameBytes = 64u << 20;  // 64 MiB

enum class FrameStatus { kOk, kTruncated, kBadMagic, kWrongVersion, kOversized, kMalformed };

const char* FrameStatusName(FrameStatus status);

// Serialises `body` behind a header into `out` (replacing its contents).
void EncodeFrame(const google::protobuf::MessageLite& body, std::string* out);
size_t EncodedFrameSize(const google::protobuf::MessageLite& body);
// Writes the frame into `dst`, which must hold EncodedFrameSize(body) bytes.
void EncodeFrameInto(const google::protobuf::MessageLite& body, size_t body_size, void* dst);

// Checks and parses one frame into `body`.
FrameStatus DecodeFrame(const void* data, size_t size, size_t max_bytes, google::protobuf::MessageLite* body);

// Counts of frames refused, by reason (kept by each receiving socket).
struct FrameRejects {
  int64_t truncated = 0, bad_magic = 0, wrong_version = 0, oversized = 0, malformed = 0;
  int64_t total() const { return truncated + bad_magic + wrong_version + oversized + malformed; }
  void Count(FrameStatus status);
};

}  // namespace troupe
