// Marginal answer gains (see pipeline_credit.h).
#include "workflows/rollout/pipeline_credit.h"

namespace troupe {

std::vector<double> AnswerGains(const std::vector<CallTick>& calls, const std::vector<AnswerTick>& answers) {
  std::vector<double> gains;
  gains.reserve(calls.size());
  for (const CallTick& c : calls) {
    const AnswerTick* before = nullptr;
    const AnswerTick* after = nullptr;
    for (const AnswerTick& a : answers) {
      if (a.tick < c.tick || (c.is_answer && a.tick == c.tick)) before = &a;
      else if (a.tick > c.tick && after == nullptr) after = &a;
    }
    if (c.is_answer) gains.push_back(before != nullptr ? before->score : 0.0);  // its own answer
    else if (after == nullptr) gains.push_back(0.0);
    else gains.push_back(after->score - (before != nullptr ? before->score : 0.0));
  }
  return gains;
}

}  // namespace troupe
