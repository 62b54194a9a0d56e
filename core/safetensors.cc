// safetensors reading (memory-mapped, checked whole), writing, and the 16-bit float conversions.
#include "core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/base/file_io.h"

namespace troupe {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit is 100 MB

struct DtypeInfo {
  SafetensorsDtype dtype;
  const char* name;
  size_t bytes;
};

constexpr DtypeInfo kDtypes[] = {
    {SafetensorsDtype::kF32, "F32", 4},   {SafetensorsDtype::kF16, "F16", 2}, {SafetensorsDtype::kBF16, "BF16", 2},
    {SafetensorsDtype::kF64, "F64", 8},   {SafetensorsDtype::kI64, "I64", 8}, {SafetensorsDtype::kI32, "I32", 4},
    {SafetensorsDtype::kI16, "I16", 2},   {SafetensorsDtype::kI8, "I8", 1},   {SafetensorsDtype::kU8, "U8", 1},
    {SafetensorsDtype::kBool, "BOOL", 1},
};

const DtypeInfo& Info(SafetensorsDtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d;
  }
  throw CheckpointError("safetensors: a dtype without a name");
}

uint16_t Load16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

}  // namespace

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const char* SafetensorsDtypeName(SafetensorsDtype dtype) { return Info(dtype).name; }
size_t SafetensorsDtypeBytes(SafetensorsDtype dtype) { return Info(dtype).bytes; }

bool ParseSafetensorsDtype(const std::string& name, SafetensorsDtype* dtype) {
  for (const auto& d : kDtypes) {
    if (name == d.name) {
      *dtype = d.dtype;
      return true;
    }
  }
  return false;
}

int64_t SafetensorsView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  auto fail = [&](const std::string& why) { return CheckpointError(path + ": " + why); };
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw fail(std::string("cannot stat: ") + std::strerror(errno));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      ::close(fd);
      throw fail(std::string("cannot map: ") + std::strerror(errno));
    }
    map_ = static_cast<const unsigned char*>(m);
  }
  ::close(fd);
  try {
    if (size_ < 8) throw fail("too short for a safetensors header (" + std::to_string(size_) + " bytes)");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | map_[i];
    if (n > kMaxHeaderBytes) throw fail("header length " + std::to_string(n) + " is over the format's 100 MB limit");
    if (n > size_ - 8) {
      throw fail("header of " + std::to_string(n) + " bytes is longer than the file (" + std::to_string(size_) +
                 " bytes): cut short?");
    }
    nlohmann::json header;
    try {
      header = nlohmann::json::parse(map_ + 8, map_ + 8 + n);
    } catch (const nlohmann::json::exception& e) {
      throw fail(std::string("header is not JSON: ") + e.what());
    }
    if (!header.is_object()) throw fail("header is not a JSON object");
    const unsigned char* buffer = map_ + 8 + n;
    const uint64_t buffer_bytes = size_ - 8 - n;
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        if (!entry.is_object()) throw fail("__metadata__ is not an object");
        for (const auto& [k, v] : entry.items()) {
          if (!v.is_string()) throw fail("__metadata__ value '" + k + "' is not a string");
          metadata_[k] = v.get<std::string>();
        }
        continue;
      }
      const std::string tensor = name;  // (a lambda may not capture a structured binding before C++20)
      auto bad = [&](const std::string& why) { return fail("tensor '" + tensor + "': " + why); };
      if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
          !entry.contains("data_offsets")) {
        throw bad("needs dtype, shape and data_offsets");
      }
      SafetensorsView v;
      v.name = name;
      if (!entry["dtype"].is_string() || !ParseSafetensorsDtype(entry["dtype"].get<std::string>(), &v.dtype)) {
        throw bad("unknown dtype " + entry["dtype"].dump());
      }
      const auto& shape = entry["shape"];
      if (!shape.is_array()) throw bad("shape is not a list");
      uint64_t numel = 1;
      for (const auto& d : shape) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0) throw bad("shape " + shape.dump() + " is not sizes");
        v.shape.push_back(d.get<int64_t>());
        const uint64_t dim = static_cast<uint64_t>(v.shape.back());
        if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim) throw bad("shape is too large");
        numel *= dim;
      }
      const auto& offsets = entry["data_offsets"];
      if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
          !offsets[1].is_number_unsigned()) {
        throw bad("data_offsets is not [begin, end]");
      }
      const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
      if (begin > end || end > buffer_bytes) {
        throw bad("bytes " + std::to_string(begin) + ".." + std::to_string(end) + " lie outside the data (" +
                  std::to_string(buffer_bytes) + " bytes): cut short?");
      }
      const size_t unit = SafetensorsDtypeBytes(v.dtype);
      if (numel > std::numeric_limits<uint64_t>::max() / unit || numel * unit != end - begin) {
        throw bad("shape " + ShapeText(v.shape) + " of " + SafetensorsDtypeName(v.dtype) + " needs " +
                  std::to_string(numel * unit) + " bytes, but data_offsets give " + std::to_string(end - begin));
      }
      v.data = buffer + begin;
      v.bytes = static_cast<size_t>(end - begin);
      tensors_.emplace(name, std::move(v));
    }
  } catch (...) {
    if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), size_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), size_);
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, view] : tensors_) out.push_back(name);
  return out;
}

const SafetensorsView& SafetensorsFile::Tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw CheckpointError(path_ + ": no tensor '" + name + "'");
  return it->second;
}

std::vector<float> SafetensorsFile::Floats(const std::string& name) const {
  std::vector<float> out(static_cast<size_t>(Tensor(name).numel()));
  CopyFloats(name, out.data());
  return out;
}

void SafetensorsFile::CopyFloats(const std::string& name, float* out) const {
  const SafetensorsView& v = Tensor(name);
  const size_t n = static_cast<size_t>(v.numel());
  switch (v.dtype) {
    case SafetensorsDtype::kF32: std::memcpy(out, v.data, n * sizeof(float)); break;
    case SafetensorsDtype::kBF16:
      for (size_t i = 0; i < n; ++i) out[i] = Bf16ToFloat(Load16(v.data + 2 * i));
      break;
    case SafetensorsDtype::kF16:
      for (size_t i = 0; i < n; ++i) out[i] = F16ToFloat(Load16(v.data + 2 * i));
      break;
    default:
      throw CheckpointError(path_ + ": tensor '" + name + "' is " + SafetensorsDtypeName(v.dtype) +
                            ", not a float dtype (F32, F16, BF16)");
  }
}

void WriteSafetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  std::vector<int64_t> numels;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.dtype != SafetensorsDtype::kF32 && t.dtype != SafetensorsDtype::kBF16) {
      throw CheckpointError(path + ": tensor '" + t.name + "': troupe writes F32 or BF16");
    }
    if (!seen.insert(t.name).second || t.name == "__metadata__") {
      throw CheckpointError(path + ": tensor name '" + t.name + "' is used twice or reserved");
    }
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    numels.push_back(numel);
    const uint64_t bytes = static_cast<uint64_t>(numel) * SafetensorsDtypeBytes(t.dtype);
    header[t.name] = {
        {"dtype", SafetensorsDtypeName(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-aligned, as the reference writer pads
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw CheckpointError("cannot write " + tmp);
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>((text.size() >> (8 * i)) & 0xff);
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::vector<unsigned char> half;
    for (size_t k = 0; k < tensors.size(); ++k) {
      const SafetensorsTensor& t = tensors[k];
      const int64_t numel = numels[k];
      if (t.dtype == SafetensorsDtype::kF32) {
        out.write(reinterpret_cast<const char*>(t.values), static_cast<std::streamsize>(numel * sizeof(float)));
        continue;
      }
      half.resize(static_cast<size_t>(numel) * 2);
      for (int64_t i = 0; i < numel; ++i) {
        const uint16_t b = FloatToBf16(t.values[i]);
        half[2 * i] = static_cast<unsigned char>(b & 0xff);
        half[2 * i + 1] = static_cast<unsigned char>(b >> 8);
      }
      out.write(reinterpret_cast<const char*>(half.data()), static_cast<std::streamsize>(half.size()));
    }
    out.close();  // the last bytes reach the file here: check after it
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw CheckpointError("cannot write " + tmp + ": " + std::strerror(errno));
    }
  }
  SyncToDisk(tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw CheckpointError("cannot move " + tmp + " to " + path + ": " + ec.message());
}

namespace {

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

SafetensorsModel::SafetensorsModel(const std::string& dir) : dir_(dir) {
  const std::string single = dir + "/model.safetensors", index = dir + "/model.safetensors.index.json";
  if (std::filesystem::exists(single)) {
    files_.push_back(std::make_unique<SafetensorsFile>(single));
    for (const std::string& name : files_.back()->names()) where_[name] = files_.back().get();
    return;
  }
  if (!std::filesystem::exists(index)) {
    throw CheckpointError(dir + " holds neither model.safetensors nor model.safetensors.index.json");
  }
  nlohmann::json j;
  try {
    std::ifstream in(index);
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(index + ": not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
    throw CheckpointError(index + ": no \"weight_map\" object");
  }
  std::map<std::string, const SafetensorsFile*> opened;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) throw CheckpointError(index + ": tensor '" + name + "' maps to no file name");
    const std::string shard = file.get<std::string>();
    if (shard.find('/') != std::string::npos) throw CheckpointError(index + ": shard '" + shard + "' is not in the folder");
    auto it = opened.find(shard);
    if (it == opened.end()) {
      files_.push_back(std::make_unique<SafetensorsFile>(dir + "/" + shard));
      it = opened.emplace(shard, files_.back().get()).first;
    }
    if (!it->second->Has(name)) {
      throw CheckpointError(index + ": tensor '" + name + "' is not in " + it->second->path());
    }
    where_[name] = it->second;
  }
}

SafetensorsModel::~SafetensorsModel() = default;

const SafetensorsFile& SafetensorsModel::FileOf(const std::string& name) const {
  const auto it = where_.find(name);
  if (it == where_.end()) throw CheckpointError(dir_ + ": the model's weights lack tensor '" + name + "'");
  return *it->second;
}

void WriteSafetensorsModel(const std::string& dir, const std::vector<SafetensorsTensor>& tensors,
                           const std::map<std::string, std::string>& metadata, size_t max_shard_bytes) {
  std::vector<std::vector<SafetensorsTensor>> shards(1);
  size_t total = 0, current = 0;
  for (const SafetensorsTensor& t : tensors) {
    const size_t bytes = static_cast<size_t>(Numel(t.shape)) * SafetensorsDtypeBytes(t.dtype);
    if (max_shard_bytes > 0 && current > 0 && current + bytes > max_shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(t);
    current += bytes;
    total += bytes;
  }
  // A folder holds one form: the other's leftovers would shadow or confuse it.
  if (shards.size() == 1) {
    WriteSafetensors(dir + "/model.safetensors", tensors, metadata);
    std::filesystem::remove(dir + "/model.safetensors.index.json");
    return;
  }
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t k = 0; k < shards.size(); ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, shards.size());
    WriteSafetensors(dir + "/" + name, shards[k], metadata);
    for (const SafetensorsTensor& t : shards[k]) weight_map[t.name] = name;
  }
  const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  WriteFileAtomically(dir + "/model.safetensors.index.json", index.dump(2) + "\n");
  std::filesystem::remove(dir + "/model.safetensors");
}

float Bf16ToFloat(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t FloatToBf16(float value) {
  uint32_t u;
  std::memcpy(&u, &value, sizeof u);
  if (std::isnan(value)) return static_cast<uint16_t>((u >> 16) | 0x40);  // a quiet NaN, sign kept
  u += 0x7fff + ((u >> 16) & 1);                                          // round to nearest, ties to even
  return static_cast<uint16_t>(u >> 16);
}

float F16ToFloat(uint16_t bits) {
  const uint32_t sign = (bits >> 15) & 1, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  float magnitude;
  if (exponent == 0) magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero and subnormals
  else if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

}  // namespace troupe
