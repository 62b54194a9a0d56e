// Atomic checkpoint writing and reading.
#include "core/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "core/base/crc32c.h"
#include "core/base/errors.h"
#include "core/base/file_io.h"

namespace troupe {

namespace fs = std::filesystem;

namespace {

// LibTorch's messages carry a stack trace after their first line.
std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

void WriteText(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  out.close();  // the last bytes reach the file here: check after it
  if (!out) throw CheckpointError("cannot write " + p.string() + ": " + std::strerror(errno));
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// CRC-32C of a file's bytes, and its size; nullopt when it cannot be read.
std::optional<std::pair<uint32_t, uintmax_t>> FileCrc(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<char> block(1 << 20);
  uint32_t crc = 0;
  uintmax_t size = 0;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const std::streamsize got = in.gcount();
    crc = Crc32c(block.data(), static_cast<size_t>(got), crc);
    size += static_cast<uintmax_t>(got);
  }
  if (in.bad()) return std::nullopt;
  return std::make_pair(crc, size);
}

// A manifest's path names a file below the checkpoint folder: relative, no "..".
bool InsideFolder(const std::string& file) {
  const fs::path p(file);
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory()) return false;
  for (const auto& part : p) {
    if (part == "..") return false;
  }
  return true;
}

// The manifest: one line per file of the checkpoint, "CRC32C SIZE PATH", written last.
constexpr char kManifest[] = "manifest.crc32c";

void WriteManifest(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), dir).generic_string());
  }
  std::sort(files.begin(), files.end());
  std::ostringstream manifest;
  for (const std::string& f : files) {
    const auto crc = FileCrc(dir / f);
    if (!crc) throw CheckpointError("cannot read back " + (dir / f).string());
    char line[32];
    std::snprintf(line, sizeof line, "%08x ", crc->first);
    manifest << line << crc->second << " " << f << "\n";
  }
  WriteText(dir / kManifest, manifest.str());
}

}  // namespace

std::string CheckpointFolderName(int iteration) {
  char name[32];
  std::snprintf(name, sizeof name, "iter-%06d", iteration);
  return name;
}

int CheckpointFolderIteration(const std::string& name) {
  if (name.rfind("iter-", 0) != 0 || name.size() == 5 || name.size() > 14) return -1;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
  }
  return std::atoi(name.c_str() + 5);
}

std::string SaveCheckpoint(const std::string& run_dir, int iteration, const RunState& state,
                           const ModelStateIo& save_models, int keep) {
  return SaveCheckpointIn((fs::path(run_dir) / "checkpoints").string(), iteration, state, save_models, keep);
}

std::string SaveCheckpointIn(const std::string& root_dir, int iteration, const RunState& state,
                             const ModelStateIo& save_models, int keep) {
  const fs::path root(root_dir);
  fs::create_directories(root);
  const std::string name = CheckpointFolderName(iteration);
  const fs::path tmp = root / (std::string(".tmp-") + name);
  const fs::path final_dir = root / name;
  fs::remove_all(tmp);
  try {
    fs::create_directories(tmp / "state");
    save_models(tmp.string());
    for (const auto& [key, text] : state) WriteText(tmp / "state" / key, text);
    WriteText(tmp / "state" / "iteration", std::to_string(iteration));
    for (const auto& entry : fs::recursive_directory_iterator(tmp)) {
      if (entry.is_regular_file()) SyncToDisk(entry.path());
    }
    // Checksums of what is on the disk now, so a later load can tell a damaged file.
    WriteManifest(tmp);
    SyncToDisk(tmp / kManifest);
  } catch (const std::exception& e) {
    // A full disk, say: the half-written folder goes (freeing what it took);
    // the previous checkpoint and `latest` are untouched.
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw CheckpointError("cannot write checkpoint " + final_dir.string() + ": " + FirstLine(e.what()));
  }
  fs::remove_all(final_dir);
  fs::rename(tmp, final_dir);
  SyncToDisk(root);
  // Publish: write the pointer beside, then rename over the old one.
  WriteText(root / "latest.tmp", std::string(name) + "\n");
  SyncToDisk(root / "latest.tmp");
  fs::rename(root / "latest.tmp", root / "latest");
  SyncToDisk(root);
  // Keep the newest `keep` checkpoints.
  std::vector<fs::path> all;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("iter-", 0) == 0) all.push_back(entry.path());
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i + keep < all.size(); ++i) fs::remove_all(all[i]);
  return final_dir.string();
}

std::string CheckpointProblem(const std::string& checkpoint_dir) {
  const fs::path dir(checkpoint_dir);
  if (!fs::exists(dir / "state" / "iteration")) return "not a troupe checkpoint (no state/iteration)";
  if (!fs::exists(dir / kManifest)) return "";  // written before checksums: nothing to check it against
  std::istringstream manifest(ReadText(dir / kManifest));
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream fields(line);
    std::string crc_hex, file;
    uintmax_t size = 0;
    if (!(fields >> crc_hex >> size) || !std::getline(fields >> std::ws, file) || file.empty()) {
      return std::string(kManifest) + ": unreadable line '" + line + "'";
    }
    if (!InsideFolder(file)) return std::string(kManifest) + " names a file outside the checkpoint: '" + file + "'";
    const auto have = FileCrc(dir / file);
    if (!have) return file + " is missing";
    if (have->second != size) {
      return file + " has " + std::to_string(have->second) + " bytes, the manifest says " + std::to_string(size);
    }
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", have->first);
    if (crc_hex != hex) return file + " is damaged (CRC-32C " + hex + ", the manifest says " + crc_hex + ")";
  }
  return "";
}

bool HasCheckpoint(const std::string& dir) {
  const fs::path p(dir);
  return fs::exists(p / "state" / "iteration") || fs::exists(p / "checkpoints" / "latest") || fs::exists(p / "latest");
}

std::optional<std::string> FindCheckpoint(const std::string& dir, std::vector<std::string>* skipped) {
  const fs::path p(dir);
  if (fs::exists(p / "state" / "iteration")) {  // a checkpoint folder itself
    const std::string problem = CheckpointProblem(p.string());
    if (problem.empty()) return p.string();
    if (skipped != nullptr) skipped->push_back(p.string() + ": " + problem);
    return std::nullopt;
  }
  for (const fs::path root : {p / "checkpoints", p}) {
    if (!fs::exists(root / "latest")) continue;
    // The one `latest` names first, then every other, newest first.
    std::string latest = ReadText(root / "latest");
    latest.erase(std::remove(latest.begin(), latest.end(), '\n'), latest.end());
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(root)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && CheckpointFolderIteration(name) >= 0 && name != latest) names.push_back(name);
    }
    std::sort(names.rbegin(), names.rend());
    // `latest` holds a folder name written by SaveCheckpointIn; anything else is damage.
    if (CheckpointFolderIteration(latest) >= 0) names.insert(names.begin(), latest);
    else if (skipped != nullptr) skipped->push_back((root / "latest").string() + ": names no checkpoint folder");
    for (const std::string& name : names) {
      std::error_code ec;
      if (!fs::exists(root / name, ec)) continue;
      const std::string problem = CheckpointProblem((root / name).string());
      if (problem.empty()) return (root / name).string();
      if (skipped != nullptr) skipped->push_back((root / name).string() + ": " + problem);
    }
  }
  return std::nullopt;
}

RunState LoadCheckpoint(const std::string& checkpoint_dir, const ModelStateIo& load_models) {
  const fs::path dir(checkpoint_dir);
  if (!fs::exists(dir / "state" / "iteration")) throw CheckpointError(checkpoint_dir + " is not a troupe checkpoint");
  const std::string problem = CheckpointProblem(checkpoint_dir);
  if (!problem.empty()) throw CheckpointError(checkpoint_dir + ": " + problem);
  load_models(dir.string());
  RunState state;
  for (const auto& entry : fs::directory_iterator(dir / "state")) {
    if (!entry.is_regular_file()) throw CheckpointError(entry.path().string() + " is not a file");
    state[entry.path().filename().string()] = ReadText(entry.path());
  }
  const std::string& iteration = state["iteration"];
  if (iteration.empty() || iteration.size() > 9 || iteration.find_first_not_of("0123456789") != std::string::npos) {
    throw CheckpointError(checkpoint_dir + "/state/iteration is not an iteration: '" + iteration.substr(0, 40) + "'");
  }
  return state;
}

}  // namespace troupe
