// Where a run's per-step figures go, all three at once: a line of
// metrics.jsonl, TensorBoard scalars and a session event. The run loop
// (run_loop.h) writes through it, so every run kind fills the same sinks.
#pragma once

#include <string>

#include "workflows/report/metrics_log.h"

namespace troupe {

class SessionEvents;

class MetricsSink {
 public:
  // Starts metrics.jsonl in `dir` afresh, or (resume) keeps its first `keep_lines`
  // lines; TensorBoard events go to a new event file in `dir`; session events
  // to `events` when there are any (null: none).
  MetricsSink(const std::string& dir, SessionEvents* events, bool resume, int64_t keep_lines);
  // One step's figures; `episodes_per_s` and `forward_calls_per_turn` travel on the session event.
  void Write(int step, const JsonLine& line, double episodes_per_s, double forward_calls_per_turn);

 private:
  std::string path_;
  TensorBoardWriter tensorboard_;
  SessionEvents* events_;
};

}  // namespace troupe
