// Word-level vocabulary: specials, role tokens, game words.
#include "core/vocab.h"

namespace troupe {

Vocab::Vocab(const std::vector<std::string>& words, const std::vector<std::string>& roles) {
  words_ = {"<pad>", "<bos>", "<eos>", "<unk>"};
  role_base_ = static_cast<int>(words_.size());
  for (const auto& r : roles) words_.push_back("<role:" + r + ">");
  for (const auto& w : words) {
    if (ids_.count(w) == 0 && (w.rfind("<", 0) != 0 || IsMessageMarker(w))) {
      ids_[w] = static_cast<int>(words_.size());
      words_.push_back(w);
    }
  }
  for (int i = 0; i < static_cast<int>(words_.size()); ++i) ids_[words_[i]] = i;
}

bool Vocab::IsMessageMarker(const std::string& word) { return word == "<bot>" || word == "<eot>"; }

int Vocab::Id(const std::string& word) const {
  auto it = ids_.find(word);
  return it == ids_.end() ? kUnk : it->second;
}

std::vector<int> Vocab::Encode(const std::vector<std::string>& words) const {
  std::vector<int> ids;
  ids.reserve(words.size());
  for (const auto& w : words) ids.push_back(Id(w));
  return ids;
}

std::vector<std::string> Vocab::Decode(const std::vector<int>& ids) const {
  std::vector<std::string> words;
  for (int id : ids) {
    if (id == kEos) break;
    if (id < role_base_ || words_[id].rfind("<role:", 0) == 0 || IsMessageMarker(words_[id])) continue;
    words.push_back(words_[id]);
  }
  return words;
}

std::string Vocab::Fingerprint() const {
  std::string s;
  for (const auto& w : words_) s += w + " ";
  return s;
}

}  // namespace troupe
