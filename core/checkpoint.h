// Checkpoints: models, optimisers, RNG states and the iteration, written into a
// temporary folder, synced, listed with their CRC-32C in a manifest, renamed
// into place, then published by an atomic rename of the `latest` pointer. A
// crash at any point leaves the previous checkpoint; a write error (a full
// disk) is a CheckpointError naming the file; a damaged file is found by its
// checksum before anything is loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

// Small named texts saved beside the tensors (iteration, RNG states, ...).
using RunState = std::map<std::string, std::string>;

// Writes models (and optimiser states) into the folder it is given.
using ModelStateIo = std::function<void(const std::string& dir)>;

// A checkpoint's folder name: "iter-NNNNNN".
std::string CheckpointFolderName(int iteration);
// The iteration a checkpoint folder's name says, or -1 when it is not one ("iter-NNNNNN").
int CheckpointFolderIteration(const std::string& name);

// Saves under run_dir/checkpoints/iter-NNNNNN and points run_dir/checkpoints/latest at it.
std::string SaveCheckpoint(const std::string& run_dir, int iteration, const RunState& state,
                           const ModelStateIo& save_models, int keep = 2);
// The same under `root` itself: root/iter-NNNNNN and root/latest (e.g. a model's snapshots).
std::string SaveCheckpointIn(const std::string& root, int iteration, const RunState& state,
                             const ModelStateIo& save_models, int keep);

// Whether a run folder (or a folder that is a checkpoint itself) has had a
// checkpoint published: cheap, it reads no file and checks no checksum.
bool HasCheckpoint(const std::string& dir);
// The newest complete checkpoint folder under a run folder (or the folder
// itself when it is one): the one `latest` names, or when its files do not
// match its manifest, the newest other that does. Each one passed over is
// added to `skipped` as "FOLDER: why".
std::optional<std::string> FindCheckpoint(const std::string& dir, std::vector<std::string>* skipped = nullptr);
// "" when a checkpoint folder's files match the CRC-32C manifest written with
// them (or it predates manifests); otherwise the first file that does not, and how.
std::string CheckpointProblem(const std::string& checkpoint_dir);

// Checks the folder against its manifest, loads models (and optimisers) through
// `load_models`, and returns the saved texts.
RunState LoadCheckpoint(const std::string& checkpoint_dir, const ModelStateIo& load_models);

}  // namespace troupe
