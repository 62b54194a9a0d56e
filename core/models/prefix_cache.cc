// Per-conversation keys and values of earlier prompts (see prefix_cache.h).
#include "core/models/prefix_cache.h"

#include <algorithm>
#include <cstdint>

#include "core/base/fnv1a.h"

namespace troupe {

namespace {

// Whether `tokens` begins with all of `prefix`.
bool StartsWith(const std::vector<int>& tokens, const std::vector<int>& prefix) {
  return tokens.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), tokens.begin());
}

}  // namespace

uint64_t ParametersVersion(const torch::nn::Module& module) {
  uint64_t v = kFnv1aOffset;
  for (const auto& p : module.parameters()) {
    const uint64_t version = p.unsafeGetTensorImpl()->version_counter().current_version();
    const auto data = reinterpret_cast<uint64_t>(p.unsafeGetTensorImpl()->storage().data());
    v = Fnv1aMix(Fnv1aMix(v, version), data);  // set_data and loads swap the storage
  }
  return v;
}

void PrefixCache::Validate(uint64_t parameters_version) {
  if (versioned_ && parameters_version == version_) return;
  Clear();
  version_ = parameters_version;
  versioned_ = true;
}

void PrefixCache::Clear() {
  by_key_.clear();
  lru_.clear();
  bytes_ = 0;
}

PrefixCache::Match PrefixCache::Find(int64_t key, int role, const std::vector<int>& prompt) const {
  Match best;
  auto it = by_key_.find(key);
  if (it == by_key_.end() || prompt.size() < 2) return best;
  const size_t cap = prompt.size() - 1;
  for (const Entry& e : it->second.entries) {
    if (e.role != role) continue;
    const size_t n = std::min(cap, e.tokens.size());
    const size_t common = static_cast<size_t>(
        std::mismatch(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(n), e.tokens.begin()).first -
        prompt.begin());
    if (static_cast<int64_t>(common) > best.length) {
      best.entry = &e;
      best.length = static_cast<int64_t>(common);
    }
  }
  return best;
}

bool PrefixCache::Covers(int64_t key, int role, const std::vector<int>& tokens) const {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return false;
  for (const Entry& e : it->second.entries) {
    if (e.role == role && StartsWith(e.tokens, tokens)) return true;
  }
  return false;
}

void PrefixCache::Touch(Conversation& c, int64_t key) {
  lru_.erase(c.lru);
  c.lru = lru_.insert(lru_.end(), key);
  c.call = call_;
}

void PrefixCache::Store(int64_t key, Entry entry) {
  auto [it, fresh] = by_key_.try_emplace(key);
  Conversation& c = it->second;
  if (fresh) {
    c.lru = lru_.insert(lru_.end(), key);
    c.call = call_;
  } else {
    Touch(c, key);
  }
  for (auto e = c.entries.begin(); e != c.entries.end(); ++e) {
    if (e->role != entry.role) continue;
    if (StartsWith(e->tokens, entry.tokens)) return;  // covered already
    if (StartsWith(entry.tokens, e->tokens)) {        // the new entry extends it
      bytes_ -= e->bytes;
      c.entries.erase(e);
      break;
    }
  }
  if (c.entries.size() >= kPerConversation) {
    bytes_ -= c.entries.front().bytes;
    c.entries.erase(c.entries.begin());
  }
  bytes_ += entry.bytes;
  c.entries.push_back(std::move(entry));
  Evict();
}

void PrefixCache::Evict() {
  while (bytes_ > max_bytes_ && lru_.size() > 1) {
    // One the last two calls left alone, least recent first; else the latest stored (see the header).
    const bool stale = by_key_.at(lru_.front()).call + 1 < call_;
    auto it = by_key_.find(stale ? lru_.front() : lru_.back());
    for (const Entry& e : it->second.entries) bytes_ -= e.bytes;
    lru_.erase(it->second.lru);
    by_key_.erase(it);
  }
}

}  // namespace troupe
