// Packs token sequences that share prefixes (the calls of a conversation: each
// prompt repeats the one before it and adds to it) into rows of prefix trees,
// so that a shared prefix is encoded once. A node is one token at one depth;
// with an attention mask that lets each node see exactly its ancestors and
// itself, and its depth as its position, a causal decoder computes at every
// node what it computes at that position of each sequence through it.
// Free of LibTorch: the trainer turns the rows into tensors.
#pragma once

#include <cstdint>
#include <vector>

namespace troupe {

struct PrefixTreeRows {
  struct Row {
    int slot = 0;             // the sequences' slot (role slot): only one slot shares a row
    std::vector<int> tokens;  // per node, in an order where a parent comes before its children
    std::vector<int> parent;  // per node: its parent's index in the row, -1 for a root
    std::vector<int> depth;   // per node: its position in each sequence through it
  };
  std::vector<Row> rows;
  std::vector<int> row_of;                // per sequence: its row
  std::vector<std::vector<int>> node_of;  // per sequence, per position: its node in its row
  int64_t nodes = 0;                      // the positions the rows encode, summed over rows
  int64_t longest = 0;                    // the most nodes in a row
};

// Sequences with the same slot share the nodes of their common prefixes, in
// rows of at most max(row_budget, the longest sequence) nodes; sequences are
// placed in the order of (slot, tokens), so that those sharing prefixes meet,
// and the trees, cut where a row ran full, are then placed into as few rows as
// first-fit decreasing finds (a row holds a forest: its trees see nothing of
// each other).
PrefixTreeRows PackPrefixTrees(const std::vector<std::vector<int>>& sequences, const std::vector<int>& slots,
                               int64_t row_budget);

}  // namespace troupe
