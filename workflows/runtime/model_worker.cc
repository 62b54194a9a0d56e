// The model worker loop and its heartbeat thread.
#include "workflows/runtime/model_worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <ostream>
#include <thread>

#include <spdlog/spdlog.h>

#include "comms/endpoint.h"
#include "comms/framed_socket.h"
#include "comms/proto/runtime.pb.h"
#include "core/base/errors.h"
#include "workflows/runtime/model_server.h"
#include "workflows/runtime/wire_records.h"

namespace troupe {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double Seconds() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

// Sends heartbeats on its own socket; records when the controller last answered.
class HeartbeatThread {
 public:
  HeartbeatThread(const WorkerOptions& o, const std::string& identity) {
    SocketOptions so;
    so.security = o.security;
    so.routing_id = identity + "/hb";
    socket_ = FramedSocket::Connect(zmq::socket_type::dealer, o.endpoint, so);
    last_ack_ = Seconds();
    thread_ = std::thread([this, o] {
      wire::Envelope beat, ack;
      while (!stop_) {
        beat.mutable_heartbeat()->set_sent_at(Seconds());
        socket_->Send(beat, "", true);
        const auto until = Clock::now() + milliseconds(o.heartbeat_ms);
        while (!stop_ && Clock::now() < until) {
          if (socket_->Receive(&ack, milliseconds(20)) && ack.has_heartbeat()) last_ack_ = Seconds();
        }
      }
    });
  }
  ~HeartbeatThread() {
    stop_ = true;
    thread_.join();
  }
  double silent_for() const { return Seconds() - last_ack_; }

 private:
  std::unique_ptr<FramedSocket> socket_;
  std::atomic<bool> stop_{false};
  std::atomic<double> last_ack_{0.0};
  std::thread thread_;
};

// A learner's group as the update request names it.
LearnerGroupSpec LearnersOf(const wire::LearnerGroup& w, const std::string& store_host) {
  LearnerGroupSpec spec;
  spec.rank = w.rank();
  spec.world = std::max(1, w.world());
  spec.store_host = store_host;
  spec.store_port = w.store_port();
  spec.prefix = w.prefix();
  if (w.timeout_ms() > 0) spec.timeout_ms = w.timeout_ms();
  return spec;
}

}  // namespace

std::string WorkerIdentity(const std::string& model, int replica) { return model + "#" + std::to_string(replica); }

std::string ServeModel(const WorkerOptions& o, const std::atomic<bool>* stop) {
  const std::string identity = WorkerIdentity(o.model, o.replica);
  SocketOptions so;
  so.security = o.security;
  so.routing_id = identity;
  auto socket = FramedSocket::Connect(zmq::socket_type::dealer, o.endpoint, so);
  wire::Envelope in, out;
  auto* hello = out.mutable_hello();
  hello->set_model(o.model);
  hello->set_replica(o.replica);
  hello->set_pid(static_cast<int>(::getpid()));
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  hello->set_host(host);
  socket->Send(out);
  // Wait for the welcome (say hello again now and then: the controller may bind late).
  const auto deadline = Clock::now() + milliseconds(o.join_timeout_ms);
  while (!socket->Receive(&in, milliseconds(500)) || !in.has_welcome()) {
    if (in.has_failure())
      throw CommsError("controller at " + o.endpoint + " refused worker " + identity + ": " + in.failure().message());
    if ((stop && *stop) || Clock::now() > deadline) {
      throw TimeoutError("worker " + identity + ": no controller answered at " + o.endpoint + " within " +
                         std::to_string(o.join_timeout_ms / 1000) + " s");
    }
    in.Clear();
    socket->Send(out);
  }
  // The worker builds its model from the spec it is sent: no workflow, no game.
  const wire::ModelServeSpec spec = in.welcome().spec();
  SetTorchThreads(spec.threads());
  ModelServer server(spec);
  spdlog::log(o.announce ? spdlog::level::info : spdlog::level::debug, "worker {}: serving model {} for {}", identity,
              o.model, o.endpoint);

  HeartbeatThread heartbeat(o, identity);
  // The learners' rendezvous store listens on the controller's host.
  const Endpoint controller = ParseEndpoint(o.endpoint);
  const std::string controller_host = controller.scheme == "tcp" ? controller.host : "127.0.0.1";
  std::vector<std::vector<int>> prompts, options;
  std::vector<std::vector<float>> soft;
  Attachment attachment;
  while (true) {
    if (stop && *stop) return "stopped";
    if (heartbeat.silent_for() * 1000 > o.controller_timeout_ms) {
      return "controller silent for " + std::to_string(static_cast<int>(heartbeat.silent_for())) + " s";
    }
    in.Clear();
    if (!socket->Receive(&in, milliseconds(100), nullptr, &attachment)) continue;
    out.Clear();
    std::string reply_attachment;
    out.set_request_id(in.request_id());
    try {
      switch (in.body_case()) {
        case wire::Envelope::kGenerate: {
          const GenerateBatch batch = FromWire(in.generate(), server.model_index(), &prompts, &options, &soft);
          std::vector<Generation> gens = server.Generate(batch);
          auto* reply = out.mutable_generated();
          const int width = static_cast<int>(server.config().sizes().width);
          for (const auto& g : gens) ToWire(g, width, reply->add_rows());
          reply->set_forward_calls(server.forward_calls());
          reply->set_encoded_positions(server.encoded_positions());
          break;
        }
        case wire::Envelope::kUpdate: {
          std::vector<CallRecord> records;
          records.reserve(in.update().records_size());
          for (const auto& r : in.update().records()) records.push_back(FromWire(r, server.model_index()));
          const LearnerGroupSpec learners = LearnersOf(in.update().learners(), controller_host);
          const ModelTrainStats stats = in.update().supervised()
                                            ? server.Supervised(records, in.update().steps(), learners)
                                            : server.Update(records, learners);
          ToWire(stats, out.mutable_updated()->mutable_stats());
          break;
        }
        case wire::Envelope::kHybridStep: {
          HybridSettings settings;
          const HybridBatch batch = FromWire(in.hybrid_step(), server.model_index(), &settings);
          ToWire(server.HybridStep(batch, settings), out.mutable_hybrid_stepped());
          break;
        }
        case wire::Envelope::kCheckpoint:
          if (in.checkpoint().load()) server.Load(in.checkpoint().dir(), in.checkpoint().with_optimizer());
          else if (in.checkpoint().parameters_only()) server.SaveSnapshot(in.checkpoint().dir());
          else server.Save(in.checkpoint().dir());
          out.mutable_done()->set_forward_calls(server.forward_calls());
          break;
        case wire::Envelope::kWeights:
          // Parameters travel as the frame's attachment, never copied through Protobuf.
          if (in.weights().get()) {
            out.mutable_weights();
            reply_attachment = server.SaveWeights();
          } else {
            if (attachment.size() == 0) throw CommsError("a weights message without the parameters attached");
            server.LoadWeights(std::string(attachment.view()));
            out.mutable_done()->set_forward_calls(server.forward_calls());
          }
          break;
        case wire::Envelope::kShutdown:
          out.mutable_done()->set_forward_calls(server.forward_calls());
          socket->Send(out);
          return "shut down by the controller";
        case wire::Envelope::kEcho: *out.mutable_echo() = in.echo(); break;
        default: out.mutable_failure()->set_message("worker " + identity + " cannot serve this request");
      }
    } catch (const std::exception& e) {
      out.clear_body();
      out.mutable_failure()->set_message(e.what());
      reply_attachment.clear();
    }
    if (reply_attachment.empty()) socket->Send(out);
    else socket->SendWithAttachment(out, reply_attachment);
  }
}

}  // namespace troupe
