// Session events over ZeroMQ: a publisher that never blocks the run (an XPUB
// socket with no-drop reporting and a high-water mark: when a subscriber's
// queue is full the event is dropped and counted), and a subscriber.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "comms/framed_socket.h"
#include "comms/proto/session.pb.h"

namespace troupe {

class EventPublisher {
 public:
  EventPublisher(const std::string& endpoint, const SocketOptions& options = {});
  // Sends without waiting; false (and one more drop) when a subscriber is full.
  bool Publish(const session::Event& event);
  int64_t published() const { return published_; }
  int64_t dropped() const { return dropped_; }
  std::string endpoint() const { return socket_->endpoint(); }
  int subscribers() const { return subscribers_; }
  // True once after a subscriber joined (so the owner can resend what a late joiner needs).
  bool TakeNewSubscriber();
  // Waits up to `timeout` until at least one subscriber is there; whether one is.
  bool AwaitSubscriber(std::chrono::milliseconds timeout);

 private:
  void DrainSubscriptions();
  std::unique_ptr<FramedSocket> socket_;
  int64_t published_ = 0, dropped_ = 0;
  int subscribers_ = 0;
  bool new_subscriber_ = false;
};

class EventSubscriber {
 public:
  EventSubscriber(const std::string& endpoint, const SocketOptions& options = {});
  // The next event, waiting up to `timeout`; false when none came.
  bool Next(session::Event* event, std::chrono::milliseconds timeout);
  // Events the publisher sent that never arrived here (gaps in the sequence).
  int64_t missed() const { return missed_; }
  const FrameRejects& rejects() const { return socket_->rejects(); }

 private:
  std::unique_ptr<FramedSocket> socket_;
  int64_t missed_ = 0;
  int64_t next_sequence_ = -1;
};

}  // namespace troupe
