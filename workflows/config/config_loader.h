// Loading workflow files (protobuf text format) with the position of every
// field kept, so that syntax, schema and semantic errors all read
// "file:line:col: message". Also applies --set field.path=value overrides.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comms/proto/workflow.pb.h"

namespace google::protobuf {
class TextFormat;
}

namespace troupe {

struct SourcePos {
  int line = 0;  // 1-based; 0 when unknown (e.g. a value set on the command line)
  int col = 0;
};

// One step of a field path: a field name and, for repeated fields, an index.
struct PathStep {
  const char* field;
  int index = -1;
};

class LoadedWorkflow {
 public:
  LoadedWorkflow();
  ~LoadedWorkflow();
  LoadedWorkflow(LoadedWorkflow&&) noexcept;
  LoadedWorkflow& operator=(LoadedWorkflow&&) noexcept;

  config::Workflow proto;
  std::string file;
  std::string text;

  // Where a field was written, e.g. Locate({{"role", 2}, {"model"}}).
  SourcePos Locate(const std::vector<PathStep>& path) const;
  // Throws ConfigError at that position.
  [[noreturn]] void Fail(const std::vector<PathStep>& path, const std::string& message) const;

  struct Positions;
  std::unique_ptr<Positions> positions;
};

LoadedWorkflow LoadWorkflowFile(const std::string& path);
LoadedWorkflow ParseWorkflowText(const std::string& text, const std::string& file_name);

// Applies "a.b[2].c=value"; throws ConfigError naming the override when it does not fit.
void ApplyOverride(LoadedWorkflow& workflow, const std::string& assignment);

}  // namespace troupe
