// PrefixCache: the keys and values a model computed for earlier prompts,
// kept per conversation (GenerateQuery::cache_key: an episode, say) so that a
// later prompt that starts the same way encodes only what is new. Within a
// Red-Black episode every agent's prompt repeats the game's history and the
// round's deliberation: most positions were encoded at an earlier call.
//
// Entries are matched by content (role slot and tokens), never trusted by
// key alone, and all of them are dropped whenever the model's parameters
// change (PolicyModel parameter versions: an optimiser step, a load). Memory
// is bounded: conversations that neither this generation call nor the one
// before it stored to go first, least recently used first. When the recent
// calls' own conversations do not all fit (a rollout of many episodes), those
// stored last go, so that the ones kept are reused at the next call:
// least-recently-used eviction would drop each just before the batch came
// back to it, and reuse none. Only the pool's
// generation uses it; LibTorch is in this header.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace troupe {

class PrefixCache {
 public:
  // Keys and values of one encoded prompt: per layer [1, heads, positions, head_dim].
  struct Entry {
    int role = 0;
    std::vector<int> tokens;
    std::vector<torch::Tensor> keys, values;
    int64_t bytes = 0;
  };
  struct Match {
    const Entry* entry = nullptr;
    int64_t length = 0;  // positions of the prompt whose keys and values `entry` holds
  };

  // A Red-Black prompt on the base model is up to ~550 positions of 4 KiB (float32); 256 MiB held too few of a
  // 32-episode rollout's conversations (docs/results/benchmarks.md), hence 1 GiB.
  explicit PrefixCache(int64_t max_bytes = int64_t{1} << 30) : max_bytes_(max_bytes) {}

  // Drops every entry when `parameters_version` differs from the one the
  // entries were computed with.
  void Validate(uint64_t parameters_version);
  void Clear();
  // Starts a generation call (see above for what eviction makes of calls).
  void BeginCall() { ++call_; }

  // The cached prompt of conversation `key` and slot `role` that shares the
  // longest prefix with `prompt`, capped at prompt.size() - 1 (a call must
  // encode its last position to read the next token's distribution).
  Match Find(int64_t key, int role, const std::vector<int>& prompt) const;

  // Whether conversation `key` already holds `tokens` (or a prompt they begin) for `role`.
  bool Covers(int64_t key, int role, const std::vector<int>& tokens) const;

  // Keeps `entry` under conversation `key`. An entry of the key whose tokens
  // it extends is replaced; one that already covers it makes this a no-op.
  void Store(int64_t key, Entry entry);

  int64_t bytes() const { return bytes_; }
  size_t conversations() const { return by_key_.size(); }

  // Distinct prompts kept per key: a Sugarscape episode (the key) holds 30
  // learners' own conversations; 8 kept most of them missing at every call.
  static constexpr size_t kPerConversation = 64;

 private:
  struct Conversation {
    std::vector<Entry> entries;  // most recently stored last
    std::list<int64_t>::iterator lru;
    uint64_t call = 0;  // the call that last stored to it
  };
  void Touch(Conversation& c, int64_t key);
  void Evict();

  int64_t max_bytes_;
  int64_t bytes_ = 0;
  uint64_t version_ = 0;
  bool versioned_ = false;
  uint64_t call_ = 0;
  std::unordered_map<int64_t, Conversation> by_key_;
  std::list<int64_t> lru_;  // least recently used first
};

// A number that changes whenever any parameter of `module` is modified in place
// (LibTorch's tensor version counters: optimiser steps, copy_, set_).
uint64_t ParametersVersion(const torch::nn::Module& module);

}  // namespace troupe
