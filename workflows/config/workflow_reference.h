// The workflow file reference (docs/reference/workflow.md), generated from
// the schema's own text (comms/proto/workflow.proto, built into the binary:
// its comments and fields) and the defaults tables (defaults.cc and each
// architecture's), so it cannot drift from either. `troupe reference` prints it.
#pragma once

#include <string>

namespace troupe {

// Markdown: every message of the schema with its fields (type, default,
// comment) and where it is used, then every enum with its values.
std::string WorkflowReferenceMarkdown();

}  // namespace troupe
