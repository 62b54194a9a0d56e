// What a run writes per iteration: metrics.jsonl (one JSON object a line) and
// TensorBoard event files (protobuf Event records in TFRecord framing).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

class RecordWriter;

// An ordered flat JSON object of numbers and strings; keys keep insertion order.
class JsonLine {
 public:
  JsonLine& Add(const std::string& key, double value);
  JsonLine& Add(const std::string& key, const std::string& value);
  // Written exactly (a 64-bit seed keeps every digit); TensorBoard gets it as a number.
  JsonLine& AddInteger(const std::string& key, uint64_t value);
  std::string Str() const;
  const std::vector<std::pair<std::string, double>>& numbers() const { return numbers_; }

 private:
  std::vector<std::string> parts_;
  std::vector<std::pair<std::string, double>> numbers_;
};

std::string JsonEscape(const std::string& s);
std::string FormatNumber(double v);

class TensorBoardWriter {
 public:
  // Creates dir/events.out.tfevents.<time>.troupe and writes the version event.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  void Scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);

 private:
  std::unique_ptr<RecordWriter> writer_;
};

// A flat JSON object of numbers from a file (an evaluation a run wrote); throws
// CheckpointError naming the file when it is not one.
std::map<std::string, double> ReadJsonNumbers(const std::string& path);

// Keeps the first `lines` lines of a file and drops the rest (resume after a crash).
void TruncateLines(const std::string& path, int64_t lines);

}  // namespace troupe
