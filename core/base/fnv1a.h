// FNV-1a, 64-bit: a small, stable hash (the same value on every machine and
// build), for splits that must not move and for digests of parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace troupe {

constexpr uint64_t kFnv1aOffset = 1469598103934665603ULL;
constexpr uint64_t kFnv1aPrime = 1099511628211ULL;

// Mixes one value (a byte, or a whole word) into `h`.
constexpr uint64_t Fnv1aMix(uint64_t h, uint64_t value) { return (h ^ value) * kFnv1aPrime; }

// Mixes each byte of [data, data + size) into `h`.
inline uint64_t Fnv1aBytes(const void* data, size_t size, uint64_t h = kFnv1aOffset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = Fnv1aMix(h, bytes[i]);
  return h;
}

inline uint64_t Fnv1aBytes(std::string_view text, uint64_t h = kFnv1aOffset) {
  return Fnv1aBytes(text.data(), text.size(), h);
}

}  // namespace troupe
