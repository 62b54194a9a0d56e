// The small languages of pipeline configs, checked when the workflow loads:
//   references  node, node.key, node.key.N   (a node's raw text, a key's
//               items, its N-th item)
//   templates   text with {question} and {reference} ("{{", "}}": braces)
//   conditions  exists(ref), valid(node), count(ref), runs(node) (how many
//               times it ran), ref, numbers, 'text'; == != < <= > >=;
//               not, and, or; parentheses
// Parse errors carry the offset in the expression, so the config error
// points at the character.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/errors.h"

namespace troupe {

// A role node whose role sends LATENT or HYBRID messages (a channel from its
// role) has the key "latents": the vectors its latest call sent. A template
// shows them where it says {node.latents}; the text there is one
// kLatentMarker, which the rollout turns into <bot>, a soft slot per vector
// (the vectors read as input embeddings) and <eot>.
inline constexpr const char* kLatentsKey = "latents";
inline constexpr char kLatentMarker = '\x01';

// A node's latest output in an episode.
struct NodeOutput {
  bool ran = false;
  bool valid = false;  // parsed (role nodes) or succeeded (tools)
  int runs = 0;        // how many times the node ran in the episode
  std::string raw;     // the answer's text (role nodes) or the first item (tools)
  std::map<std::string, std::vector<std::string>> values;
  std::vector<float> latents;  // a sender's vectors, [K, latent_width] (values["latents"] holds the marker)
  int latent_width = 0;
};

struct NodeRef {
  int node = -1;
  std::string key;  // empty: the raw text
  int item = -1;    // -1: every item
  // The items referred to (the raw text as one item when `key` is empty).
  std::vector<std::string> Items(const std::vector<NodeOutput>& outputs) const;
  // The items joined by newlines.
  std::string Text(const std::vector<NodeOutput>& outputs) const;
};

class PipelineExprError : public Error {
 public:
  PipelineExprError(size_t offset, const std::string& message) : Error(message), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

// What a reference may name: node indexes by name, and each node's keys.
struct RefScope {
  std::function<int(const std::string&)> node;                     // -1: no such node
  std::function<std::vector<std::string>(int node)> keys;          // the keys the node's output has
};

NodeRef ParseRef(const std::string& text, const RefScope& scope, size_t offset = 0);

class PromptTemplate {
 public:
  PromptTemplate() = default;
  PromptTemplate(const std::string& text, const RefScope& scope);
  std::string Render(const std::string& question, const std::vector<NodeOutput>& outputs) const;
  const std::vector<NodeRef>& refs() const { return refs_; }
  bool empty() const { return parts_.empty(); }

 private:
  struct Part {
    std::string text;
    int ref = -1;  // index into refs_; -2: the question
  };
  std::vector<Part> parts_;
  std::vector<NodeRef> refs_;
};

class Condition {
 public:
  struct Expr;
  Condition() = default;
  Condition(const std::string& text, const RefScope& scope);
  ~Condition();
  Condition(Condition&&) noexcept;
  Condition& operator=(Condition&&) noexcept;
  // True when empty (an unconditional edge).
  bool Holds(const std::vector<NodeOutput>& outputs) const;
  const std::vector<NodeRef>& refs() const { return refs_; }
  bool empty() const { return root_ == nullptr; }

 private:
  std::unique_ptr<Expr> root_;
  std::vector<NodeRef> refs_;
};

}  // namespace troupe
