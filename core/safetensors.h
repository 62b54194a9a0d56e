// safetensors, the field's checkpoint format (Hugging Face): an 8-byte
// little-endian header length N, N bytes of JSON giving each tensor's dtype,
// shape and byte range ({"name": {"dtype", "shape", "data_offsets"}, ...,
// "__metadata__": {...}}), then the tensors' bytes (little-endian, row-major).
// Files are read by memory mapping and checked whole when opened; writing is
// atomic (a temporary file renamed into place). Torch-free: the model code
// turns views into tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace troupe {

enum class SafetensorsDtype { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };

// "F32", "BF16", ...; the dtype of a name, or false when the format has no such dtype.
const char* SafetensorsDtypeName(SafetensorsDtype dtype);
bool ParseSafetensorsDtype(const std::string& name, SafetensorsDtype* dtype);
size_t SafetensorsDtypeBytes(SafetensorsDtype dtype);

// One tensor of an open file: its bytes stay in the mapping.
struct SafetensorsView {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<int64_t> shape;
  const unsigned char* data = nullptr;  // not aligned in general
  size_t bytes = 0;
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and checks the file: the header's length and JSON, every tensor's
  // dtype, shape and byte range. Throws CheckpointError naming the file (and
  // the tensor) on anything a writer could have got wrong or a crash cut short.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  std::vector<std::string> names() const;  // sorted
  bool Has(const std::string& name) const { return tensors_.count(name) > 0; }
  // Throws CheckpointError naming the file and the tensor when it is absent.
  const SafetensorsView& Tensor(const std::string& name) const;
  // An F32, F16 or BF16 tensor's values as float32.
  std::vector<float> Floats(const std::string& name) const;
  // The same, written into `out` (numel values): one copy out of the mapping.
  void CopyFloats(const std::string& name, float* out) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  const unsigned char* map_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, SafetensorsView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A float32 tensor to write, stored as F32 or BF16 (rounded to nearest even).
struct SafetensorsTensor {
  std::string name;
  std::vector<int64_t> shape;
  const float* values = nullptr;  // numel values
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
};

// Writes `tensors` (names unique) and `metadata` to `path`, atomically.
void WriteSafetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// "[2, 3]": a shape as error messages show it.
std::string ShapeText(const std::vector<int64_t>& shape);

// Half-precision conversions of the format's 16-bit float dtypes.
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);  // round to nearest even; NaN stays NaN
float F16ToFloat(uint16_t bits);

}  // namespace troupe
