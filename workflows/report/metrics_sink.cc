// metrics.jsonl + TensorBoard + session events.
#include "workflows/report/metrics_sink.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "core/base/errors.h"
#include "workflows/report/session_events.h"

namespace troupe {

MetricsSink::MetricsSink(const std::string& dir, SessionEvents* events, bool resume, int64_t keep_lines)
    : dir_(dir), events_(events) {
  const std::string path = dir + "/metrics.jsonl";
  if (resume) TruncateLines(path, keep_lines);
  jsonl_.open(path, resume ? std::ios::app : std::ios::trunc);
  if (!jsonl_) throw Error("cannot write " + path);
}

MetricsSink::~MetricsSink() = default;

void MetricsSink::Write(int step, const JsonLine& line, double episodes_per_s, double forward_calls_per_turn,
                        const std::string& series) {
  jsonl_ << line.Str() << "\n";
  jsonl_.flush();  // a line is on disk once written: a crash loses no step before it
  if (!jsonl_) throw Error("cannot write " + dir_ + "/metrics.jsonl: " + std::strerror(errno));
  std::unique_ptr<TensorBoardWriter>& tensorboard = tensorboard_[series];
  if (!tensorboard) {  // the event file starts with the first scalars
    const std::string folder = series.empty() ? dir_ : dir_ + "/" + series;
    std::filesystem::create_directories(folder);
    tensorboard = std::make_unique<TensorBoardWriter>(folder);
  }
  tensorboard->Scalars(step, line.numbers());
  if (events_ == nullptr) return;
  events_->Metrics(step, std::map<std::string, double>(line.numbers().begin(), line.numbers().end()), episodes_per_s,
                   forward_calls_per_turn);
}

}  // namespace troupe
