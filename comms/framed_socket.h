// A ZeroMQ socket that speaks troupe frames: ROUTER/DEALER for requests,
// PUB/SUB for session events. Receiving checks every frame (comms/frame.h);
// refused frames are counted by reason, logged (the first few), and skipped.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "comms/curve.h"
#include "comms/frame.h"

namespace troupe {

struct SocketOptions {
  Security security;
  size_t max_frame_bytes = kDefaultMaxFrameBytes;
  int send_hwm = 1000;  // messages queued per peer before sends drop (PUB) or block
  int receive_hwm = 1000;
  std::string routing_id;  // DEALER identity (empty: libzmq picks one)
  std::string subscribe;   // SUB prefix ("" = everything)
};

// The attachment of a received frame: a view into the message that holds it.
class Attachment {
 public:
  const char* data() const { return static_cast<const char*>(frame_.data()) + offset_; }
  size_t size() const { return frame_.size() - offset_; }
  std::string_view view() const { return {data(), size()}; }

 private:
  friend class FramedSocket;
  zmq::message_t frame_;
  size_t offset_ = 0;
};

class FramedSocket {
 public:
  // Binds (ROUTER, PUB) or connects (DEALER, SUB). Non-loopback tcp requires keys.
  static std::unique_ptr<FramedSocket> Bind(zmq::socket_type type, const std::string& endpoint,
                                            const SocketOptions& options = {});
  static std::unique_ptr<FramedSocket> Connect(zmq::socket_type type, const std::string& endpoint,
                                               const SocketOptions& options = {});

  // Sends one frame (ROUTER: to `identity`). With `dont_wait`, returns false
  // instead of blocking when the queue is full (the message is dropped).
  bool Send(const google::protobuf::MessageLite& body, const std::string& identity = "", bool dont_wait = false);
  // The same with an attachment (comms/frame.h): bulk bytes written once after
  // the body, never copied through Protobuf.
  bool SendWithAttachment(const google::protobuf::MessageLite& body, std::string_view attachment,
                          const std::string& identity = "", bool dont_wait = false);

  // Waits up to `timeout` for a valid frame; returns false when none came.
  // A ROUTER fills `identity` with the sender.
  bool Receive(google::protobuf::MessageLite* body, std::chrono::milliseconds timeout, std::string* identity = nullptr);
  // Also accepts a frame with an attachment (the plain Receive refuses them),
  // which stays in the received message and is read in place.
  bool Receive(google::protobuf::MessageLite* body, std::chrono::milliseconds timeout, std::string* identity,
               Attachment* attachment);

  const FrameRejects& rejects() const { return rejects_; }
  // The endpoint actually bound (tcp port 0 or * resolved).
  std::string endpoint() const;
  zmq::socket_t& raw() { return socket_; }

 private:
  FramedSocket(zmq::socket_type type, const SocketOptions& options);
  static std::unique_ptr<FramedSocket> Open(zmq::socket_type type, const std::string& endpoint,
                                            const SocketOptions& options, bool bind);
  enum class Got { kNothing, kFrame, kRefused, kInterrupted };
  // Waits up to `wait_ms` (0: not at all) for the first part of a message.
  // A wait changes the socket's receive timeout only when it differs from the last.
  Got ReceiveOne(google::protobuf::MessageLite* body, std::string* identity, Attachment* attachment, int wait_ms);
  bool SendFrame(const google::protobuf::MessageLite& body, const std::string_view* attachment,
                 const std::string& identity, bool dont_wait);

  zmq::socket_type type_;
  SocketOptions options_;
  zmq::socket_t socket_;
  FrameRejects rejects_;
  int receive_timeout_ms_ = -1;  // the socket's ZMQ_RCVTIMEO
};

}  // namespace troupe
