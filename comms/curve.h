// CurveZMQ security: key pairs in files (made by `troupe keys`), and a ZAP
// handler that admits only the listed client keys. Non-loopback tcp endpoints
// require it; unauthenticated peers fail the handshake and are never heard.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <zmq.hpp>

namespace troupe {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters; empty for a public-only file
};

CurveKeyPair GenerateCurveKeyPair();

// Writes server.secret, server.public, client.secret, client.public under `dir`
// (secret files readable by the owner only). Returns the files written.
std::string WriteCurveKeys(const std::string& dir);

// Reads "public = ..." / "secret = ..." lines; throws CommsError.
CurveKeyPair ReadCurveKeyFile(const std::string& path);

// What a socket needs: empty `keys_dir` means no CURVE.
struct Security {
  std::string keys_dir;
  bool enabled() const { return !keys_dir.empty(); }
};

// Configures a binding socket as CURVE server (server.secret) or a connecting
// one as CURVE client (client.secret + server.public).
void ApplyCurveServer(zmq::socket_t& socket, const Security& security);
void ApplyCurveClient(zmq::socket_t& socket, const Security& security);

// Refuses to use a non-loopback tcp endpoint without keys.
void RequireSecurityFor(const std::string& endpoint, const Security& security);

// The ZAP handler of the shared context: admits CURVE clients whose public key
// is in `dir`/client.public (and *.public files of an `authorized` subfolder).
class CurveAuthenticator {
 public:
  explicit CurveAuthenticator(const Security& security);
  ~CurveAuthenticator();
  int64_t refused() const { return refused_; }
  int64_t admitted() const { return admitted_; }

 private:
  void Serve();
  std::set<std::string> allowed_;  // raw 32-byte keys
  std::unique_ptr<zmq::socket_t> socket_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> refused_{0}, admitted_{0};
  std::thread thread_;
};

}  // namespace troupe
