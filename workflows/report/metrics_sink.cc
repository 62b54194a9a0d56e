// metrics.jsonl + TensorBoard + session events.
#include "workflows/report/metrics_sink.h"

#include <cstdio>
#include <fstream>
#include <map>

#include "workflows/report/session_events.h"

namespace troupe {

namespace {
const std::string& Prepared(const std::string& path, bool resume, int64_t keep_lines) {
  if (resume) TruncateLines(path, keep_lines);
  else std::remove(path.c_str());
  return path;
}
}  // namespace

MetricsSink::MetricsSink(const std::string& dir, SessionEvents* events, bool resume, int64_t keep_lines)
    : path_(Prepared(dir + "/metrics.jsonl", resume, keep_lines)), tensorboard_(dir), events_(events) {}

void MetricsSink::Write(int step, const JsonLine& line, double episodes_per_s, double forward_calls_per_turn) {
  {
    std::ofstream f(path_, std::ios::app);
    f << line.Str() << "\n";
  }
  tensorboard_.Scalars(step, line.numbers());
  if (events_ == nullptr) return;
  events_->Metrics(step, std::map<std::string, double>(line.numbers().begin(), line.numbers().end()), episodes_per_s,
                   forward_calls_per_turn);
}

}  // namespace troupe
