// Prefix-tree packing of sequences (see the header).
#include "core/models/prefix_tree_pack.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

namespace troupe {

PrefixTreeRows PackPrefixTrees(const std::vector<std::vector<int>>& sequences, const std::vector<int>& slots,
                               int64_t row_budget) {
  if (sequences.size() != slots.size()) throw std::invalid_argument("PackPrefixTrees: one slot per sequence");
  PrefixTreeRows out;
  out.row_of.assign(sequences.size(), -1);
  out.node_of.resize(sequences.size());
  int64_t longest_sequence = 0;
  for (const auto& s : sequences) longest_sequence = std::max<int64_t>(longest_sequence, static_cast<int64_t>(s.size()));
  const int64_t budget = std::max(row_budget, longest_sequence);

  std::vector<size_t> order(sequences.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return slots[a] != slots[b] ? slots[a] < slots[b] : sequences[a] < sequences[b];
  });

  // The current row's children: (parent + 1) * 2^32 + token -> node.
  std::unordered_map<uint64_t, int> children;
  const auto key = [](int parent, int token) {
    return (static_cast<uint64_t>(parent + 1) << 32) | static_cast<uint32_t>(token);
  };
  PrefixTreeRows::Row* row = nullptr;
  for (const size_t i : order) {
    const std::vector<int>& seq = sequences[i];
    // How much of the sequence the current row already holds.
    std::vector<int>& nodes = out.node_of[i];
    nodes.clear();
    if (row != nullptr && row->slot == slots[i]) {
      int parent = -1;
      for (const int token : seq) {
        const auto it = children.find(key(parent, token));
        if (it == children.end()) break;
        nodes.push_back(parent = it->second);
      }
    }
    const int64_t fresh = static_cast<int64_t>(seq.size() - nodes.size());
    if (row == nullptr || row->slot != slots[i] || static_cast<int64_t>(row->tokens.size()) + fresh > budget) {
      out.rows.emplace_back();
      row = &out.rows.back();
      row->slot = slots[i];
      children.clear();
      nodes.clear();
    }
    for (size_t t = nodes.size(); t < seq.size(); ++t) {
      const int parent = t == 0 ? -1 : nodes.back();
      const int node = static_cast<int>(row->tokens.size());
      row->tokens.push_back(seq[t]);
      row->parent.push_back(parent);
      row->depth.push_back(static_cast<int>(t));
      children.emplace(key(parent, seq[t]), node);
      nodes.push_back(node);
    }
    out.row_of[i] = static_cast<int>(out.rows.size()) - 1;
  }
  // The trees are cut where a row ran full, so rows end with gaps: place the
  // rows (each a forest, independent of the others) into fewer rows, largest
  // first, each into the first one of its slot with room (first-fit decreasing).
  std::vector<size_t> by_size(out.rows.size());
  std::iota(by_size.begin(), by_size.end(), size_t{0});
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return out.rows[a].tokens.size() > out.rows[b].tokens.size(); });
  std::vector<PrefixTreeRows::Row> merged;
  std::vector<int> merged_into(out.rows.size()), offset(out.rows.size());
  for (const size_t r : by_size) {
    const PrefixTreeRows::Row& from = out.rows[r];
    size_t into = 0;
    while (into < merged.size() && (merged[into].slot != from.slot ||
                                    static_cast<int64_t>(merged[into].tokens.size() + from.tokens.size()) > budget)) {
      ++into;
    }
    if (into == merged.size()) merged.push_back(PrefixTreeRows::Row{from.slot, {}, {}, {}});
    PrefixTreeRows::Row& to = merged[into];
    const int shift = static_cast<int>(to.tokens.size());
    merged_into[r] = static_cast<int>(into);
    offset[r] = shift;
    to.tokens.insert(to.tokens.end(), from.tokens.begin(), from.tokens.end());
    for (const int parent : from.parent) to.parent.push_back(parent < 0 ? -1 : parent + shift);
    to.depth.insert(to.depth.end(), from.depth.begin(), from.depth.end());
  }
  for (size_t i = 0; i < sequences.size(); ++i) {
    const int r = out.row_of[i];
    out.row_of[i] = merged_into[r];
    for (int& node : out.node_of[i]) node += offset[r];
  }
  out.rows = std::move(merged);
  for (const auto& r : out.rows) {
    out.nodes += static_cast<int64_t>(r.tokens.size());
    out.longest = std::max<int64_t>(out.longest, static_cast<int64_t>(r.tokens.size()));
  }
  return out;
}

}  // namespace troupe
