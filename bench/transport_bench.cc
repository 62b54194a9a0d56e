// troupe's message path against raw libzmq, measured in the same run on the
// same machine: round trips per second (DEALER -> ROUTER echo) and one-way
// throughput (DEALER streaming to ROUTER) for 64 B, 1 KiB and 64 KiB payloads
// over inproc:// and tcp://127.0.0.1. The troupe side sends each payload in a
// framed, versioned Envelope (header + Protobuf) through FramedSocket and
// checks every frame on receipt; the raw side sends the bare bytes. Two raw
// references: "raw" receives without reading the payload (as libzmq's own
// perf tools do), "raw+copy" copies the payload out of the message into a
// string, the least any receiver that uses its messages does. On this 2-core
// machine reading a payload written by another core is most of the difference
// between the two. Ratios are troupe / reference.
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "comms/endpoint.h"
#include "comms/framed_socket.h"
#include "comms/proto/runtime.pb.h"

using namespace troupe;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string Endpoint(const std::string& transport, int n) {
  return transport == "inproc" ? UniqueInprocEndpoint("bench") : "tcp://127.0.0.1:*";
}

// Raw libzmq: messages per second one way (payload copied out when `consume`).
double RawThroughput(const std::string& transport, size_t bytes, int count, bool consume) {
  zmq::socket_t rx(SharedContext(), zmq::socket_type::router), tx(SharedContext(), zmq::socket_type::dealer);
  for (auto* s : {&rx, &tx}) {
    s->set(zmq::sockopt::linger, 0);
    s->set(zmq::sockopt::rcvhwm, 100000);
    s->set(zmq::sockopt::sndhwm, 100000);
  }
  rx.bind(Endpoint(transport, 0));
  tx.connect(rx.get(zmq::sockopt::last_endpoint));
  const std::string payload(bytes, 'p');
  const auto t0 = Clock::now();
  std::thread sender([&] {
    for (int i = 0; i < count; ++i) tx.send(zmq::buffer(payload), zmq::send_flags::none);
  });
  zmq::message_t id, msg;
  std::string used;
  for (int i = 0; i < count; ++i) {
    (void)rx.recv(id);
    (void)rx.recv(msg);
    if (consume) used.assign(static_cast<const char*>(msg.data()), msg.size());
  }
  const double s = Seconds(t0);
  sender.join();
  return count / s;
}

double RawRoundTrips(const std::string& transport, size_t bytes, int count) {
  zmq::socket_t server(SharedContext(), zmq::socket_type::router), client(SharedContext(), zmq::socket_type::dealer);
  server.set(zmq::sockopt::linger, 0);
  client.set(zmq::sockopt::linger, 0);
  server.bind(Endpoint(transport, 0));
  client.connect(server.get(zmq::sockopt::last_endpoint));
  std::thread echo([&] {
    zmq::message_t id, msg;
    for (int i = 0; i < count; ++i) {
      (void)server.recv(id);
      (void)server.recv(msg);
      server.send(id, zmq::send_flags::sndmore);
      server.send(msg, zmq::send_flags::none);
    }
  });
  const std::string payload(bytes, 'p');
  zmq::message_t reply;
  const auto t0 = Clock::now();
  for (int i = 0; i < count; ++i) {
    client.send(zmq::buffer(payload), zmq::send_flags::none);
    (void)client.recv(reply);
  }
  const double s = Seconds(t0);
  echo.join();
  return count / s;
}

// troupe: framed Envelopes through FramedSocket, every frame checked and parsed.
double TroupeThroughput(const std::string& transport, size_t bytes, int count) {
  SocketOptions o;
  o.receive_hwm = o.send_hwm = 100000;
  auto rx = FramedSocket::Bind(zmq::socket_type::router, Endpoint(transport, 0), o);
  auto tx = FramedSocket::Connect(zmq::socket_type::dealer, rx->endpoint(), o);
  const auto t0 = Clock::now();
  std::thread sender([&] {
    wire::Envelope e;
    e.mutable_echo()->set_payload(std::string(bytes, 'p'));
    for (int i = 0; i < count; ++i) {
      e.set_request_id(i);
      tx->Send(e);
    }
  });
  wire::Envelope got;
  std::string who;
  for (int i = 0; i < count; ++i) rx->Receive(&got, std::chrono::milliseconds(10000), &who);
  const double s = Seconds(t0);
  sender.join();
  return count / s;
}

double TroupeRoundTrips(const std::string& transport, size_t bytes, int count) {
  auto server = FramedSocket::Bind(zmq::socket_type::router, Endpoint(transport, 0));
  auto client = FramedSocket::Connect(zmq::socket_type::dealer, server->endpoint());
  std::thread echo([&] {
    wire::Envelope e;
    std::string who;
    for (int i = 0; i < count; ++i) {
      server->Receive(&e, std::chrono::milliseconds(10000), &who);
      server->Send(e, who);
    }
  });
  wire::Envelope req, reply;
  req.mutable_echo()->set_payload(std::string(bytes, 'p'));
  const auto t0 = Clock::now();
  for (int i = 0; i < count; ++i) {
    req.set_request_id(i);
    client->Send(req);
    client->Receive(&reply, std::chrono::milliseconds(10000));
  }
  const double s = Seconds(t0);
  echo.join();
  return count / s;
}

// Best of `repeats` (the machine has 2 cores; the best run is the least disturbed one).
double Best(const std::function<double()>& f, int repeats = 3) {
  double best = 0;
  for (int i = 0; i < repeats; ++i) best = std::max(best, f());
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  // Optional: one case only, e.g. `transport_bench inproc 1024` (for profiling).
  const std::string only_transport = argc > 2 ? argv[1] : "";
  const size_t only_bytes = argc > 2 ? std::stoul(argv[2]) : 0;
  std::printf("%-7s %8s | %11s %11s %11s %6s %6s | %10s %10s %6s | %10s\n", "", "payload", "raw msg/s",
              "+copy msg/s", "troupe", "/raw", "/copy", "raw rt/s", "troupe", "/raw", "troupe MB/s");
  std::string json = "{";
  for (const std::string transport : {"inproc", "tcp"}) {
    for (size_t bytes : {size_t{64}, size_t{1024}, size_t{65536}}) {
      if (!only_transport.empty() && (transport != only_transport || bytes != only_bytes)) continue;
      const int n = bytes >= 65536 ? 20000 : 200000;
      const int rt = bytes >= 65536 ? 5000 : 20000;
      const double raw_tp = Best([&] { return RawThroughput(transport, bytes, n, false); });
      const double copy_tp = Best([&] { return RawThroughput(transport, bytes, n, true); });
      const double our_tp = Best([&] { return TroupeThroughput(transport, bytes, n); });
      const double raw_rt = Best([&] { return RawRoundTrips(transport, bytes, rt); });
      const double our_rt = Best([&] { return TroupeRoundTrips(transport, bytes, rt); });
      std::printf("%-7s %8zu | %11.0f %11.0f %11.0f %6.2f %6.2f | %10.0f %10.0f %6.2f | %10.1f\n", transport.c_str(),
                  bytes, raw_tp, copy_tp, our_tp, our_tp / raw_tp, our_tp / copy_tp, raw_rt, our_rt, our_rt / raw_rt,
                  our_tp * bytes / 1e6);
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "%s\"%s_%zu\":{\"throughput_vs_raw\":%.3f,\"throughput_vs_raw_copy\":%.3f,\"round_trip_vs_raw\":%.3f}",
                    json.size() > 1 ? "," : "", transport.c_str(), bytes, our_tp / raw_tp, our_tp / copy_tp,
                    our_rt / raw_rt);
      json += buf;
    }
  }
  std::printf("%s}\n", json.c_str());
  return 0;
}
