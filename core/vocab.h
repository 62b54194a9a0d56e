// Word-level vocabulary built from a game's words plus special and role tokens.
// Token ids are stable for a given (game vocabulary, role list), and are saved
// with checkpoints so a model is never run against another vocabulary.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace troupe {

class Vocab {
 public:
  static constexpr int kPad = 0;
  static constexpr int kBos = 1;
  static constexpr int kEos = 2;
  static constexpr int kUnk = 3;
  // A prompt position whose input is a vector, not a token's embedding (hybrid
  // messages). Negative, so it is no token of any vocabulary or tokenizer;
  // PolicyModel::embed reads it as a placeholder that the vector replaces.
  static constexpr int kSoft = -1;

  Vocab() = default;
  Vocab(const std::vector<std::string>& words, const std::vector<std::string>& roles);

  int size() const { return static_cast<int>(words_.size()); }
  int Id(const std::string& word) const;  // kUnk when unknown
  const std::string& Word(int id) const { return words_.at(id); }
  int RoleToken(int role) const { return role_base_ + role; }
  // <bot> and <eot> bracket the latent vectors of hybrid messages; the only
  // words in angle brackets a vocabulary takes from outside (compile adds them).
  static bool IsMessageMarker(const std::string& word);
  std::vector<int> Encode(const std::vector<std::string>& words) const;
  // Words up to (not including) the first <eos>; special tokens are dropped.
  std::vector<std::string> Decode(const std::vector<int>& ids) const;
  // One line, for checkpoints: every word in id order.
  std::string Fingerprint() const;

 private:
  std::vector<std::string> words_;
  std::map<std::string, int> ids_;
  int role_base_ = 4;
};

}  // namespace troupe
