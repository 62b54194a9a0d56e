// CRC-32C (Castagnoli), as used by TFRecord framing and session recordings.
#pragma once

#include <cstddef>
#include <cstdint>

namespace troupe {

uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);
// TFRecord's masked CRC: rotates and offsets so CRCs of CRCs stay useful.
uint32_t MaskCrc(uint32_t crc);

}  // namespace troupe
