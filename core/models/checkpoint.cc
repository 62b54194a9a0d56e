// Atomic checkpoint writing and reading.
#include "core/models/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/base/errors.h"
#include "core/models/model_pool.h"
#include "core/models/trainer.h"

namespace troupe {

namespace fs = std::filesystem;

namespace {

void SyncPath(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void WriteText(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw CheckpointError("cannot write " + p.string());
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

std::string CheckpointFolderName(int iteration) {
  char name[32];
  std::snprintf(name, sizeof name, "iter-%06d", iteration);
  return name;
}

int CheckpointFolderIteration(const std::string& name) {
  if (name.rfind("iter-", 0) != 0 || name.size() == 5) return -1;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
  }
  return std::atoi(name.c_str() + 5);
}

std::string SaveCheckpoint(const std::string& run_dir, int iteration, const RunState& state, const ModelPool& pool,
                           const Trainer* trainer, int keep) {
  return SaveCheckpoint(
      run_dir, iteration, state,
      [&](const std::string& dir) {
        pool.Save(dir);
        if (trainer != nullptr) trainer->Save(dir);
      },
      keep);
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
  fs::create_directories(tmp / "state");
  save_models(tmp.string());
  for (const auto& [key, text] : state) WriteText(tmp / "state" / key, text);
  WriteText(tmp / "state" / "iteration", std::to_string(iteration));
  for (const auto& entry : fs::recursive_directory_iterator(tmp)) {
    if (entry.is_regular_file()) SyncPath(entry.path());
  }
  fs::remove_all(final_dir);
  fs::rename(tmp, final_dir);
  SyncPath(root);
  // Publish: write the pointer beside, then rename over the old one.
  WriteText(root / "latest.tmp", std::string(name) + "\n");
  SyncPath(root / "latest.tmp");
  fs::rename(root / "latest.tmp", root / "latest");
  SyncPath(root);
  // Keep the newest `keep` checkpoints.
  std::vector<fs::path> all;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("iter-", 0) == 0) all.push_back(entry.path());
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i + keep < all.size(); ++i) fs::remove_all(all[i]);
  return final_dir.string();
}

std::optional<std::string> FindCheckpoint(const std::string& dir) {
  const fs::path p(dir);
  if (fs::exists(p / "state" / "iteration")) return p.string();
  for (const fs::path root : {p / "checkpoints", p}) {
    if (!fs::exists(root / "latest")) continue;
    std::string name = ReadText(root / "latest");
    name.erase(std::remove(name.begin(), name.end(), '\n'), name.end());
    if (fs::exists(root / name / "state" / "iteration")) return (root / name).string();
  }
  return std::nullopt;
}

RunState LoadCheckpoint(const std::string& checkpoint_dir, ModelPool& pool, Trainer* trainer) {
  return LoadCheckpoint(checkpoint_dir, [&](const std::string& dir) {
    pool.Load(dir);
    if (trainer != nullptr) trainer->Load(dir);
  });
}

RunState LoadCheckpoint(const std::string& checkpoint_dir, const ModelStateIo& load_models) {
  const fs::path dir(checkpoint_dir);
  if (!fs::exists(dir / "state" / "iteration")) throw CheckpointError(checkpoint_dir + " is not a troupe checkpoint");
  load_models(dir.string());
  RunState state;
  for (const auto& entry : fs::directory_iterator(dir / "state"))
    state[entry.path().filename().string()] = ReadText(entry.path());
  return state;
}

}  // namespace troupe
