// metrics.jsonl lines and TensorBoard scalar events.
#include "workflows/report/metrics_log.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "comms/proto/tensorboard_event.pb.h"
#include "core/base/errors.h"
#include "core/base/record_file.h"
#include "core/base/file_io.h"

namespace troupe {

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string FormatNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

JsonLine& JsonLine::Add(const std::string& key, double value) {
  parts_.push_back("\"" + JsonEscape(key) + "\":" + FormatNumber(value));
  numbers_.emplace_back(key, value);
  return *this;
}

JsonLine& JsonLine::AddInteger(const std::string& key, uint64_t value) {
  parts_.push_back("\"" + JsonEscape(key) + "\":" + std::to_string(value));
  numbers_.emplace_back(key, static_cast<double>(value));
  return *this;
}

JsonLine& JsonLine::Add(const std::string& key, const std::string& value) {
  parts_.push_back("\"" + JsonEscape(key) + "\":\"" + JsonEscape(value) + "\"");
  return *this;
}

std::string JsonLine::Str() const {
  std::string s = "{";
  for (size_t i = 0; i < parts_.size(); ++i) s += (i ? "," : "") + parts_[i];
  return s + "}";
}

static double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  const std::string path = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(WallTime())) + ".troupe";
  writer_ = std::make_unique<RecordWriter>(path);
  tensorboard::Event e;
  e.set_wall_time(WallTime());
  e.set_file_version("brain.Event:2");
  writer_->Write(e.SerializeAsString());
  writer_->Flush();
}

TensorBoardWriter::~TensorBoardWriter() = default;

void TensorBoardWriter::Scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  tensorboard::Event e;
  e.set_wall_time(WallTime());
  e.set_step(step);
  for (const auto& [tag, v] : values) {
    auto* sv = e.mutable_summary()->add_value();
    sv->set_tag(tag);
    sv->set_simple_value(static_cast<float>(v));
  }
  writer_->Write(e.SerializeAsString());
  writer_->Flush();
}

void TruncateLines(const std::string& path, int64_t lines) {
  std::ifstream in(path);
  if (!in) return;
  std::ostringstream kept;
  std::string line;
  for (int64_t i = 0; i < lines && std::getline(in, line); ++i) kept << line << '\n';
  in.close();
  WriteFileAtomically(path, kept.str());
}

std::map<std::string, double> ReadJsonNumbers(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CheckpointError("cannot read " + path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(path + " is not JSON: " + e.what());
  }
  if (!j.is_object()) throw CheckpointError(path + " is not a JSON object");
  std::map<std::string, double> numbers;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_number()) throw CheckpointError(path + ": '" + key + "' is not a number");
    numbers[key] = value.get<double>();
  }
  return numbers;
}

}  // namespace troupe
