// ZeroMQ endpoints and the process's one ZeroMQ context. inproc:// endpoints
// only reach sockets of the same context, so every troupe socket uses it.
#pragma once

#include <string>

#include <zmq.hpp>

namespace troupe {

struct Endpoint {
  std::string text;      // as given, e.g. "tcp://127.0.0.1:5555"
  std::string scheme;    // "inproc", "ipc" or "tcp"
  std::string host;      // tcp only
  int port = 0;          // tcp only; 0 or "*" = any
  bool loopback = true;  // inproc, ipc, and tcp on 127.x.x.x / localhost / ::1
};

// Parses and checks an endpoint; throws CommsError with what is wrong.
Endpoint ParseEndpoint(const std::string& text);

// The shared context (never destroyed: sockets of detached threads must not
// block process exit).
zmq::context_t& SharedContext();

// A fresh inproc endpoint name, unique within the process.
std::string UniqueInprocEndpoint(const std::string& stem);

}  // namespace troupe
