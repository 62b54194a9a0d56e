// The comms layer over real ZeroMQ sockets and real files: frames that are
// malformed, truncated, oversized or of another protocol version are refused
// and counted; CURVE refuses unauthenticated peers; the event publisher never
// blocks on a slow subscriber; a session file survives its writer being killed.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "comms/curve.h"
#include "comms/endpoint.h"
#include "comms/event_stream.h"
#include "comms/framed_socket.h"
#include "comms/proto/runtime.pb.h"
#include "comms/session_file.h"
#include "core/base/errors.h"

using namespace troupe;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

std::string TempPath(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("troupe-comms-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  return p.string();
}

std::string Frame(uint16_t version, const std::string& body, int32_t length_delta = 0) {
  std::string f = "TRPE";
  f += static_cast<char>(version & 0xff);
  f += static_cast<char>(version >> 8);
  f += std::string(2, '\0');
  const uint32_t len = static_cast<uint32_t>(static_cast<int64_t>(body.size()) + length_delta);
  for (int i = 0; i < 4; ++i) f += static_cast<char>((len >> (8 * i)) & 0xff);
  return f + body;
}

std::string EchoBody(size_t bytes) {
  wire::Envelope e;
  e.mutable_echo()->set_payload(std::string(bytes, 'x'));
  return e.SerializeAsString();
}

}  // namespace

TEST_CASE("bad frames over a real socket are refused, counted by kind, and the socket keeps serving",
          "[comms][frame]") {
  SocketOptions o;
  o.max_frame_bytes = 1024;
  auto server = FramedSocket::Bind(zmq::socket_type::router, "tcp://127.0.0.1:*", o);
  zmq::socket_t client(SharedContext(), zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  client.connect(server->endpoint());
  const std::string body = EchoBody(10);
  const std::vector<std::string> bad = {
      "TRP",                                                    // shorter than a header
      std::string("XXXX") + Frame(1, body).substr(4),           // bad magic
      Frame(kProtocolVersion + 1, body),                        // another protocol version
      Frame(kProtocolVersion, body, +100),                      // header promises more than came
      Frame(kProtocolVersion, "\xff\xff\xff\xff\x0f garbage"),  // not a protobuf message
      Frame(kProtocolVersion, EchoBody(2000)),                  // over max_frame_bytes
  };
  for (const auto& b : bad) client.send(zmq::buffer(b), zmq::send_flags::none);
  client.send(zmq::buffer(Frame(kProtocolVersion, body)), zmq::send_flags::none);

  wire::Envelope got;
  std::string who;
  REQUIRE(server->Receive(&got, milliseconds(3000), &who));
  CHECK(got.echo().payload() == std::string(10, 'x'));
  const FrameRejects& r = server->rejects();
  CHECK(r.truncated == 2);
  CHECK(r.bad_magic == 1);
  CHECK(r.wrong_version == 1);
  CHECK(r.malformed == 1);
  CHECK(r.oversized == 1);
  CHECK(r.total() == 6);
}

TEST_CASE("frames round-trip and decoding names each fault", "[comms][frame]") {
  wire::Envelope e, back;
  e.set_request_id(42);
  e.mutable_echo()->set_payload("abc");
  std::string f;
  EncodeFrame(e, &f);
  CHECK(DecodeFrame(f.data(), f.size(), kDefaultMaxFrameBytes, &back) == FrameStatus::kOk);
  CHECK(back.request_id() == 42);
  CHECK(DecodeFrame(f.data(), f.size() - 1, kDefaultMaxFrameBytes, &back) == FrameStatus::kTruncated);
  CHECK(DecodeFrame(f.data(), f.size(), f.size() - 1, &back) == FrameStatus::kOversized);
  CHECK(std::string(FrameStatusName(FrameStatus::kWrongVersion)) == "wrong protocol version");
}

TEST_CASE("an attachment arrives byte for byte after its envelope, and only where one is expected", "[comms][frame]") {
  auto server = FramedSocket::Bind(zmq::socket_type::router, UniqueInprocEndpoint("attach-test"));
  auto client = FramedSocket::Connect(zmq::socket_type::dealer, server->endpoint());
  wire::Envelope e, got;
  e.set_request_id(7);
  std::string bulk(3000, '\0');
  for (size_t i = 0; i < bulk.size(); ++i) bulk[i] = static_cast<char>(i * 31);
  REQUIRE(client->SendWithAttachment(e, bulk));
  Attachment a;
  std::string who;
  REQUIRE(server->Receive(&got, milliseconds(3000), &who, &a));
  CHECK(got.request_id() == 7);
  CHECK(a.view() == bulk);

  // A receiver that takes no attachment refuses the frame, and goes on serving.
  REQUIRE(client->SendWithAttachment(e, bulk));
  e.set_request_id(8);
  REQUIRE(client->Send(e));
  REQUIRE(server->Receive(&got, milliseconds(3000), &who));
  CHECK(got.request_id() == 8);
  CHECK(server->rejects().malformed == 1);

  // Unknown flags and a body longer than the frame are refused when decoding.
  std::string f;
  EncodeFrame(e, &f);
  f[6] = 2;
  size_t offset = 0;
  CHECK(DecodeFrame(f.data(), f.size(), kDefaultMaxFrameBytes, &got, &offset) == FrameStatus::kMalformed);
  f[6] = static_cast<char>(kFlagAttachment);
  CHECK(DecodeFrame(f.data(), f.size() - 1, kDefaultMaxFrameBytes, &got, &offset) == FrameStatus::kTruncated);
  CHECK(DecodeFrame(f.data(), f.size(), kDefaultMaxFrameBytes, &got, &offset) == FrameStatus::kOk);
  CHECK(offset == f.size());  // flagged, but nothing attached
}

TEST_CASE("endpoints off loopback need CURVE keys, and bad endpoints say what is wrong", "[comms][security]") {
  CHECK_THROWS_WITH(FramedSocket::Bind(zmq::socket_type::router, "tcp://0.0.0.0:*"),
                    Catch::Contains("reachable from other hosts") && Catch::Contains("troupe keys"));
  CHECK_THROWS_WITH(ParseEndpoint("udp://x:1"), Catch::Contains("not inproc, ipc or tcp"));
  CHECK_THROWS_WITH(ParseEndpoint("tcp://127.0.0.1:http"), Catch::Contains("port"));
  CHECK(ParseEndpoint("tcp://localhost:5555").loopback);
  CHECK_FALSE(ParseEndpoint("tcp://10.1.2.3:5555").loopback);
}

TEST_CASE("with CURVE on, unauthenticated and unadmitted clients are refused and an admitted one is heard",
          "[comms][security]") {
  const std::string keys = TempPath("keys");
  WriteCurveKeys(keys);
  SocketOptions so;
  so.security.keys_dir = keys;
  CurveAuthenticator auth(so.security);
  auto server = FramedSocket::Bind(zmq::socket_type::router, "tcp://127.0.0.1:*", so);
  const std::string endpoint = server->endpoint();
  wire::Envelope hello, got;
  hello.mutable_echo()->set_payload("let me in");

  // No CURVE at all: the handshake fails, nothing arrives.
  auto plain = FramedSocket::Connect(zmq::socket_type::dealer, endpoint);
  plain->Send(hello);
  CHECK_FALSE(server->Receive(&got, milliseconds(500)));

  // CURVE with the right server key but a client key the server does not admit.
  const std::string stranger = TempPath("stranger");
  WriteCurveKeys(stranger);
  fs::copy_file(fs::path(keys) / "server.public", fs::path(stranger) / "server.public",
                fs::copy_options::overwrite_existing);
  SocketOptions so2;
  so2.security.keys_dir = stranger;
  auto unadmitted = FramedSocket::Connect(zmq::socket_type::dealer, endpoint, so2);
  unadmitted->Send(hello);
  CHECK_FALSE(server->Receive(&got, milliseconds(500)));
  CHECK(auth.refused() >= 1);

  auto admitted = FramedSocket::Connect(zmq::socket_type::dealer, endpoint, so);
  admitted->Send(hello);
  REQUIRE(server->Receive(&got, milliseconds(3000)));
  CHECK(got.echo().payload() == "let me in");
  CHECK(auth.admitted() >= 1);
  fs::remove_all(keys);
  fs::remove_all(stranger);
}

TEST_CASE("a subscriber that never reads makes the publisher drop and count, never block", "[comms][events]") {
  SocketOptions po;
  po.send_hwm = 10;
  const std::string endpoint = UniqueInprocEndpoint("events-test");
  EventPublisher pub(endpoint, po);
  SocketOptions so;
  so.receive_hwm = 10;
  EventSubscriber sub(endpoint, so);
  // Wait until the subscription has reached the publisher.
  session::Event probe;
  for (int i = 0; i < 100 && pub.subscribers() == 0; ++i) {
    pub.Publish(probe);
    std::this_thread::sleep_for(milliseconds(10));
  }
  REQUIRE(pub.subscribers() == 1);
  const int64_t before = pub.published() + pub.dropped();
  session::Event e;
  e.mutable_metrics()->set_iteration(1);
  for (int i = 0; i < 20000; ++i) pub.Publish(e);
  CHECK(pub.published() + pub.dropped() - before == 20000);
  CHECK(pub.dropped() > 19000);
  // The subscriber reads what was queued and sees the gap afterwards.
  session::Event got;
  int read = 0;
  while (sub.Next(&got, milliseconds(100))) ++read;
  CHECK(read > 0);
  CHECK(read < 200);
}

TEST_CASE("a session file whose writer was killed with SIGKILL reads back to its last complete event",
          "[comms][session]") {
  const std::string path = TempPath("killed.session");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    SessionWriter w(path);
    session::Event e;
    for (uint64_t i = 0;; ++i) {
      e.set_sequence(i);
      e.mutable_message()->set_text(std::string(100 + i % 300, 'm'));
      w.Write(e, i % 7 == 0);
    }
  }
  // Let it write for a while, then kill it mid-stream.
  for (int i = 0; i < 200 && (!fs::exists(path) || fs::file_size(path) < 200000); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  SessionContents c = ReadSessionFile(path);
  REQUIRE(c.events.size() > 100);
  for (size_t i = 0; i < c.events.size(); ++i) REQUIRE(c.events[i].sequence() == i);

  // Cut the file inside its last record: everything before it still reads, and the reader says why it stopped.
  const auto size = fs::file_size(path);
  fs::resize_file(path, size - 5);
  SessionContents cut = ReadSessionFile(path);
  CHECK(cut.events.size() + 1 >= c.events.size());
  CHECK(cut.events.size() < c.events.size() + 1);
  CHECK_FALSE(cut.error.empty());
  // Corrupt a byte in the middle: reading stops at the damaged record.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put('\x7f');
  }
  SessionContents bad = ReadSessionFile(path);
  CHECK(bad.events.size() < cut.events.size());
  CHECK_FALSE(bad.error.empty());
  CHECK_THAT(SummarizeSession(bad), Catch::Contains("stopped reading"));
  fs::remove(path);
}
