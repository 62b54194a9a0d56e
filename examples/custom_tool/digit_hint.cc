// A pipeline tool defined outside games/: it reads the question of the
// reverse_digits task ("reverse 4 7 1") and returns its last `count` digits,
// last first ("1 7"), as a hint for the proposer that answers after it.
#include <cstdint>
#include <sstream>

#include "core/pipeline_task.h"

namespace digit_hint_example {

namespace {

using troupe::ParamSpec;
using troupe::ParamType;

std::vector<ParamSpec> Specs() { return {{"count", ParamType::kInt, int64_t{1}, "digits in the hint", 1, 12}}; }

class DigitHint : public troupe::PipelineTool {
 public:
  explicit DigitHint(const troupe::Params& p) : count_(static_cast<int>(p.Int("count"))) {}

  // Templates and conditions may name these keys: {hint.digits}.
  std::vector<std::string> Keys() const override { return {"digits"}; }

  // Every episode's call of one tick comes in one batch: one result per call.
  std::vector<troupe::ToolResult> Run(const std::vector<troupe::ToolCall>& calls) const override {
    std::vector<troupe::ToolResult> results;
    for (const troupe::ToolCall& call : calls) {
      std::vector<std::string> digits;
      std::istringstream words(call.inputs.empty() ? std::string() : call.inputs.front());
      for (std::string w; words >> w;) {
        if (!w.empty() && w.find_first_not_of("0123456789") == std::string::npos) digits.push_back(w);
      }
      std::string hint;
      for (int i = 0; i < count_ && i < static_cast<int>(digits.size()); ++i) {
        hint += (hint.empty() ? "" : " ") + digits[digits.size() - 1 - i];
      }
      if (hint.empty()) {
        results.push_back({false, "no digits in '" + (call.inputs.empty() ? "" : call.inputs.front()) + "'", {}});
        continue;
      }
      results.push_back({true, "", {{"digits", {hint}}}});
    }
    return results;
  }

 private:
  int count_;
};

TROUPE_REGISTER_TOOL("digit_hint", Specs(), DigitHint);

}  // namespace

}  // namespace digit_hint_example
