#include "core/base/background_call.h"

#include <stdexcept>
#include <utility>

namespace troupe {

BackgroundCall::BackgroundCall() : thread_([this] { Loop(); }) {}

BackgroundCall::~BackgroundCall() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !running_; });
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackgroundCall::Start(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_) throw std::logic_error("BackgroundCall::Start while a job is running");
    job_ = std::move(job);
    error_ = nullptr;
    running_ = true;
  }
  changed_.notify_all();
}

void BackgroundCall::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !running_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

bool BackgroundCall::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

void BackgroundCall::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return running_ || stop_; });
    if (!running_) return;  // stop_ and nothing to run
    std::function<void()> job = std::move(job_);
    lock.unlock();
    std::exception_ptr error;
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    running_ = false;
    changed_.notify_all();
  }
}

}  // namespace troupe
