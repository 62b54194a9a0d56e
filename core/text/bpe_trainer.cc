// Byte-level BPE training: pair counts kept up to date word by word, the most
// frequent pair found through a heap whose stale entries are skipped.
#include "core/text/bpe_trainer.h"

#include <cstdint>
#include <queue>
#include <tuple>
#include <unordered_set>

#include "core/base/errors.h"
#include "core/text/regex_splitter.h"

namespace troupe {

namespace {

TokenizerModel BytesOnly(const BpeTrainerOptions& o) {
  TokenizerModel m;
  for (int b = 0; b < 256; ++b) m.tokens.push_back(std::string(1, static_cast<char>(b)));
  m.pattern = o.pattern.empty() ? kQwenPattern : o.pattern;
  m.nfc = o.nfc;
  return m;
}

uint64_t Key(int a, int b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

}  // namespace

BpeTrainer::BpeTrainer(BpeTrainerOptions options) : options_(std::move(options)), splitter_(BytesOnly(options_)) {
  const int floor = 256 + static_cast<int>(options_.special_tokens.size());
  if (options_.vocab_size < floor) {
    throw TokenizerError("a byte-level vocabulary needs at least " + std::to_string(floor) +
                         " tokens (256 bytes and the special tokens)");
  }
}

void BpeTrainer::Add(std::string_view text) {
  std::vector<std::string> pieces;
  splitter_.PreTokenize(text, &pieces);
  for (auto& p : pieces) ++counts_[std::move(p)];
}

size_t BpeTrainer::distinct_pieces() const { return counts_.size(); }

TokenizerModel BpeTrainer::Train(const std::function<void(int, int)>& progress) const {
  TokenizerModel model = BytesOnly(options_);
  const int wanted = options_.vocab_size - 256 - static_cast<int>(options_.special_tokens.size());
  // Words in a fixed order (the map's is not), each a sequence of token ids.
  std::vector<std::pair<std::string, long long>> sorted(counts_.begin(), counts_.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::vector<int>> words;
  std::vector<long long> freq;
  for (const auto& [piece, count] : sorted) {
    std::vector<int> w;
    for (unsigned char c : piece) w.push_back(c);
    words.push_back(std::move(w));
    freq.push_back(count);
  }
  std::unordered_map<uint64_t, long long> pair_count;
  std::unordered_map<uint64_t, std::vector<int>> pair_words;
  for (int wi = 0; wi < static_cast<int>(words.size()); ++wi) {
    const auto& w = words[wi];
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      const uint64_t k = Key(w[i], w[i + 1]);
      pair_count[k] += freq[wi];
      pair_words[k].push_back(wi);
    }
  }
  // Highest count first; on ties the smaller pair, so every run merges alike.
  using Entry = std::tuple<long long, uint64_t>;
  auto later = [](const Entry& x, const Entry& y) {
    return std::get<0>(x) != std::get<0>(y) ? std::get<0>(x) < std::get<0>(y) : std::get<1>(x) > std::get<1>(y);
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(later)> heap(later);
  for (const auto& [k, c] : pair_count) heap.emplace(c, k);
  std::vector<int> seen(words.size(), -1);
  std::unordered_map<std::string, int> id_of;
  for (int t = 0; t < 256; ++t) id_of[model.tokens[t]] = t;
  const int target = options_.vocab_size - static_cast<int>(options_.special_tokens.size());
  for (int merge = 0; static_cast<int>(model.tokens.size()) < target && !heap.empty();) {
    const auto [count, key] = heap.top();
    heap.pop();
    const auto current = pair_count.find(key);
    const long long now = current == pair_count.end() ? 0 : current->second;
    if (now != count) {  // stale: the pair's count has changed since
      if (now > 0) heap.emplace(now, key);
      continue;
    }
    if (count < options_.min_frequency) break;
    const int a = static_cast<int>(key >> 32), b = static_cast<int>(key & 0xffffffffu);
    // The same bytes can come from two pairs ("ab"+"c", "a"+"bc"): one token, two merges.
    const std::string bytes = model.tokens[a] + model.tokens[b];
    const auto [known, fresh] = id_of.emplace(bytes, static_cast<int>(model.tokens.size()));
    const int c = known->second;
    if (fresh) model.tokens.push_back(bytes);
    model.merges.emplace_back(a, b);
    std::unordered_set<uint64_t> grown;
    const std::vector<int> where = std::move(pair_words[key]);
    pair_words.erase(key);
    for (int wi : where) {
      if (seen[wi] == merge) continue;
      seen[wi] = merge;
      std::vector<int>& w = words[wi];
      bool has = false;
      for (size_t i = 0; i + 1 < w.size() && !has; ++i) has = w[i] == a && w[i + 1] == b;
      if (!has) continue;
      for (size_t i = 0; i + 1 < w.size(); ++i) pair_count[Key(w[i], w[i + 1])] -= freq[wi];
      std::vector<int> merged;
      merged.reserve(w.size());
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == a && w[i + 1] == b) {
          merged.push_back(c);
          ++i;
        } else {
          merged.push_back(w[i]);
        }
      }
      w = std::move(merged);
      for (size_t i = 0; i + 1 < w.size(); ++i) {
        const uint64_t k = Key(w[i], w[i + 1]);
        pair_count[k] += freq[wi];
        if (w[i] == c || w[i + 1] == c) {
          pair_words[k].push_back(wi);
          grown.insert(k);
        }
      }
    }
    pair_count.erase(key);
    for (uint64_t k : grown) heap.emplace(pair_count[k], k);
    ++merge;
    if (progress && merge % 256 == 0) progress(static_cast<int>(model.tokens.size()) - 256, wanted);
  }
  for (const std::string& s : options_.special_tokens) {
    model.added.push_back({static_cast<int>(model.tokens.size() + model.added.size()), s, true});
  }
  return model;
}

}  // namespace troupe
