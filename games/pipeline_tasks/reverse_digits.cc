// A toy pipeline task: reverse a string of digits. Used by the node-driven
// proposer -> critic example; score = fraction of positions answered right.
#include <algorithm>

#include "core/pipeline_task.h"
#include "core/rng.h"

namespace troupe::reverse_digits {

namespace {

std::vector<ParamSpec> Specs() { return {{"length", ParamType::kInt, int64_t{3}, "digits per query", 1, 12}}; }

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
    q.question.push_back("reverse");
    for (int i = 0; i < length_; ++i) q.question.push_back(std::to_string(rng.Below(10)));
    q.answer.assign(q.question.rbegin(), q.question.rend() - 1);
    return q;
  }

  double Score(const PipelineQuery& q, const std::vector<std::string>& answer) const override {
    int right = 0;
    for (size_t i = 0; i < q.answer.size() && i < answer.size(); ++i) right += answer[i] == q.answer[i];
    return static_cast<double>(right) / static_cast<double>(q.answer.size());
  }

 private:
  int length_;
};

// A deterministic verifier tool: "accept" when its input reverses the question.
class ReverseChecker : public PipelineTool {
 public:
  std::vector<std::string> Run(const PipelineQuery& q,
                               const std::vector<std::vector<std::string>>& inputs) const override {
    const bool ok = !inputs.empty() && inputs.front() == q.answer;
    return {ok ? "accept" : "reject"};
  }
};

TROUPE_REGISTER_TASK("reverse_digits", Specs(), ReverseDigits);
TROUPE_REGISTER_TOOL("reverse_checker", ReverseChecker);

}  // namespace

}  // namespace troupe::reverse_digits
