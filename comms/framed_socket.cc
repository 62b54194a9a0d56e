// Framed sockets over cppzmq.
#include "comms/framed_socket.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <iostream>

#include "comms/endpoint.h"
#include "core/base/errors.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace troupe {

namespace {

// ZeroMQ hands a message's buffer from the sending thread to the receiving one
// (in-process sockets pass the very buffer) through its own lock-free queues,
// which ThreadSanitizer cannot see in Debian's uninstrumented libzmq: under
// TSan (scripts/sanitize.sh) the hand-off is declared, elsewhere these are empty.
#if defined(__SANITIZE_THREAD__)
void HandOff(void* buffer) { __tsan_release(buffer); }
void TakeOver(void* buffer) { __tsan_acquire(buffer); }
#else
void HandOff(void*) {}
void TakeOver(void*) {}
#endif

int64_t CoarseNowMs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

}  // namespace

FramedSocket::FramedSocket(zmq::socket_type type, const SocketOptions& options)
    : type_(type), options_(options), socket_(SharedContext(), type) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::sndhwm, options.send_hwm);
  socket_.set(zmq::sockopt::rcvhwm, options.receive_hwm);
  if (!options.routing_id.empty()) socket_.set(zmq::sockopt::routing_id, options.routing_id);
  if (type == zmq::socket_type::sub) socket_.set(zmq::sockopt::subscribe, options.subscribe);
}

std::unique_ptr<FramedSocket> FramedSocket::Open(zmq::socket_type type, const std::string& endpoint,
                                                 const SocketOptions& options, bool bind) {
  RequireSecurityFor(endpoint, options.security);
  std::unique_ptr<FramedSocket> s(new FramedSocket(type, options));
  if (bind) ApplyCurveServer(s->socket_, options.security);
  else ApplyCurveClient(s->socket_, options.security);
  try {
    if (bind) s->socket_.bind(endpoint);
    else s->socket_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw CommsError((bind ? "cannot bind " : "cannot connect to ") + endpoint + ": " + e.what());
  }
  return s;
}

std::unique_ptr<FramedSocket> FramedSocket::Bind(zmq::socket_type type, const std::string& endpoint,
                                                 const SocketOptions& options) {
  return Open(type, endpoint, options, true);
}

std::unique_ptr<FramedSocket> FramedSocket::Connect(zmq::socket_type type, const std::string& endpoint,
                                                    const SocketOptions& options) {
  return Open(type, endpoint, options, false);
}

std::string FramedSocket::endpoint() const { return socket_.get(zmq::sockopt::last_endpoint); }

bool FramedSocket::Send(const google::protobuf::MessageLite& body, const std::string& identity, bool dont_wait) {
  return SendFrame(body, nullptr, identity, dont_wait);
}

bool FramedSocket::SendWithAttachment(const google::protobuf::MessageLite& body, std::string_view attachment,
                                      const std::string& identity, bool dont_wait) {
  return SendFrame(body, &attachment, identity, dont_wait);
}

bool FramedSocket::SendFrame(const google::protobuf::MessageLite& body, const std::string_view* attachment,
                             const std::string& identity, bool dont_wait) {
  const size_t body_size = body.ByteSizeLong();
  const size_t extra = attachment ? attachment->size() : 0;
  zmq::message_t frame(kFrameHeaderBytes + body_size + extra);
  EncodeFrameInto(body, body_size, frame.data(), attachment ? kFlagAttachment : 0);
  if (extra > 0)
    std::memcpy(static_cast<char*>(frame.data()) + kFrameHeaderBytes + body_size, attachment->data(), extra);
  const zmq::send_flags wait = dont_wait ? zmq::send_flags::dontwait : zmq::send_flags::none;
  HandOff(frame.data());
  try {
    if (type_ == zmq::socket_type::router) {
      if (!socket_.send(zmq::buffer(identity), zmq::send_flags::sndmore | wait)) return false;
    }
    return socket_.send(frame, wait).has_value();
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return false;
    throw CommsError(std::string("send failed: ") + e.what());
  }
}

FramedSocket::Got FramedSocket::ReceiveOne(google::protobuf::MessageLite* body, std::string* identity,
                                           Attachment* attachment, int wait_ms) {
  zmq::message_t part;
  if (wait_ms > 0 && wait_ms != receive_timeout_ms_) {
    socket_.set(zmq::sockopt::rcvtimeo, wait_ms);
    receive_timeout_ms_ = wait_ms;
  }
  try {
    if (!socket_.recv(part, wait_ms == 0 ? zmq::recv_flags::dontwait : zmq::recv_flags::none)) return Got::kNothing;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return Got::kInterrupted;  // a signal (Ctrl-C): the caller decides what to do
    throw CommsError(std::string("receive failed: ") + e.what());
  }
  std::string sender;
  if (type_ == zmq::socket_type::router) {
    sender = part.to_string();
    if (!part.more() || !socket_.recv(part, zmq::recv_flags::dontwait)) {
      rejects_.Count(FrameStatus::kTruncated);
      return Got::kRefused;
    }
  }
  bool extra = false;
  while (part.more()) {  // a troupe message is one frame: drain and refuse the rest
    zmq::message_t rest;
    if (!socket_.recv(rest, zmq::recv_flags::dontwait)) break;
    extra = true;
    if (!rest.more()) break;
  }
  TakeOver(part.data());
  size_t offset = 0;
  FrameStatus status =
      extra ? FrameStatus::kMalformed
            : DecodeFrame(part.data(), part.size(), options_.max_frame_bytes, body, attachment ? &offset : nullptr);
  if (status != FrameStatus::kOk) {
    rejects_.Count(status);
    if (rejects_.total() <= 5 || rejects_.total() % 1000 == 0) {
      std::cerr << "troupe: refused a " << part.size() << "-byte frame on " << endpoint() << ": "
                << FrameStatusName(status) << " (" << rejects_.total() << " refused so far)\n";
    }
    return Got::kRefused;
  }
  if (identity != nullptr) *identity = std::move(sender);
  if (attachment != nullptr) {
    attachment->offset_ = offset;
    attachment->frame_ = std::move(part);
  }
  return Got::kFrame;
}

bool FramedSocket::Receive(google::protobuf::MessageLite* body, std::chrono::milliseconds timeout,
                           std::string* identity) {
  return Receive(body, timeout, identity, nullptr);
}

bool FramedSocket::Receive(google::protobuf::MessageLite* body, std::chrono::milliseconds timeout,
                           std::string* identity, Attachment* attachment) {
  // One blocking receive with the socket's own timeout: no poll, and no
  // non-blocking attempt first (each costs libzmq a look at its mailbox, and
  // each message then wakes the receiver twice). Callers pass the same timeout
  // call after call, so the socket option is set once. Only after a refused
  // frame or a signal does the wait go on with what is left of the timeout.
  // The deadline reads the coarse clock (a few ns; ticks of a few ms, plenty for
  // timeouts in ms): reading the precise one cost measurable time per message.
  const int64_t deadline = CoarseNowMs() + timeout.count();
  int wait_ms = static_cast<int>(std::clamp<int64_t>(timeout.count(), 0, INT32_MAX));
  while (true) {
    const Got got = ReceiveOne(body, identity, attachment, wait_ms);
    if (got == Got::kFrame) return true;
    if (got == Got::kNothing) return false;  // the timeout passed (or nothing was queued, with 0)
    const int64_t left = deadline - CoarseNowMs();
    if (left <= 0) return false;
    wait_ms = static_cast<int>(std::min<int64_t>(left, INT32_MAX));
  }
}

}  // namespace troupe
