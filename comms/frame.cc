// Frame encoding and checked decoding.
#include "comms/frame.h"

#include <cstdint>
#include <cstring>

namespace troupe {

namespace {

constexpr char kMagic[4] = {'T', 'R', 'P', 'E'};

void PutU16(unsigned char* p, uint16_t v) {
  p[0] = static_cast<unsigned char>(v);
  p[1] = static_cast<unsigned char>(v >> 8);
}
void PutU32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint16_t GetU16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t GetU32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

}  // namespace

const char* FrameStatusName(FrameStatus status) {
  switch (status) {
    case FrameStatus::kOk: return "ok";
    case FrameStatus::kTruncated: return "truncated";
    case FrameStatus::kBadMagic: return "bad magic";
    case FrameStatus::kWrongVersion: return "wrong protocol version";
    case FrameStatus::kOversized: return "oversized";
    case FrameStatus::kMalformed: return "malformed body";
  }
  return "?";
}

void FrameRejects::Count(FrameStatus status) {
  switch (status) {
    case FrameStatus::kTruncated: ++truncated; break;
    case FrameStatus::kBadMagic: ++bad_magic; break;
    case FrameStatus::kWrongVersion: ++wrong_version; break;
    case FrameStatus::kOversized: ++oversized; break;
    case FrameStatus::kMalformed: ++malformed; break;
    case FrameStatus::kOk: break;
  }
}

size_t EncodedFrameSize(const google::protobuf::MessageLite& body) { return kFrameHeaderBytes + body.ByteSizeLong(); }

void EncodeFrameInto(const google::protobuf::MessageLite& body, size_t body_size, void* dst, uint16_t flags) {
  auto* p = static_cast<unsigned char*>(dst);
  std::memcpy(p, kMagic, 4);
  PutU16(p + 4, kProtocolVersion);
  PutU16(p + 6, flags);
  PutU32(p + 8, static_cast<uint32_t>(body_size));
  body.SerializeWithCachedSizesToArray(p + kFrameHeaderBytes);
}

void EncodeFrame(const google::protobuf::MessageLite& body, std::string* out) {
  const size_t body_size = body.ByteSizeLong();
  out->resize(kFrameHeaderBytes + body_size);
  EncodeFrameInto(body, body_size, out->data());
}

FrameStatus DecodeFrame(const void* data, size_t size, size_t max_bytes, google::protobuf::MessageLite* body,
                        size_t* attachment_offset) {
  if (size > max_bytes) return FrameStatus::kOversized;
  if (size < kFrameHeaderBytes) return FrameStatus::kTruncated;
  const auto* p = static_cast<const unsigned char*>(data);
  if (std::memcmp(p, kMagic, 4) != 0) return FrameStatus::kBadMagic;
  if (GetU16(p + 4) != kProtocolVersion) return FrameStatus::kWrongVersion;
  const uint16_t flags = GetU16(p + 6);
  if ((flags & ~kFlagAttachment) != 0) return FrameStatus::kMalformed;  // flags this version does not know
  const bool attached = (flags & kFlagAttachment) != 0;
  if (attached && attachment_offset == nullptr) return FrameStatus::kMalformed;  // the receiver takes none
  const uint32_t length = GetU32(p + 8);
  if (length > size - kFrameHeaderBytes || (!attached && length != size - kFrameHeaderBytes)) {
    return FrameStatus::kTruncated;
  }
  if (attachment_offset != nullptr) *attachment_offset = kFrameHeaderBytes + length;
  if (!body->ParseFromArray(p + kFrameHeaderBytes, static_cast<int>(length))) return FrameStatus::kMalformed;
  return FrameStatus::kOk;
}

}  // namespace troupe
