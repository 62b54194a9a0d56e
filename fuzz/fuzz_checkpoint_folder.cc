// A checkpoint folder as resume finds and reads it (core/checkpoint.h): the
// `latest` pointer, each iter-N folder's manifest of checksums and its state
// texts. The input is a folder in one file: sections "@@ PATH" on a line of
// their own, each followed by the file's bytes (the seeds are real folders).
#include <filesystem>
#include <string>
#include <string_view>

#include "core/checkpoint.h"
#include "fuzz/fuzz_support.h"

namespace fs = std::filesystem;

namespace {

// Only plain relative names below the run folder: the fuzzer writes files.
bool Safe(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.size() > 200) return false;
  for (const auto& part : fs::path(path)) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path run = fs::path(troupe::fuzz::WorkDir()) / "run";
  fs::remove_all(run);
  fs::create_directories(run);
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t at = in.find("@@ ");
  while (at != std::string_view::npos) {
    const size_t name_end = in.find('\n', at);
    if (name_end == std::string_view::npos) break;
    const std::string name(in.substr(at + 3, name_end - at - 3));
    size_t next = in.find("\n@@ ", name_end);
    const std::string_view body = in.substr(name_end + 1, next == std::string_view::npos ? std::string_view::npos
                                                                                          : next - name_end - 1);
    std::error_code ec;  // a name that clashes with an earlier one's folder is skipped, not a finding
    if (Safe(name)) fs::create_directories((run / name).parent_path(), ec);
    if (Safe(name) && !ec) {
      troupe::fuzz::AsFile(reinterpret_cast<const uint8_t*>(body.data()), body.size(), "run/" + name);
    }
    at = next == std::string_view::npos ? next : next + 1;
  }
  troupe::fuzz::Refusing([&] {
    std::vector<std::string> skipped;
    troupe::HasCheckpoint(run.string());
    if (const auto found = troupe::FindCheckpoint(run.string(), &skipped)) {
      troupe::LoadCheckpoint(*found, [](const std::string&) {});
    }
  });
  return 0;
}
