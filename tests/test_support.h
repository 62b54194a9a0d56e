// Helpers shared by the test files: a tiny Red-Black workflow that trains in
// seconds, running a command line in a real process, reading a file whole.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "tests/test_paths.h"

namespace troupe::testing {

// Three agents a side, three rounds, a 16-wide one-layer model.
inline std::string TinyRedBlack(int seed, const std::string& trainer) {
  return "name: \"tiny\"\nseed: " + std::to_string(seed) + R"(
game { name: "red_black" param { name: "team_size" int: 3 } param { name: "rounds" int: 3 }
       param { name: "multipliers" text: "3:3" } param { name: "reason_words" int: 1 } }
model { name: "m" transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 64 } optimizer { lr: 0.01 } }
role { name: "a" seats: "a*" model: "m" }
role { name: "b" seats: "b*" scripted: "tit_for_tat" }
reward { level: TURN signal: "round_payoff" to_go: true weight: 0.1 }
reward { level: ROLE signal: "format" weight: 1 }
credit { group_size: 4 }
)" + trainer +
         "\n";
}

// split_facts between two agents on models of different widths (16 and 24,
// the wide one with weight decay) exchanging HYBRID messages, trained by
// trainer.hybrid with `hybrid` (and `eval_episodes`).
inline std::string HybridWidths(int eval_episodes, const std::string& hybrid) {
  return R"(name: "widths" seed: 5
game { name: "split_facts" param { name: "entities" int: 4 } param { name: "values" int: 4 } param { name: "asks" int: 1 } }
model { name: "narrow" transformer { d_model: 16 layers: 1 heads: 2 ff_mult: 2 max_len: 48 } optimizer { lr: 0.003 } }
model { name: "wide" transformer { d_model: 24 layers: 1 heads: 2 ff_mult: 2 max_len: 48 } optimizer { lr: 0.003 weight_decay: 0.01 } }
role { name: "a" seats: "a" model: "narrow" }
role { name: "b" seats: "b" model: "wide" }
channel { from: "a" to: "b" mode: HYBRID }
channel { from: "b" to: "a" mode: HYBRID }
reward { level: TRAJECTORY signal: "correct" }
trainer { eval_episodes: )" +
         std::to_string(eval_episodes) + " hybrid { " + hybrid + " } }\n";
}

struct CommandResult {
  int status = -1;     // exit status, -1 when it did not exit normally
  std::string output;  // stdout and stderr
};

inline CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A path under the temp folder named `name` and this process (so test runs of
// two checkouts at once do not share it), emptied (nothing there yet).
inline std::string FreshTempPath(const std::string& name) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

// A file's whole content ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A folder (under the temp folder, named `name` so that parallel test
// processes keep apart) whose runs/base_model/model stands in for troupe's
// base model (made by `troupe pretrain` of the shipped base_model workflow,
// an hour): the same kind of folder (config.json, weights,
// tokenizer.json) from a pretraining of seconds, so that workflows which load
// the base model validate when run from it. Throws with troupe's output when
// the pretraining fails.
inline std::string MakeStandInBaseModel(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / name;
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path config = root / "tiny_base.textproto";
  std::ofstream(config) << R"(name: "tiny_base" seed: 1
model { name: "base" llama { hidden_size: 32 intermediate_size: 64 layers: 1 heads: 2 kv_heads: 1 max_len: 1024 } }
pretrain { corpus: "moby_dick" heldout_every: 10 vocab_size: 2048 seq_len: 64 batch: 4 max_tokens: 4096 eval_every: 16
           eval_tokens: 1024 checkpoint_every: 16 }
)";
  const CommandResult r =
      RunCommand(TroupeBinary() + " pretrain " + config.string() + " --out " + (root / "runs/base_model").string());
  if (r.status != 0) throw std::runtime_error("the stand-in base model's pretraining failed:\n" + r.output);
  return root.string();
}

// A loopback tcp port for test endpoint number `slot`, free when asked.
// Ports come from 20000-32759, below the kernel's ephemeral range (32768+),
// so the ports other tests' sockets, TCPStores and Gloo pairs are handed by
// the kernel can never take one; the process id spreads parallel test
// processes apart, and a port found busy is skipped.
inline int FreeTestPort(int slot) {
  constexpr int kFirst = 20000, kCount = 12760, kSlots = 16;
  const int start = (static_cast<int>(::getpid()) * kSlots) % kCount;
  for (int attempt = 0; attempt < kCount / kSlots; ++attempt) {
    const int port = kFirst + (start + slot + attempt * kSlots * 37) % kCount;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return port;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    if (free) return port;
  }
  return kFirst + (start + slot) % kCount;
}

}  // namespace troupe::testing
