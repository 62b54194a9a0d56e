// Endpoint parsing and the shared context.
#include "comms/endpoint.h"

#include <atomic>

#include "core/base/errors.h"

namespace troupe {

Endpoint ParseEndpoint(const std::string& text) {
  Endpoint e;
  e.text = text;
  const size_t sep = text.find("://");
  if (sep == std::string::npos) {
    throw CommsError("endpoint '" + text + "': expected inproc://NAME, ipc://PATH or tcp://HOST:PORT");
  }
  e.scheme = text.substr(0, sep);
  const std::string rest = text.substr(sep + 3);
  if (rest.empty()) throw CommsError("endpoint '" + text + "': nothing after '://'");
  if (e.scheme == "inproc" || e.scheme == "ipc") return e;
  if (e.scheme != "tcp")
    throw CommsError("endpoint '" + text + "': transport '" + e.scheme + "' is not inproc, ipc or tcp");
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon + 1 == rest.size()) {
    throw CommsError("endpoint '" + text + "': tcp needs HOST:PORT");
  }
  e.host = rest.substr(0, colon);
  const std::string port = rest.substr(colon + 1);
  if (port != "*") {
    try {
      size_t used = 0;
      e.port = std::stoi(port, &used);
      if (used != port.size() || e.port < 0 || e.port > 65535) throw std::invalid_argument(port);
    } catch (const std::exception&) {
      throw CommsError("endpoint '" + text + "': port '" + port + "' is not a number in 0-65535");
    }
  }
  std::string host = e.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  e.loopback = host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
  return e;
}

zmq::context_t& SharedContext() {
  static zmq::context_t* context = new zmq::context_t(1);
  return *context;
}

std::string UniqueInprocEndpoint(const std::string& stem) {
  static std::atomic<int> counter{0};
  return "inproc://" + stem + "-" + std::to_string(counter++);
}

}  // namespace troupe
