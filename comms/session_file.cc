// Session file writing, reading and summary.
#include "comms/session_file.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/base/errors.h"

namespace troupe {

namespace {

// The first record of every session file: what it is, and its format version.
constexpr const char* kHeaderName = "troupe-session";
constexpr int kFormatVersion = 1;

std::string Header() { return std::string(kHeaderName) + " " + std::to_string(kFormatVersion); }

// Whether a new header is due: a fresh file, or an append to one that holds nothing yet.
bool Fresh(const std::string& path, bool append) {
  if (!append) std::remove(path.c_str());
  std::error_code ec;
  return !append || !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
}

}  // namespace

SessionWriter::SessionWriter(const std::string& path, bool append) : writer_((fresh_ = Fresh(path, append), path)) {
  if (fresh_) {
    writer_.Write(Header());
    writer_.Flush();
  }
}

void SessionWriter::Write(const session::Event& event, bool flush) {
  event.SerializeToString(&buffer_);
  writer_.Write(buffer_);
  ++written_;
  if (flush) writer_.Flush();
}

SessionContents ReadSessionFile(const std::string& path) {
  SessionContents c;
  RecordReader reader(path);
  // Other files of checksummed records (TensorBoard event files) read as records too: the header tells them apart.
  const std::optional<std::string> header = reader.Next();
  const std::string prefix = std::string(kHeaderName) + " ";
  if (!header || header->rfind(prefix, 0) != 0) {
    throw CommsError(path + " is not a troupe session file (" +
                     (header                   ? std::string("it does not start with a session header")
                      : reader.error().empty() ? std::string("it holds no record")
                                               : reader.error()) +
                     ")");
  }
  if (header->substr(prefix.size()) != std::to_string(kFormatVersion)) {
    throw CommsError(path + " is a troupe session of format " + header->substr(prefix.size()) +
                     "; this build reads format " + std::to_string(kFormatVersion));
  }
  while (auto record = reader.Next()) {
    session::Event e;
    if (!e.ParseFromString(*record)) {
      c.error = "record " + std::to_string(c.events.size()) + " is not a session event";
      break;
    }
    c.events.push_back(std::move(e));
  }
  if (c.error.empty()) c.error = reader.error();
  return c;
}

std::string SummarizeSession(const SessionContents& c) {
  std::map<std::string, int64_t> kinds;
  const session::RunStart* start = nullptr;
  const session::RunEnd* end = nullptr;
  int first_it = -1, last_it = -1;
  int64_t dropped_episodes = 0, messages = 0, text_tokens = 0, latent_vectors = 0, bytes = 0;
  std::map<std::string, double> last_metrics;
  std::vector<std::string> worker_lines;
  for (const auto& e : c.events) {
    const auto* field = e.GetDescriptor()->FindOneofByName("body");
    const auto* set = e.GetReflection()->GetOneofFieldDescriptor(e, field);
    kinds[set ? set->name() : "empty"]++;
    if (e.has_run_start()) start = &e.run_start();
    if (e.has_run_end()) end = &e.run_end();
    if (e.has_metrics()) {
      if (first_it < 0) first_it = e.metrics().iteration();
      last_it = e.metrics().iteration();
      last_metrics.clear();
      for (const auto& [k, v] : e.metrics().values()) last_metrics[k] = v;
    }
    if (e.has_episode_end() && e.episode_end().dropped()) ++dropped_episodes;
    if (e.has_message()) {
      ++messages;
      text_tokens += e.message().text_tokens();
      latent_vectors += e.message().latent().vectors();
      bytes += e.message().wire_bytes();
    }
    if (e.has_worker()) {
      const auto& w = e.worker();
      worker_lines.push_back("  worker " + w.model() + "#" + std::to_string(w.replica()) + " " +
                             session::WorkerEvent::Kind_Name(w.kind()) + (w.detail().empty() ? "" : ": " + w.detail()));
    }
  }
  std::ostringstream out;
  out << "events: " << c.events.size() << "\n";
  if (start) {
    out << "run: " << start->run_id() << " workflow " << start->workflow_file()
        << (start->game().empty() ? "" : " game " + start->game()) << ", " << start->role_size() << " roles on "
        << start->model_size() << " models\n";
  }
  if (last_it >= 0) out << "iterations: " << first_it << ".." << last_it << "\n";
  for (const auto& [k, n] : kinds) out << "  " << k << ": " << n << "\n";
  if (messages > 0) {
    out << "messages: " << messages << ", text tokens " << text_tokens << ", latent vectors " << latent_vectors
        << ", wire bytes " << bytes << "\n";
  }
  if (dropped_episodes > 0) out << "dropped episodes: " << dropped_episodes << "\n";
  for (const auto& l : worker_lines) out << l << "\n";
  // The run's headline metrics (training rollouts report them as game/*, hybrid evaluations as eval/*)
  // and each role's reward, as of the last iteration.
  std::vector<std::string> keys;
  if (start != nullptr) {
    for (const auto& h : start->headline_metric()) {
      keys.push_back("game/" + h);
      keys.push_back("eval/" + h);
    }
    for (const auto& role : start->role()) keys.push_back("reward/" + role);
  }
  for (const auto& key : keys) {
    auto it = last_metrics.find(key);
    if (it != last_metrics.end()) out << "last " << key << ": " << it->second << "\n";
  }
  if (end) {
    out << "run end: " << end->iterations() << " iterations in " << end->seconds() << " s"
        << (end->failed() ? ", FAILED: " + end->reason() : "") << "\n";
  } else {
    out << "no run end: the run was still going or stopped without closing the session\n";
  }
  if (!c.error.empty()) out << "stopped reading: " << c.error << "\n";
  return out.str();
}

}  // namespace troupe
