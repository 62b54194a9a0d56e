// References, prompt templates and edge conditions (see pipeline_expr.h).
#include "workflows/config/pipeline_expr.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace troupe {

namespace {

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "\n" : "") + items[i];
  return out;
}

// A number when the whole (trimmed) text is one.
bool AsNumber(const std::string& text, double* value) {
  const size_t b = text.find_first_not_of(" \t\n");
  if (b == std::string::npos) return false;
  const char* start = text.c_str() + b;
  char* end = nullptr;
  *value = std::strtod(start, &end);
  if (end == start) return false;
  for (; *end != '\0'; ++end) {
    if (!std::isspace(static_cast<unsigned char>(*end))) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> NodeRef::Items(const std::vector<NodeOutput>& outputs) const {
  const NodeOutput& out = outputs[node];
  if (!out.ran) return {};
  if (key.empty()) return {out.raw};
  auto it = out.values.find(key);
  if (it == out.values.end()) return {};
  if (item < 0) return it->second;
  if (item < static_cast<int>(it->second.size())) return {it->second[item]};
  return {};
}

std::string NodeRef::Text(const std::vector<NodeOutput>& outputs) const { return Join(Items(outputs)); }

NodeRef ParseRef(const std::string& text, const RefScope& scope, size_t offset) {
  NodeRef ref;
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '.') {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    } else if (!IsNameChar(text[i])) {
      throw PipelineExprError(offset + i, "'" + std::string(1, text[i]) + "' cannot be part of a reference");
    }
  }
  if (parts.size() > 3 || parts[0].empty()) throw PipelineExprError(offset, "a reference reads node, node.key or node.key.N");
  ref.node = scope.node(parts[0]);
  if (ref.node < 0) throw PipelineExprError(offset, "unknown node '" + parts[0] + "'");
  if (parts.size() >= 2) {
    const std::vector<std::string> keys = scope.keys(ref.node);
    if (std::find(keys.begin(), keys.end(), parts[1]) == keys.end()) {
      std::string known;
      for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
      throw PipelineExprError(offset + parts[0].size() + 1,
                              "node '" + parts[0] + "' has no key '" + parts[1] + "' (its keys: " + known + ")");
    }
    ref.key = parts[1] == "raw" ? "" : parts[1];
  }
  if (parts.size() == 3) {
    const std::string& n = parts[2];
    if (n.empty() || !std::all_of(n.begin(), n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      throw PipelineExprError(offset + parts[0].size() + parts[1].size() + 2, "an item index is a number, got '" + n + "'");
    }
    ref.item = std::stoi(n);
  }
  return ref;
}

PromptTemplate::PromptTemplate(const std::string& text, const RefScope& scope) {
  std::string literal;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      literal.push_back(c);
      ++i;
    } else if (c == '}') {
      throw PipelineExprError(i, "'}' without '{' (write '}}' for a brace)");
    } else if (c == '{') {
      const size_t close = text.find('}', i);
      if (close == std::string::npos) throw PipelineExprError(i, "'{' is not closed");
      if (!literal.empty()) parts_.push_back({std::move(literal), -1});
      literal.clear();
      const std::string inner = text.substr(i + 1, close - i - 1);
      if (inner == "question") {
        parts_.push_back({"", -2});
      } else {
        refs_.push_back(ParseRef(inner, scope, i + 1));
        parts_.push_back({"", static_cast<int>(refs_.size()) - 1});
      }
      i = close;
    } else {
      literal.push_back(c);
    }
  }
  if (!literal.empty()) parts_.push_back({std::move(literal), -1});
}

std::string PromptTemplate::Render(const std::string& question, const std::vector<NodeOutput>& outputs) const {
  std::string out;
  for (const Part& p : parts_) {
    if (p.ref == -1) out += p.text;
    else if (p.ref == -2) out += question;
    else out += refs_[p.ref].Text(outputs);
  }
  return out;
}

// ---- Conditions -------------------------------------------------------------

struct Condition::Expr {
  enum Kind { kOr, kAnd, kNot, kCompare, kExists, kValid, kCount, kRuns, kRef, kNumber, kText } kind;
  std::string op;  // kCompare
  std::unique_ptr<Expr> a, b;
  int ref = -1;  // index into refs_
  double number = 0;
  std::string text;
};

namespace {

using Expr = Condition::Expr;

class ConditionParser {
 public:
  ConditionParser(const std::string& text, const RefScope& scope, std::vector<NodeRef>* refs)
      : s_(text), scope_(scope), refs_(refs) {}

  std::unique_ptr<Expr> Parse() {
    auto e = Or();
    Skip();
    if (at_ < s_.size()) throw PipelineExprError(at_, "unexpected '" + s_.substr(at_, 12) + "'");
    return e;
  }

 private:
  void Skip() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }
  // The next word (letters, digits, '_', '-', '.'), without consuming it.
  std::string PeekWord() {
    Skip();
    size_t e = at_;
    while (e < s_.size() && (IsNameChar(s_[e]) || s_[e] == '.')) ++e;
    return s_.substr(at_, e - at_);
  }
  bool Keyword(const char* word) {
    if (PeekWord() != word) return false;
    at_ += std::string(word).size();
    return true;
  }
  bool Symbol(const char* sym) {
    Skip();
    if (s_.compare(at_, std::string(sym).size(), sym) != 0) return false;
    at_ += std::string(sym).size();
    return true;
  }
  void Expect(const char* sym) {
    if (!Symbol(sym)) throw PipelineExprError(at_, std::string("expected '") + sym + "'");
  }
  static std::unique_ptr<Expr> Node(Expr::Kind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    return e;
  }
  std::unique_ptr<Expr> Or() {
    auto e = And();
    while (Keyword("or")) {
      auto n = Node(Expr::kOr);
      n->a = std::move(e);
      n->b = And();
      e = std::move(n);
    }
    return e;
  }
  std::unique_ptr<Expr> And() {
    auto e = Not();
    while (Keyword("and")) {
      auto n = Node(Expr::kAnd);
      n->a = std::move(e);
      n->b = Not();
      e = std::move(n);
    }
    return e;
  }
  std::unique_ptr<Expr> Not() {
    if (Keyword("not")) {
      auto n = Node(Expr::kNot);
      n->a = Not();
      return n;
    }
    return Comparison();
  }
  std::unique_ptr<Expr> Comparison() {
    Skip();
    if (Symbol("(")) {
      auto e = Or();
      Expect(")");
      return e;
    }
    auto lhs = Operand();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (Symbol(op)) {
        auto n = Node(Expr::kCompare);
        n->op = op;
        n->a = std::move(lhs);
        n->b = Operand();
        return n;
      }
    }
    if (lhs->kind == Expr::kNumber || lhs->kind == Expr::kText || lhs->kind == Expr::kCount || lhs->kind == Expr::kRuns) {
      throw PipelineExprError(at_, "a condition compares, or tests exists(...), valid(...) or a reference");
    }
    if (lhs->kind == Expr::kRef) lhs->kind = Expr::kExists;  // a bare reference: it has an item
    return lhs;
  }
  int Ref() {
    Skip();
    const size_t start = at_;
    const std::string word = PeekWord();
    if (word.empty()) throw PipelineExprError(at_, "expected a reference (node or node.key)");
    at_ += word.size();
    refs_->push_back(ParseRef(word, scope_, start));
    return static_cast<int>(refs_->size()) - 1;
  }
  std::unique_ptr<Expr> Operand() {
    Skip();
    if (at_ >= s_.size()) throw PipelineExprError(at_, "the condition ends too soon");
    const char c = s_[at_];
    if (c == '\'') {
      const size_t close = s_.find('\'', at_ + 1);
      if (close == std::string::npos) throw PipelineExprError(at_, "text is not closed (')");
      auto n = Node(Expr::kText);
      n->text = s_.substr(at_ + 1, close - at_ - 1);
      at_ = close + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
      char* end = nullptr;
      auto n = Node(Expr::kNumber);
      n->number = std::strtod(s_.c_str() + at_, &end);
      if (end == s_.c_str() + at_) throw PipelineExprError(at_, "expected a number");
      at_ = static_cast<size_t>(end - s_.c_str());
      return n;
    }
    for (auto [name, kind] : {std::pair{"exists", Expr::kExists}, std::pair{"count", Expr::kCount},
                              std::pair{"valid", Expr::kValid}, std::pair{"runs", Expr::kRuns}}) {
      const size_t save = at_;
      if (Keyword(name) && Symbol("(")) {
        auto n = Node(kind);
        const size_t where = at_;
        n->ref = Ref();
        if ((kind == Expr::kValid || kind == Expr::kRuns) && !(*refs_)[n->ref].key.empty()) {
          throw PipelineExprError(where, std::string(name) + "(...) takes a node, not a key");
        }
        Expect(")");
        return n;
      }
      at_ = save;
    }
    auto n = Node(Expr::kRef);
    n->ref = Ref();
    return n;
  }

  const std::string& s_;
  const RefScope& scope_;
  std::vector<NodeRef>* refs_;
  size_t at_ = 0;
};

// An operand's value: a number when it reads as one, else text.
struct Value {
  bool numeric = false;
  double number = 0;
  std::string text;
};

Value Evaluate(const Expr& e, const std::vector<NodeRef>& refs, const std::vector<NodeOutput>& outputs) {
  Value v;
  if (e.kind == Expr::kNumber) {
    v.numeric = true;
    v.number = e.number;
  } else if (e.kind == Expr::kText) {
    v.text = e.text;
    v.numeric = AsNumber(v.text, &v.number);
  } else if (e.kind == Expr::kCount) {
    v.numeric = true;
    v.number = static_cast<double>(refs[e.ref].Items(outputs).size());
  } else if (e.kind == Expr::kRuns) {
    v.numeric = true;
    v.number = outputs[refs[e.ref].node].runs;
  } else {
    const auto items = refs[e.ref].Items(outputs);
    v.text = items.empty() ? "" : items.front();
    v.numeric = AsNumber(v.text, &v.number);
  }
  return v;
}

bool Test(const Expr& e, const std::vector<NodeRef>& refs, const std::vector<NodeOutput>& outputs) {
  switch (e.kind) {
    case Expr::kOr: return Test(*e.a, refs, outputs) || Test(*e.b, refs, outputs);
    case Expr::kAnd: return Test(*e.a, refs, outputs) && Test(*e.b, refs, outputs);
    case Expr::kNot: return !Test(*e.a, refs, outputs);
    case Expr::kExists: return !refs[e.ref].Items(outputs).empty() && !refs[e.ref].Items(outputs).front().empty();
    case Expr::kValid: return outputs[refs[e.ref].node].ran && outputs[refs[e.ref].node].valid;
    case Expr::kCompare: {
      const Value a = Evaluate(*e.a, refs, outputs), b = Evaluate(*e.b, refs, outputs);
      int cmp;
      if (a.numeric && b.numeric) cmp = a.number < b.number ? -1 : a.number > b.number ? 1 : 0;
      else cmp = a.text.compare(b.text) < 0 ? -1 : a.text == b.text ? 0 : 1;
      if (e.op == "==") return cmp == 0;
      if (e.op == "!=") return cmp != 0;
      if (e.op == "<") return cmp < 0;
      if (e.op == "<=") return cmp <= 0;
      if (e.op == ">") return cmp > 0;
      return cmp >= 0;
    }
    default: return false;
  }
}

}  // namespace

Condition::Condition(const std::string& text, const RefScope& scope) {
  if (text.find_first_not_of(" \t\n") == std::string::npos) return;
  root_ = ConditionParser(text, scope, &refs_).Parse();
}
Condition::~Condition() = default;
Condition::Condition(Condition&&) noexcept = default;
Condition& Condition::operator=(Condition&&) noexcept = default;

bool Condition::Holds(const std::vector<NodeOutput>& outputs) const {
  return root_ == nullptr || Test(*root_, refs_, outputs);
}

}  // namespace troupe
