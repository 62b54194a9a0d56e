// One call at a time on a thread kept for the purpose: Start hands it a job and
// returns at once, Wait blocks until the job is done and rethrows what it threw.
// The rollout uses it to let one wave of episodes wait for the models while
// the controller steps the other wave's games.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace troupe {

class BackgroundCall {
 public:
  BackgroundCall();
  ~BackgroundCall();
  BackgroundCall(const BackgroundCall&) = delete;
  BackgroundCall& operator=(const BackgroundCall&) = delete;

  // Runs `job` on the thread. A job must not already be running (Wait first).
  void Start(std::function<void()> job);
  // Blocks until the started job returned; rethrows its exception. No-op when idle.
  void Wait();
  bool busy() const;

 private:
  void Loop();

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> job_;
  bool running_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace troupe
