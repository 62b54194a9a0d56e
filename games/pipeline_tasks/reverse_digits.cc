// A toy pipeline task: reverse a string of digits. Used by the node-driven
// proposer -> critic example; score = fraction of positions answered right.
#include <cstdint>
#include <sstream>

#include "core/pipeline_task.h"
#include "core/rng.h"

namespace troupe::reverse_digits {

namespace {

std::vector<ParamSpec> Specs() { return {{"length", ParamType::kInt, int64_t{3}, "digits per query", 1, 12}}; }

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

class ReverseDigits : public PipelineTask {
 public:
  explicit ReverseDigits(const Params& p) : length_(static_cast<int>(p.Int("length"))) {}

  std::vector<std::string> Vocabulary() const override {
    std::vector<std::string> v = {"reverse", "accept", "reject"};
    for (int d = 0; d <= 9; ++d) v.push_back(std::to_string(d));
    return v;
  }

  PipelineQuery MakeQuery(uint64_t seed) const override {
    Rng rng(seed);
    PipelineQuery q;
    q.question = "reverse";
    std::string reversed;
    for (int i = 0; i < length_; ++i) {
      const std::string d = std::to_string(rng.Below(10));
      q.question += " " + d;
      reversed = reversed.empty() ? d : d + " " + reversed;
    }
    q.id = q.question;
    q.answers = {reversed};
    return q;
  }

  std::map<std::string, double> Score(const PipelineQuery& q, const PipelineOutcome& outcome) const override {
    const std::vector<std::string> gold = Words(q.answers.front()), answer = Words(outcome.answer);
    int right = 0;
    for (size_t i = 0; i < gold.size() && i < answer.size(); ++i) right += answer[i] == gold[i];
    return {{"score", static_cast<double>(right) / static_cast<double>(gold.size())}};
  }

 private:
  int length_;
};

// A deterministic verifier tool: "accept" when its input reverses the question.
class ReverseChecker : public PipelineTool {
 public:
  explicit ReverseChecker(const Params&) {}
  std::vector<std::string> Keys() const override { return {"verdict"}; }
  std::vector<ToolResult> Run(const std::vector<ToolCall>& calls) const override {
    std::vector<ToolResult> out;
    for (const ToolCall& c : calls) {
      const bool ok = !c.inputs.empty() && Words(c.inputs.front()) == Words(c.query->answers.front());
      out.push_back({true, "", {{"verdict", {ok ? "accept" : "reject"}}}});
    }
    return out;
  }
};

TROUPE_REGISTER_TASK("reverse_digits", Specs(), ReverseDigits);
TROUPE_REGISTER_TOOL("reverse_checker", {}, ReverseChecker);

}  // namespace

}  // namespace troupe::reverse_digits
