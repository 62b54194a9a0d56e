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
#include <memory>
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

// The weights of a model folder: model.safetensors, or the shards that
// model.safetensors.index.json names ({"weight_map": {tensor: file}}), each
// mapped and checked when opened.
class SafetensorsModel {
 public:
  // Throws CheckpointError naming the folder when it has neither, the index
  // when it is not one, and a shard's file when that is bad.
  explicit SafetensorsModel(const std::string& dir);
  ~SafetensorsModel();
  bool Has(const std::string& name) const { return where_.count(name) > 0; }
  // The file holding `name`; CheckpointError naming the folder and the tensor when none does.
  const SafetensorsFile& FileOf(const std::string& name) const;
  size_t shards() const { return files_.size(); }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> where_;
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

// Writes a model folder's weights: dir/model.safetensors, or, when they take
// more than `max_shard_bytes` (> 0), shards model-0000k-of-0000n.safetensors
// of at most that size each (a larger tensor alone in its shard) and
// model.safetensors.index.json. Every file is written atomically, the index last.
void WriteSafetensorsModel(const std::string& dir, const std::vector<SafetensorsTensor>& tensors,
                           const std::map<std::string, std::string>& metadata, size_t max_shard_bytes = 0);

// "[2, 3]": a shape as error messages show it.
std::string ShapeText(const std::vector<int64_t>& shape);

// Half-precision conversions of the format's 16-bit float dtypes.
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);  // round to nearest even; NaN stays NaN
float F16ToFloat(uint16_t bits);

}  // namespace troupe
