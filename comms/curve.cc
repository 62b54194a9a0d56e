// CURVE key files and the ZAP allow-list handler.
#include "comms/curve.h"

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "comms/endpoint.h"
#include "core/base/errors.h"

namespace troupe {

namespace fs = std::filesystem;

CurveKeyPair GenerateCurveKeyPair() {
  char pub[41] = {0}, sec[41] = {0};
  if (zmq_curve_keypair(pub, sec) != 0) {
    throw CommsError("this libzmq cannot make CURVE keys (built without libsodium?): " +
                     std::string(zmq_strerror(zmq_errno())));
  }
  return {pub, sec};
}

namespace {

void WriteKeyFile(const fs::path& path, const CurveKeyPair& keys, bool with_secret) {
  std::ofstream out(path);
  out << "# troupe CURVE key (Z85)\npublic = " << keys.public_key << "\n";
  if (with_secret) out << "secret = " << keys.secret_key << "\n";
  out.close();
  if (!out) throw CommsError("cannot write key file " + path.string());
  ::chmod(path.c_str(), with_secret ? 0600 : 0644);
}

std::string RawKey(const std::string& z85, const std::string& where) {
  if (z85.size() != 40)
    throw CommsError(where + ": a CURVE key has 40 Z85 characters, found " + std::to_string(z85.size()));
  std::string raw(32, '\0');
  if (zmq_z85_decode(reinterpret_cast<uint8_t*>(raw.data()), z85.c_str()) == nullptr) {
    throw CommsError(where + ": not a Z85 key");
  }
  return raw;
}

}  // namespace

std::string WriteCurveKeys(const std::string& dir) {
  fs::create_directories(dir);
  const CurveKeyPair server = GenerateCurveKeyPair(), client = GenerateCurveKeyPair();
  const fs::path d(dir);
  WriteKeyFile(d / "server.secret", server, true);
  WriteKeyFile(d / "server.public", server, false);
  WriteKeyFile(d / "client.secret", client, true);
  WriteKeyFile(d / "client.public", client, false);
  return (d / "server.secret").string() + ", " + (d / "server.public").string() + ", " +
         (d / "client.secret").string() + ", " + (d / "client.public").string();
}

CurveKeyPair ReadCurveKeyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CommsError("cannot read key file " + path + " (make keys with `troupe keys --out DIR`)");
  CurveKeyPair keys;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw CommsError(path + ":" + std::to_string(number) + ": expected 'public = KEY'");
    std::string name = line.substr(0, eq), value = line.substr(eq + 1);
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    name = trim(name);
    value = trim(value);
    RawKey(value, path + ":" + std::to_string(number));
    if (name == "public") keys.public_key = value;
    else if (name == "secret") keys.secret_key = value;
    else throw CommsError(path + ":" + std::to_string(number) + ": unknown key name '" + name + "'");
  }
  if (keys.public_key.empty()) throw CommsError(path + ": no public key");
  return keys;
}

void RequireSecurityFor(const std::string& endpoint, const Security& security) {
  const Endpoint e = ParseEndpoint(endpoint);
  if (!e.loopback && !security.enabled()) {
    throw CommsError("endpoint " + endpoint +
                     " is reachable from other hosts: pass CURVE keys (--keys DIR, made by `troupe keys --out DIR`) "
                     "or use a loopback address");
  }
}

void ApplyCurveServer(zmq::socket_t& socket, const Security& security) {
  if (!security.enabled()) return;
  const CurveKeyPair server = ReadCurveKeyFile((fs::path(security.keys_dir) / "server.secret").string());
  if (server.secret_key.empty()) throw CommsError(security.keys_dir + "/server.secret holds no secret key");
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, server.secret_key);
  socket.set(zmq::sockopt::zap_domain, "troupe");
}

void ApplyCurveClient(zmq::socket_t& socket, const Security& security) {
  if (!security.enabled()) return;
  const CurveKeyPair client = ReadCurveKeyFile((fs::path(security.keys_dir) / "client.secret").string());
  const CurveKeyPair server = ReadCurveKeyFile((fs::path(security.keys_dir) / "server.public").string());
  if (client.secret_key.empty()) throw CommsError(security.keys_dir + "/client.secret holds no secret key");
  socket.set(zmq::sockopt::curve_serverkey, server.public_key);
  socket.set(zmq::sockopt::curve_publickey, client.public_key);
  socket.set(zmq::sockopt::curve_secretkey, client.secret_key);
}

CurveAuthenticator::CurveAuthenticator(const Security& security) {
  const fs::path dir(security.keys_dir);
  std::vector<fs::path> files = {dir / "client.public"};
  if (fs::is_directory(dir / "authorized")) {
    for (const auto& entry : fs::directory_iterator(dir / "authorized")) {
      if (entry.path().extension() == ".public") files.push_back(entry.path());
    }
  }
  for (const auto& f : files) {
    if (fs::exists(f)) allowed_.insert(RawKey(ReadCurveKeyFile(f.string()).public_key, f.string()));
  }
  if (allowed_.empty()) throw CommsError("no client keys to admit in " + security.keys_dir);
  socket_ = std::make_unique<zmq::socket_t>(SharedContext(), zmq::socket_type::rep);
  socket_->set(zmq::sockopt::linger, 0);
  socket_->bind("inproc://zeromq.zap.01");
  thread_ = std::thread([this] { Serve(); });
}

CurveAuthenticator::~CurveAuthenticator() {
  stop_ = true;
  thread_.join();
}

void CurveAuthenticator::Serve() {
  while (!stop_) {
    zmq::pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(50)) == 0) continue;
    std::vector<zmq::message_t> parts;
    while (true) {
      zmq::message_t part;
      if (!socket_->recv(part, zmq::recv_flags::dontwait)) break;
      const bool more = part.more();
      parts.push_back(std::move(part));
      if (!more) break;
    }
    // ZAP request: version, request id, domain, address, identity, mechanism, credentials...
    if (parts.size() < 6) continue;
    const std::string mechanism = parts[5].to_string();
    bool ok = false;
    if (mechanism == "CURVE" && parts.size() >= 7) ok = allowed_.count(parts[6].to_string()) > 0;
    (ok ? admitted_ : refused_)++;
    const std::string reply[6] = {
        "1.0", parts[1].to_string(), ok ? "200" : "400", ok ? "OK" : "client key not admitted", ok ? "client" : "", ""};
    for (int i = 0; i < 6; ++i) {
      socket_->send(zmq::buffer(reply[i]), i < 5 ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
}

}  // namespace troupe
