// Helpers of the tests of workflow configs: the error a workflow text gets
// when it compiles, and the "file:line:col:" a token of it has.
#pragma once

#include <sstream>
#include <string>

#include "core/base/errors.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"

namespace troupe::testing {

// The error of compiling `text` (as t.textproto), or "" when it is valid.
inline std::string ErrorOf(const std::string& text) {
  try {
    CompileWorkflow(ParseWorkflowText(text, "t.textproto"));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// "t.textproto:LINE:COL:" where COL is where `token` starts on that line.
inline std::string At(const std::string& text, int line, const std::string& token) {
  std::istringstream in(text);
  std::string l;
  for (int i = 1; i <= line; ++i) std::getline(in, l);
  return "t.textproto:" + std::to_string(line) + ":" + std::to_string(l.find(token) + 1) + ":";
}

}  // namespace troupe::testing
