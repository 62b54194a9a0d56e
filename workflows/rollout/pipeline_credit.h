// Role-level credit in pipelines (../specs: workflows_and_credit), as reward
// signals of each model call:
//   answer_gain  the marginal gain of the answer: a call before any answer
//                gets the first answer's score (plan -> F1(a_0)); a call
//                between answers t-1 and t gets score(a_t) - score(a_{t-1})
//                (search, summary, update at turn t); a call after the last
//                answer gets 0 (a search that ends the loop); an answer call
//                gets its own score (answer_t -> F1(a_t)).
//   split        the outcome shared out among the calls that receive it,
//                instead of each getting all of it (full).
#pragma once

#include <vector>

namespace troupe {

struct CallTick {
  int tick = 0;           // when the call ran
  bool is_answer = false; // a call of the answer node
};

struct AnswerTick {
  int tick = 0;
  double score = 0;  // the task's score of this answer
};

// Each call's answer_gain; `answers` in tick order.
std::vector<double> AnswerGains(const std::vector<CallTick>& calls, const std::vector<AnswerTick>& answers);

}  // namespace troupe
