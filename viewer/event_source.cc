// File and live event sources.
#include "viewer/event_source.h"

#include <chrono>

#include "comms/event_stream.h"
#include "comms/session_file.h"

namespace troupe::view {

namespace {
double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

FileSource::FileSource(const std::string& path) : path_(path) {
  try {
    SessionContents c = ReadSessionFile(path);
    events_ = std::move(c.events);
    error_ = c.error;
  } catch (const std::exception& e) {
    error_ = e.what();
    opened_ = false;
  }
}

size_t FileSource::Take(std::vector<session::Event>* out, size_t max) {
  size_t n = 0;
  while (next_ < events_.size() && n < max) {
    out->push_back(std::move(events_[next_++]));
    ++n;
  }
  return n;
}

LiveSource::LiveSource(const std::string& endpoint, const std::string& keys_dir, size_t queue_limit)
    : endpoint_(endpoint), keys_dir_(keys_dir), limit_(queue_limit) {
  last_event_ = Now();
  thread_ = std::thread([this] { Run(); });
}

LiveSource::~LiveSource() {
  stop_ = true;
  thread_.join();
}

void LiveSource::Run() {
  try {
    SocketOptions o;
    o.receive_hwm = 100000;
    o.security.keys_dir = keys_dir_;
    EventSubscriber sub(endpoint_, o);
    session::Event e;
    while (!stop_) {
      if (!sub.Next(&e, std::chrono::milliseconds(100))) continue;
      last_event_ = Now();
      missed_ = sub.missed();
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.size() >= limit_) {
        ++dropped_;
        continue;
      }
      queue_.push_back(e);
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = e.what();
  }
}

size_t LiveSource::Take(std::vector<session::Event>* out, size_t max) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  while (!queue_.empty() && n < max) {
    out->push_back(std::move(queue_.front()));
    queue_.pop_front();
    ++n;
  }
  return n;
}

std::string LiveSource::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

double LiveSource::silent_for() const { return Now() - last_event_; }

}  // namespace troupe::view
