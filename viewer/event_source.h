// Where the viewer's events come from: a session file (read at once, with the
// reader's error when it was cut short or damaged), or a live run (a SUB
// socket on its own thread feeding a bounded queue: when the viewer cannot
// keep up, events are dropped and counted, never pushed back on the run).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comms/proto/session.pb.h"

namespace troupe::view {

class EventSource {
 public:
  virtual ~EventSource() = default;
  // Moves up to `max` new events into `out`; returns how many.
  virtual size_t Take(std::vector<session::Event>* out, size_t max) = 0;
  virtual std::string Describe() const = 0;
  virtual std::string error() const { return ""; }
  virtual int64_t dropped() const { return 0; }  // by the viewer (queue full)
  virtual int64_t missed() const { return 0; }   // sequence gaps (publisher drops, late join)
  virtual bool live() const = 0;
};

class FileSource : public EventSource {
 public:
  explicit FileSource(const std::string& path);
  size_t Take(std::vector<session::Event>* out, size_t max) override;
  std::string Describe() const override { return path_; }
  std::string error() const override { return error_; }
  bool live() const override { return false; }
  size_t total() const { return events_.size(); }
  // False when the file could not be read as a session at all (missing, not a session).
  bool opened() const { return opened_; }

 private:
  std::string path_, error_;
  bool opened_ = true;
  std::vector<session::Event> events_;
  size_t next_ = 0;
};

class LiveSource : public EventSource {
 public:
  // `keys_dir`: CurveZMQ client keys when the run publishes with them (troupe keys).
  LiveSource(const std::string& endpoint, const std::string& keys_dir = "", size_t queue_limit = 200000);
  ~LiveSource() override;
  size_t Take(std::vector<session::Event>* out, size_t max) override;
  std::string Describe() const override { return endpoint_; }
  std::string error() const override;
  int64_t dropped() const override { return dropped_; }
  int64_t missed() const override { return missed_; }
  bool live() const override { return true; }
  // Seconds since the last event arrived (the run may have ended or be slow).
  double silent_for() const;

 private:
  void Run();
  std::string endpoint_, keys_dir_;
  size_t limit_;
  mutable std::mutex mutex_;
  std::deque<session::Event> queue_;
  std::string error_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> dropped_{0}, missed_{0};
  std::atomic<double> last_event_{0.0};
  std::thread thread_;
};

}  // namespace troupe::view
