// safetensors: what troupe writes reads back (F32 exactly, BF16 rounded to
// nearest even); a file built byte by byte from the format's description
// reads as it says; 16-bit floats decode to their IEEE values; and every way
// a file can be cut short or written wrong is refused with the file and the
// tensor named.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/base/errors.h"
#include "core/safetensors.h"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

std::string Temp(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "troupe-safetensors";
  fs::create_directories(dir);
  return (dir / name).string();
}

// A file as the format describes it: length, JSON header, data.
std::string Build(const std::string& header, const std::string& data) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return s + header + data;
}

std::string Write(const std::string& name, const std::string& bytes) {
  const std::string path = Temp(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string Le16(std::initializer_list<uint16_t> values) {
  std::string s;
  for (uint16_t v : values) s += std::string{static_cast<char>(v & 0xff), static_cast<char>(v >> 8)};
  return s;
}

}  // namespace

TEST_CASE("safetensors written by troupe read back: F32 exactly, BF16 rounded, with metadata", "[safetensors]") {
  const std::vector<float> w = {1.0f, -2.5f, 3.14159265f, 1e-30f, 0.0f, 65504.0f};
  const std::vector<float> b = {0.5f, -0.25f};
  const std::string path = Temp("roundtrip.safetensors");
  WriteSafetensors(path,
                   {{"model.layers.0.mlp.up_proj.weight", {2, 3}, w.data(), SafetensorsDtype::kF32},
                    {"model.norm.weight", {2}, b.data(), SafetensorsDtype::kBF16},
                    {"lm_head.weight", {3, 2}, w.data(), SafetensorsDtype::kBF16}},
                   {{"format", "pt"}});
  CHECK(fs::file_size(path) % 8 == 0);  // header padded, the data starts 8-aligned
  SafetensorsFile f(path);
  CHECK(f.names() ==
        std::vector<std::string>{"lm_head.weight", "model.layers.0.mlp.up_proj.weight", "model.norm.weight"});
  CHECK(f.metadata().at("format") == "pt");
  const SafetensorsView& up = f.Tensor("model.layers.0.mlp.up_proj.weight");
  CHECK(up.dtype == SafetensorsDtype::kF32);
  CHECK(up.shape == std::vector<int64_t>{2, 3});
  CHECK(f.Floats("model.layers.0.mlp.up_proj.weight") == w);
  CHECK(f.Floats("model.norm.weight") == b);  // exact in bfloat16
  const std::vector<float> head = f.Floats("lm_head.weight");
  REQUIRE(head.size() == w.size());
  for (size_t i = 0; i < w.size(); ++i) CHECK(head[i] == Bf16ToFloat(FloatToBf16(w[i])));
  CHECK(head[2] == Approx(3.14159265f).epsilon(1.0 / 256));
}

TEST_CASE("a safetensors file built from the format's description reads as it says", "[safetensors]") {
  // F16: 1, -2, 0.5, 65504 (largest), 2^-14 (smallest normal), 2^-24 (smallest subnormal), +inf.
  const std::string f16 = Le16({0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0400, 0x0001, 0x7C00});
  const std::string bf16 = Le16({0x3F80, 0xC020});  // 1, -2.5
  const std::string header = R"({"b":{"dtype":"BF16","shape":[2],"data_offsets":[14,18]},)"
                             R"("h":{"dtype":"F16","shape":[7],"data_offsets":[0,14]},)"
                             R"("__metadata__":{"source":"by hand"}})";
  SafetensorsFile f(Write("by_hand.safetensors", Build(header, f16 + bf16)));
  const std::vector<float> h = f.Floats("h");
  CHECK(h == std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f, std::ldexp(1.0f, -14), std::ldexp(1.0f, -24), INFINITY});
  CHECK(f.Floats("b") == std::vector<float>{1.0f, -2.5f});
  CHECK(f.metadata().at("source") == "by hand");
}

TEST_CASE("float32 to bfloat16 rounds to nearest, ties to even, and keeps NaN", "[safetensors]") {
  CHECK(FloatToBf16(1.0f) == 0x3F80);
  CHECK(FloatToBf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);      // halfway: down to the even 0x3F80
  CHECK(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);  // halfway: up to the even 0x3F82
  CHECK(FloatToBf16(65504.0f) == 0x4780);                         // 65536 is nearest
  CHECK(FloatToBf16(-0.0f) == 0x8000);
  CHECK(std::isnan(Bf16ToFloat(FloatToBf16(NAN))));
}

TEST_CASE("damaged or wrong safetensors files are refused with the file and the tensor named", "[safetensors]") {
  const std::string data = Le16({0x3C00, 0x3C00, 0x3C00, 0x3C00});
  const std::string good = R"({"w":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}})";
  const std::string whole = Build(good, data);
  SafetensorsFile ok(Write("ok.safetensors", whole));
  CHECK(ok.Floats("w") == std::vector<float>(4, 1.0f));
  CHECK_THROWS_WITH(ok.Tensor("v"), Catch::Contains("ok.safetensors: no tensor 'v'"));

  struct Case {
    const char* name;
    std::string bytes;
    const char* says;
  };
  std::string longer = whole;
  longer[0] = static_cast<char>(0xff);  // the header claims more bytes than the file has
  const std::vector<Case> cases = {
      {"empty", "", "too short for a safetensors header"},
      {"cut", whole.substr(0, whole.size() - 3), "tensor 'w': bytes 0..8 lie outside the data"},
      {"longer", longer, "is longer than the file"},
      {"json", Build("{not json", data), "header is not JSON"},
      {"dtype", Build(R"({"w":{"dtype":"Q7","shape":[2,2],"data_offsets":[0,8]}})", data),
       "tensor 'w': unknown dtype \"Q7\""},
      {"shape", Build(R"({"w":{"dtype":"F16","shape":[3,2],"data_offsets":[0,8]}})", data),
       "tensor 'w': shape [3, 2] of F16 needs 12 bytes, but data_offsets give 8"},
      {"offsets", Build(R"({"w":{"dtype":"F16","shape":[2,2],"data_offsets":[8,0]}})", data), "tensor 'w': bytes 8..0"},
      {"fields", Build(R"({"w":{"dtype":"F16","shape":[2,2]}})", data),
       "tensor 'w': needs dtype, shape and data_offsets"},
  };
  for (const auto& c : cases) {
    const std::string path = Write(std::string(c.name) + ".safetensors", c.bytes);
    INFO(c.name);
    CHECK_THROWS_AS(SafetensorsFile(path), CheckpointError);
    CHECK_THROWS_WITH(SafetensorsFile(path), Catch::Contains(path + ": ") && Catch::Contains(c.says));
  }
  CHECK_THROWS_WITH(SafetensorsFile(Temp("missing.safetensors")), Catch::Contains("cannot open"));
  // Integer tensors read fine but are not floats.
  SafetensorsFile ints(Write("ints.safetensors",
                             Build(R"({"i":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0'))));
  CHECK_THROWS_WITH(ints.Floats("i"), Catch::Contains("tensor 'i' is I32, not a float dtype"));
}
