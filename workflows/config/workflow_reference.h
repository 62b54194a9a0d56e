// The workflow file reference (docs/reference/workflow.md), generated from
// the schema's own text (comms/proto/workflow.proto, built into the binary:
// its comments and fields) and the defaults tables (defaults.cc and each
// architecture's), so it cannot drift from either. `troupe reference` prints it.
#pragma once

#include <map>
#include <string>
#include <utility>

namespace troupe {

// Markdown: every message of the schema with its fields (type, default,
// comment) and where it is used, then every enum with its values.
std::string WorkflowReferenceMarkdown();

// Every default the tables hold (defaults.cc's and each architecture's), by
// (message, field), as the text format prints it.
std::map<std::pair<std::string, std::string>, std::string> WorkflowDefaultValues();

}  // namespace troupe
