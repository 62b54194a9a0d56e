// Event publisher and subscriber.
#include "comms/event_stream.h"

#include <cstdint>

namespace troupe {

EventPublisher::EventPublisher(const std::string& endpoint, const SocketOptions& options) {
  SocketOptions o = options;
  socket_ = FramedSocket::Bind(zmq::socket_type::xpub, endpoint, o);
  socket_->raw().set(zmq::sockopt::xpub_nodrop, 1);
}

void EventPublisher::DrainSubscriptions() {
  zmq::message_t m;
  while (socket_->raw().recv(m, zmq::recv_flags::dontwait)) {
    if (m.size() == 0) continue;
    const bool join = static_cast<const char*>(m.data())[0] == 1;
    subscribers_ += join ? 1 : -1;
    new_subscriber_ = new_subscriber_ || join;
  }
}

bool EventPublisher::Publish(const session::Event& event) {
  DrainSubscriptions();
  if (socket_->Send(event, "", /*dont_wait=*/true)) {
    ++published_;
    return true;
  }
  ++dropped_;
  return false;
}

bool EventPublisher::TakeNewSubscriber() {
  DrainSubscriptions();
  const bool fresh = new_subscriber_;
  new_subscriber_ = false;
  return fresh;
}

bool EventPublisher::AwaitSubscriber(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    DrainSubscriptions();
    if (subscribers_ > 0 || std::chrono::steady_clock::now() >= deadline) return subscribers_ > 0;
    zmq::pollitem_t item{static_cast<void*>(socket_->raw()), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(20));
  }
}

EventSubscriber::EventSubscriber(const std::string& endpoint, const SocketOptions& options) {
  socket_ = FramedSocket::Connect(zmq::socket_type::sub, endpoint, options);
}

bool EventSubscriber::Next(session::Event* event, std::chrono::milliseconds timeout) {
  if (!socket_->Receive(event, timeout)) return false;
  const int64_t seq = static_cast<int64_t>(event->sequence());
  if (next_sequence_ >= 0 && seq > next_sequence_) missed_ += seq - next_sequence_;
  next_sequence_ = seq + 1;
  return true;
}

}  // namespace troupe
