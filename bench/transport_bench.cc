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
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

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
// `attach`: the payload travels as the frame's attachment (not copied through Protobuf).
double TroupeThroughput(const std::string& transport, size_t bytes, int count, bool attach) {
  SocketOptions o;
  o.receive_hwm = o.send_hwm = 100000;
  auto rx = FramedSocket::Bind(zmq::socket_type::router, Endpoint(transport, 0), o);
  auto tx = FramedSocket::Connect(zmq::socket_type::dealer, rx->endpoint(), o);
  const std::string payload(bytes, 'p');
  const auto t0 = Clock::now();
  std::thread sender([&] {
    wire::Envelope e;
    if (attach) {
      e.mutable_echo();
    } else {
      e.mutable_echo()->set_payload(payload);
    }
    for (int i = 0; i < count; ++i) {
      e.set_request_id(i);
      if (attach) {
        tx->SendWithAttachment(e, payload);
      } else {
        tx->Send(e);
      }
    }
  });
  wire::Envelope got;
  std::string who;
  Attachment bulk;
  for (int i = 0; i < count; ++i) {
    // A bench that counted refusals as deliveries would flatter troupe: check each one.
    if (!rx->Receive(&got, std::chrono::milliseconds(10000), &who, attach ? &bulk : nullptr) ||
        (attach ? bulk.size() : got.echo().payload().size()) != bytes) {
      std::fprintf(stderr, "transport_bench: message %d of %d lost or wrong (%lld refused)\n", i, count,
                   static_cast<long long>(rx->rejects().total()));
      std::exit(1);
    }
  }
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

struct Spread {
  double median = 0, low = 0, high = 0;
};

Spread Summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

}  // namespace

int main(int argc, char** argv) {
  // Optional: one case only, e.g. `transport_bench inproc 1024` (for profiling),
  // and the number of interleaved rounds (default 7).
  const std::string only_transport = argc > 2 ? argv[1] : "";
  const size_t only_bytes = argc > 2 ? std::stoul(argv[2]) : 0;
  const int rounds = argc > 3 ? std::max(1, std::stoi(argv[3])) : 7;
  std::printf(
      "Medians of %d interleaved rounds (each round runs every variant once, in rotating order);\n"
      "ratios are taken within a round, then the median ratio is reported with [lowest, highest].\n\n",
      rounds);
  std::printf("troupe: payload inside the Protobuf envelope; attached: payload as the frame's attachment.\n\n");
  std::printf("%-7s %8s | %10s %10s %10s %10s | %-17s %-17s %-17s | %9s %9s %-17s\n", "", "payload", "raw msg/s",
              "+copy", "troupe", "attached", "troupe/raw", "troupe/raw+copy", "attached/raw", "raw rt/s", "troupe",
              "troupe/raw rt");
  std::string json = "{";
  for (const std::string transport : {"inproc", "tcp"}) {
    for (size_t bytes : {size_t{64}, size_t{1024}, size_t{65536}}) {
      if (!only_transport.empty() && (transport != only_transport || bytes != only_bytes)) continue;
      const int n = bytes >= 65536 ? 20000 : 200000;
      const int rt = bytes >= 65536 ? 5000 : 20000;
      std::vector<double> raw_tp, copy_tp, our_tp, att_tp, raw_rt, our_rt, vs_raw, vs_copy, vs_att, vs_rt;
      for (int r = 0; r < rounds; ++r) {
        double t[4];
        // Rotate who goes first: the machine's state drifts within a round.
        for (int k = 0; k < 4; ++k) {
          const int which = (k + r) % 4;
          t[which] = which == 0   ? RawThroughput(transport, bytes, n, false)
                     : which == 1 ? RawThroughput(transport, bytes, n, true)
                                  : TroupeThroughput(transport, bytes, n, which == 3);
        }
        double rr, ort;
        if (r % 2 == 0) {
          rr = RawRoundTrips(transport, bytes, rt);
          ort = TroupeRoundTrips(transport, bytes, rt);
        } else {
          ort = TroupeRoundTrips(transport, bytes, rt);
          rr = RawRoundTrips(transport, bytes, rt);
        }
        raw_tp.push_back(t[0]);
        copy_tp.push_back(t[1]);
        our_tp.push_back(t[2]);
        att_tp.push_back(t[3]);
        raw_rt.push_back(rr);
        our_rt.push_back(ort);
        vs_raw.push_back(t[2] / t[0]);
        vs_copy.push_back(t[2] / t[1]);
        vs_att.push_back(t[3] / t[0]);
        vs_rt.push_back(ort / rr);
      }
      const Spread a = Summarise(vs_raw), c = Summarise(vs_copy), q = Summarise(vs_rt), x = Summarise(vs_att);
      char ra[32], rc[32], rq[32], rx[32];
      std::snprintf(rx, sizeof rx, "%.2f [%.2f,%.2f]", x.median, x.low, x.high);
      std::snprintf(ra, sizeof ra, "%.2f [%.2f,%.2f]", a.median, a.low, a.high);
      std::snprintf(rc, sizeof rc, "%.2f [%.2f,%.2f]", c.median, c.low, c.high);
      std::snprintf(rq, sizeof rq, "%.2f [%.2f,%.2f]", q.median, q.low, q.high);
      std::printf("%-7s %8zu | %10.0f %10.0f %10.0f %10.0f | %-17s %-17s %-17s | %9.0f %9.0f %-17s\n",
                  transport.c_str(), bytes, Summarise(raw_tp).median, Summarise(copy_tp).median,
                  Summarise(our_tp).median, Summarise(att_tp).median, ra, rc, rx, Summarise(raw_rt).median,
                  Summarise(our_rt).median, rq);
      char buf[400];
      std::snprintf(buf, sizeof buf,
                    "%s\"%s_%zu\":{\"throughput_vs_raw\":%.3f,\"throughput_vs_raw_low\":%.3f,"
                    "\"throughput_vs_raw_copy\":%.3f,\"attached_vs_raw\":%.3f,\"attached_vs_raw_low\":%.3f,"
                    "\"round_trip_vs_raw\":%.3f}",
                    json.size() > 1 ? "," : "", transport.c_str(), bytes, a.median, a.low, c.median, x.median, x.low,
                    q.median);
      json += buf;
    }
  }
  std::printf("%s}\n", json.c_str());
  return 0;
}
