// Where a run's per-step figures go, all three at once: a line of
// metrics.jsonl, TensorBoard scalars and a session event. Every run kind
// writes through it: the run loop (run_loop.h) for training and pretraining,
// and `troupe run` (simulate_run.h), whose seeds are TensorBoard runs of
// their own.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "workflows/report/metrics_log.h"

namespace troupe {

class SessionEvents;

class MetricsSink {
 public:
  // Starts metrics.jsonl in `dir` afresh, or (resume) keeps its first `keep_lines`
  // lines; TensorBoard events go to a new event file in `dir` (from the first
  // Write on); session events
  // to `events` when there are any (null: none).
  MetricsSink(const std::string& dir, SessionEvents* events, bool resume, int64_t keep_lines);
  ~MetricsSink();
  // One step's figures; `episodes_per_s` and `forward_calls_per_turn` travel on
  // the session event. A non-empty `series` puts the TensorBoard scalars in
  // their own run, the folder dir/series, so series that restart their steps
  // (the seeds of `troupe run`) are curves side by side.
  void Write(int step, const JsonLine& line, double episodes_per_s = 0.0, double forward_calls_per_turn = 0.0,
             const std::string& series = "");

 private:
  std::string dir_;
  std::ofstream jsonl_;
  std::map<std::string, std::unique_ptr<TensorBoardWriter>> tensorboard_;  // by series
  SessionEvents* events_;
};

}  // namespace troupe
