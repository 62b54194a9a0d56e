// Wire frames: a 12-byte header (magic "TRPE", u16 protocol version, u16 flags,
// u32 body length, little-endian), a Protobuf body and, when the flags say so,
// an attachment: raw bytes after the body, up to the end of the frame. Bulk
// bytes travel as an attachment so that Protobuf never copies them: the sender
// writes them once into the frame, the receiver reads them where they lie. Decoding checks size,
// magic, version and length before parsing, and says why a frame is rejected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <google/protobuf/message_lite.h>

namespace troupe {

constexpr uint16_t kProtocolVersion = 6;  // 2: attachments; 3: Welcome carries a ModelServeSpec; 4: hybrid steps;
                                          // 5: data-parallel learners (UpdateRequest.learners);
                                          // 6: models start from checkpoints (ModelServeSpec.init)
constexpr size_t kFrameHeaderBytes = 12;
constexpr size_t kDefaultMaxFrameBytes = 64u << 20;  // 64 MiB, attachment included
constexpr uint16_t kFlagAttachment = 1;              // raw bytes follow the body

enum class FrameStatus { kOk, kTruncated, kBadMagic, kWrongVersion, kOversized, kMalformed };

const char* FrameStatusName(FrameStatus status);

// Serialises `body` behind a header into `out` (replacing its contents).
void EncodeFrame(const google::protobuf::MessageLite& body, std::string* out);
size_t EncodedFrameSize(const google::protobuf::MessageLite& body);
// Writes header and body into `dst`, which must hold the header and `body_size`
// bytes (and, with `flags` kFlagAttachment, the attachment the caller writes after them).
void EncodeFrameInto(const google::protobuf::MessageLite& body, size_t body_size, void* dst, uint16_t flags = 0);

// Checks and parses one frame into `body`. A frame with an attachment is
// refused (malformed) unless `attachment_offset` is given; it receives where
// the attachment starts (the frame's size when there is none).
FrameStatus DecodeFrame(const void* data, size_t size, size_t max_bytes, google::protobuf::MessageLite* body,
                        size_t* attachment_offset = nullptr);

// Counts of frames refused, by reason (kept by each receiving socket).
struct FrameRejects {
  int64_t truncated = 0, bad_magic = 0, wrong_version = 0, oversized = 0, malformed = 0;
  int64_t total() const { return truncated + bad_magic + wrong_version + oversized + malformed; }
  void Count(FrameStatus status);
};

}  // namespace troupe
