// Framed sockets over cppzmq.
#include "comms/framed_socket.h"

#include <iostream>

#include "comms/endpoint.h"
#include "core/errors.h"

namespace troupe {

FramedSocket::FramedSocket(zmq::socket_type type, const SocketOptions& options)
    : type_(type), options_(options), socket_(SharedContext(), type) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::sndhwm, options.send_hwm);
  socket_.set(zmq::sockopt::rcvhwm, options.receive_hwm);
  if (!options.routing_id.empty()) socket_.set(zmq::sockopt::routing_id, options.routing_id);
  if (type == zmq::socket_type::sub) socket_.set(zmq::sockopt::subscribe, options.subscribe);
}

std::unique_ptr<FramedSocket> FramedSocket::Bind(zmq::socket_type type, const std::string& endpoint,
                                                 const SocketOptions& options) {
  RequireSecurityFor(endpoint, options.security);
  std::unique_ptr<FramedSocket> s(new FramedSocket(type, options));
  ApplyCurveServer(s->socket_, options.security);
  try {
    s->socket_.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw CommsError("cannot bind " + endpoint + ": " + e.what());
  }
  return s;
}

std::unique_ptr<FramedSocket> FramedSocket::Connect(zmq::socket_type type, const std::string& endpoint,
                                                    const SocketOptions& options) {
  RequireSecurityFor(endpoint, options.security);
  std::unique_ptr<FramedSocket> s(new FramedSocket(type, options));
  ApplyCurveClient(s->socket_, options.security);
  try {
    s->socket_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw CommsError("cannot connect to " + endpoint + ": " + e.what());
  }
  return s;
}

std::string FramedSocket::endpoint() const { return socket_.get(zmq::sockopt::last_endpoint); }

bool FramedSocket::Send(const google::protobuf::MessageLite& body, const std::string& identity, bool dont_wait) {
  const size_t body_size = body.ByteSizeLong();
  zmq::message_t frame(kFrameHeaderBytes + body_size);
  EncodeFrameInto(body, body_size, frame.data());
  const zmq::send_flags wait = dont_wait ? zmq::send_flags::dontwait : zmq::send_flags::none;
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

FramedSocket::Got FramedSocket::ReceiveOne(google::protobuf::MessageLite* body, std::string* identity, int wait_ms) {
  zmq::message_t part;
  if (wait_ms != receive_timeout_ms_) {
    socket_.set(zmq::sockopt::rcvtimeo, wait_ms);
    receive_timeout_ms_ = wait_ms;
  }
  try {
    if (!socket_.recv(part, wait_ms == 0 ? zmq::recv_flags::dontwait : zmq::recv_flags::none)) return Got::kNothing;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return Got::kNothing;  // a signal (Ctrl-C): the caller decides what to do
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
  FrameStatus status = extra ? FrameStatus::kMalformed
                             : DecodeFrame(part.data(), part.size(), options_.max_frame_bytes, body);
  if (status != FrameStatus::kOk) {
    rejects_.Count(status);
    if (rejects_.total() <= 5 || rejects_.total() % 1000 == 0) {
      std::cerr << "troupe: refused a " << part.size() << "-byte frame on " << endpoint() << ": "
                << FrameStatusName(status) << " (" << rejects_.total() << " refused so far)\n";
    }
    return Got::kRefused;
  }
  if (identity != nullptr) *identity = std::move(sender);
  return Got::kFrame;
}

bool FramedSocket::Receive(google::protobuf::MessageLite* body, std::chrono::milliseconds timeout,
                           std::string* identity) {
  // A blocking receive with a timeout, not a poll: zmq_poll costs extra system
  // calls per message, which halves inproc throughput. What is queued already
  // is taken without reading the clock.
  for (Got got; (got = ReceiveOne(body, identity, 0)) != Got::kNothing;) {
    if (got == Got::kFrame) return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const Got got = ReceiveOne(body, identity, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (got == Got::kFrame) return true;
    if (got == Got::kNothing && left.count() <= 0) return false;
    if (got == Got::kNothing && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace troupe
