// Run folders: preparing.
#include "workflows/run/run_folder.h"

#include <google/protobuf/text_format.h>

#include <filesystem>
#include <fstream>

#include "core/base/errors.h"
#include "core/checkpoint.h"
#include "core/base/file_io.h"

namespace troupe {

namespace fs = std::filesystem;

void PrepareRunFolder(const std::string& dir, const CompiledWorkflow& w, bool resume) {
  fs::create_directories(dir);
  if (!resume && HasCheckpoint(dir)) {  // a damaged run is still not overwritten
    throw Error("run folder " + dir + " already holds a run: pass --resume to continue it, or another --out");
  }
  std::string resolved;
  google::protobuf::TextFormat::PrintToString(w.proto, &resolved);
  WriteFileAtomically((fs::path(dir) / "workflow.resolved.textproto").string(),
                      "# resolved from " + w.file + "\n" + resolved);
}

}  // namespace troupe
