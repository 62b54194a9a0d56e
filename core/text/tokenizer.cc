// Byte-level BPE: loading, encoding, decoding and writing tokenizer.json.
#include "core/text/tokenizer.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/base/file_io.h"
#include "core/text/byte_level.h"
#include "core/text/regex_splitter.h"

namespace troupe {

namespace {

using Json = nlohmann::json;

constexpr int kNoRank = std::numeric_limits<int>::max();

uint64_t PairKey(int a, int b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }

std::string ReadWhole(const std::string& path) {
  try {
    return ReadWholeFile(path);
  } catch (const Error& e) {
    throw TokenizerError(e.what());
  }
}

std::string Base64Decode(std::string_view in, const std::string& where) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const size_t v = alphabet.find(c);
    if (v == std::string::npos) throw TokenizerError(where + ": not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// The pre-tokeniser regex a tokenizer.json's pre_tokenizer section describes.
std::string PatternOf(const Json& pre, const std::string& origin) {
  auto fail = [&](const std::string& what) -> std::string {
    throw TokenizerError(origin + ": pre_tokenizer " + what +
                         " is not supported (byte-level BPE needs ByteLevel, or Split(regex, Isolated) then ByteLevel)");
  };
  if (pre.is_null()) return fail("null");
  const std::string type = pre.value("type", "");
  if (type == "ByteLevel") {
    if (pre.value("add_prefix_space", false)) return fail("ByteLevel with add_prefix_space");
    if (!pre.value("use_regex", true)) return fail("ByteLevel without a regex");
    return kGpt2Pattern;
  }
  if (type != "Sequence" || !pre.contains("pretokenizers") || pre["pretokenizers"].size() != 2) return fail(type);
  const Json& split = pre["pretokenizers"][0];
  const Json& bytes = pre["pretokenizers"][1];
  if (split.value("type", "") != "Split" || !split.contains("pattern") || !split["pattern"].contains("Regex")) {
    return fail("Sequence whose first step is not Split(Regex)");
  }
  if (split.value("behavior", "") != "Isolated" || split.value("invert", false)) {
    return fail("Split with behavior " + split.value("behavior", std::string("?")));
  }
  if (bytes.value("type", "") != "ByteLevel" || bytes.value("use_regex", false) ||
      bytes.value("add_prefix_space", false)) {
    return fail("Sequence whose second step is not ByteLevel(use_regex false, add_prefix_space false)");
  }
  return split["pattern"]["Regex"].get<std::string>();
}

bool NfcOf(const Json& normalizer, const std::string& origin) {
  if (normalizer.is_null()) return false;
  const std::string type = normalizer.value("type", "");
  if (type == "NFC") return true;
  if (type == "Sequence" && normalizer.contains("normalizers") && normalizer["normalizers"].empty()) return false;
  throw TokenizerError(origin + ": normalizer " + type + " is not supported (NFC or none)");
}

}  // namespace

struct Tokenizer::Impl {
  TokenizerModel model;
  std::unordered_map<std::string, int> id_of;               // regular tokens' bytes -> id
  std::unordered_map<uint64_t, std::pair<int, int>> pairs;  // (left, right) -> (rank, merged id)
  int byte_id[256];
  std::unique_ptr<RegexSplitter> splitter;
  std::vector<const AddedToken*> added_by_length;  // longest first, for matching
  std::unordered_map<int, const AddedToken*> added_of;
  const icu::Normalizer2* nfc = nullptr;
  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int>> cache;  // pre-token -> ids

  // (rank, merged id) of an adjacent pair; rank kNoRank when they do not merge.
  std::pair<int, int> Merge(int a, int b) const {
    if (!model.merges.empty()) {
      const auto it = pairs.find(PairKey(a, b));
      return it == pairs.end() ? std::make_pair(kNoRank, -1) : it->second;
    }
    const auto it = id_of.find(model.tokens[a] + model.tokens[b]);  // rank files: a token's rank is its id
    return it == id_of.end() ? std::make_pair(kNoRank, -1) : std::make_pair(it->second, it->second);
  }

  void Bpe(std::string_view piece, std::vector<int>* out) const {
    if (model.ignore_merges) {
      const auto it = id_of.find(std::string(piece));
      if (it != id_of.end()) return out->push_back(it->second);
    }
    std::vector<int> symbols;
    symbols.reserve(piece.size());
    for (unsigned char b : piece) symbols.push_back(byte_id[b]);
    while (symbols.size() > 1) {
      int best = kNoRank, at = -1, merged = -1;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        const auto [rank, id] = Merge(symbols[i], symbols[i + 1]);
        if (rank < best) best = rank, at = static_cast<int>(i), merged = id;
      }
      if (at < 0) break;
      symbols[at] = merged;
      symbols.erase(symbols.begin() + at + 1);
    }
    out->insert(out->end(), symbols.begin(), symbols.end());
  }

  void EncodePiece(std::string_view piece, std::vector<int>* out) const {
    std::string key(piece);
    {
      std::lock_guard<std::mutex> lock(cache_mutex);
      const auto it = cache.find(key);
      if (it != cache.end()) {
        out->insert(out->end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<int> ids;
    Bpe(piece, &ids);
    out->insert(out->end(), ids.begin(), ids.end());
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (cache.size() > 200000) cache.clear();
    cache.emplace(std::move(key), std::move(ids));
  }

  // `text` normalised as the tokenizer says; `storage` holds it when it changed.
  std::string_view Normalize(std::string_view text, std::string* storage) const {
    std::string& normalized = *storage;
    if (nfc != nullptr && std::any_of(text.begin(), text.end(), [](char c) { return (c & 0x80) != 0; })) {
      UErrorCode status = U_ZERO_ERROR;
      const icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), text.size()));
      if (!nfc->isNormalized(u, status)) {
        status = U_ZERO_ERROR;
        nfc->normalize(u, status).toUTF8String(normalized);
        if (U_FAILURE(status)) throw TokenizerError("NFC normalisation failed");
        return normalized;
      }
    }
    return text;
  }

  void EncodeSegment(std::string_view text, std::vector<int>* out) const {
    if (text.empty()) return;
    std::string storage;
    std::vector<std::string_view> pieces;
    splitter->Split(Normalize(text, &storage), &pieces);
    for (std::string_view p : pieces) EncodePiece(p, out);
  }
};

Tokenizer::Tokenizer(TokenizerModel model) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.model = std::move(model);
  const auto& tokens = m.model.tokens;
  for (int id = 0; id < static_cast<int>(tokens.size()); ++id) {
    if (tokens[id].empty()) continue;  // an id held by an added token, or unused
    if (!m.id_of.emplace(tokens[id], id).second) {
      throw TokenizerError("token " + std::to_string(id) + " repeats token " + std::to_string(m.id_of[tokens[id]]));
    }
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = m.id_of.find(std::string(1, static_cast<char>(b)));
    if (it == m.id_of.end()) {
      throw TokenizerError("the vocabulary lacks byte " + std::to_string(b) + " ('" + ByteLevelChar(b) +
                           "'): a byte-level vocabulary holds all 256");
    }
    m.byte_id[b] = it->second;
  }
  for (size_t r = 0; r < m.model.merges.size(); ++r) {
    const auto [a, b] = m.model.merges[r];
    const auto merged = m.id_of.find(tokens.at(a) + tokens.at(b));
    if (merged == m.id_of.end()) {
      throw TokenizerError("merge " + std::to_string(r) + " ('" + ToByteLevel(tokens[a]) + "' + '" +
                           ToByteLevel(tokens[b]) + "') makes a token that is not in the vocabulary");
    }
    m.pairs.emplace(PairKey(a, b), std::make_pair(static_cast<int>(r), merged->second));  // the first rank wins
  }
  for (const AddedToken& t : m.model.added) {
    if (t.content.empty()) throw TokenizerError("added token " + std::to_string(t.id) + " is empty");
    m.added_by_length.push_back(&t);
    m.added_of[t.id] = &t;
  }
  std::stable_sort(m.added_by_length.begin(), m.added_by_length.end(),
                   [](const AddedToken* a, const AddedToken* b) { return a->content.size() > b->content.size(); });
  m.splitter = std::make_unique<RegexSplitter>(m.model.pattern);
  if (m.model.nfc) {
    UErrorCode status = U_ZERO_ERROR;
    m.nfc = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status)) throw TokenizerError("ICU has no NFC normaliser");
  }
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::FromJsonFile(const std::string& path) { return FromJson(ReadWhole(path), path); }

Tokenizer Tokenizer::FromJson(const std::string& text, const std::string& origin) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    throw TokenizerError(origin + ": not JSON: " + e.what());
  }
  try {
    if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
      throw TokenizerError(origin + ": no \"model\" section");
    }
    const Json& model = j["model"];
    if (model.value("type", "BPE") != "BPE") {
      throw TokenizerError(origin + ": model type " + model.value("type", std::string()) + " is not BPE");
    }
    if (model.value("byte_fallback", false)) throw TokenizerError(origin + ": byte_fallback BPE is not supported");
    if (!model.contains("vocab") || !model["vocab"].is_object()) throw TokenizerError(origin + ": model has no vocab");
    TokenizerModel m;
    for (const auto& [token, id_json] : model["vocab"].items()) {
      if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 || id_json.get<int64_t>() > (1 << 24)) {
        throw TokenizerError(origin + ": vocab entry '" + token + "' has no valid id");
      }
      const int id = id_json.get<int>();
      const auto bytes = FromByteLevel(token);
      if (!bytes || bytes->empty()) {
        throw TokenizerError(origin + ": vocab entry '" + token + "' is not written in the byte-level alphabet");
      }
      if (id >= static_cast<int>(m.tokens.size())) m.tokens.resize(id + 1);
      if (!m.tokens[id].empty()) throw TokenizerError(origin + ": id " + std::to_string(id) + " is given twice");
      m.tokens[id] = *bytes;
    }
    std::unordered_map<std::string, int> id_of;
    for (int id = 0; id < static_cast<int>(m.tokens.size()); ++id) {
      if (!m.tokens[id].empty()) id_of[ToByteLevel(m.tokens[id])] = id;
    }
    const Json merges = model.value("merges", Json::array());
    if (!merges.is_array()) throw TokenizerError(origin + ": merges is not a list");
    for (size_t r = 0; r < merges.size(); ++r) {
      std::string left, right;
      if (merges[r].is_string()) {  // "a b"
        const std::string s = merges[r].get<std::string>();
        const size_t space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
          throw TokenizerError(origin + ": merge " + std::to_string(r) + " '" + s + "' is not two tokens");
        }
        left = s.substr(0, space), right = s.substr(space + 1);
      } else if (merges[r].is_array() && merges[r].size() == 2 && merges[r][0].is_string() && merges[r][1].is_string()) {
        left = merges[r][0].get<std::string>(), right = merges[r][1].get<std::string>();
      } else {
        throw TokenizerError(origin + ": merge " + std::to_string(r) + " is neither \"a b\" nor [\"a\", \"b\"]");
      }
      const auto a = id_of.find(left), b = id_of.find(right);
      if (a == id_of.end() || b == id_of.end()) {
        throw TokenizerError(origin + ": merge " + std::to_string(r) + " names '" +
                             (a == id_of.end() ? left : right) + "', which is not in the vocabulary");
      }
      m.merges.emplace_back(a->second, b->second);
    }
    m.ignore_merges = model.value("ignore_merges", false);
    for (const Json& t : j.value("added_tokens", Json::array())) {
      if (!t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") || !t["content"].is_string()) {
        throw TokenizerError(origin + ": an added token lacks its id or content");
      }
      m.added.push_back({t["id"].get<int>(), t["content"].get<std::string>(), t.value("special", false)});
    }
    m.pattern = PatternOf(j.value("pre_tokenizer", Json()), origin);
    m.nfc = NfcOf(j.value("normalizer", Json()), origin);
    const Json decoder = j.value("decoder", Json());
    if (!decoder.is_null() && decoder.value("type", "") != "ByteLevel") {
      throw TokenizerError(origin + ": decoder " + decoder.value("type", std::string()) + " is not ByteLevel");
    }
    try {
      return Tokenizer(std::move(m));
    } catch (const TokenizerError& e) {
      throw TokenizerError(origin + ": " + e.what());
    }
  } catch (const Json::exception& e) {
    throw TokenizerError(origin + ": " + e.what());
  }
}

Tokenizer Tokenizer::FromTiktokenFile(const std::string& path, const std::string& pattern,
                                      const std::vector<AddedToken>& specials) {
  std::istringstream in(ReadWhole(path));
  TokenizerModel m;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(number);
    const size_t space = line.find(' ');
    if (space == std::string::npos) throw TokenizerError(where + ": expected 'base64 rank'");
    int rank = -1;
    try {
      rank = std::stoi(line.substr(space + 1));
    } catch (const std::exception&) {
    }
    if (rank < 0 || rank > (1 << 24)) throw TokenizerError(where + ": bad rank");
    std::string bytes = Base64Decode(std::string_view(line).substr(0, space), where);
    if (bytes.empty()) throw TokenizerError(where + ": empty token");
    if (rank >= static_cast<int>(m.tokens.size())) m.tokens.resize(rank + 1);
    m.tokens[rank] = std::move(bytes);
  }
  m.added = specials;
  m.pattern = pattern;
  try {
    return Tokenizer(std::move(m));
  } catch (const TokenizerError& e) {
    throw TokenizerError(path + ": " + e.what());
  }
}

std::vector<int> Tokenizer::Encode(std::string_view text, bool allow_special) const {
  const size_t valid = ValidUtf8Prefix(text);
  if (valid != text.size()) throw TokenizerError("text is not UTF-8 at byte " + std::to_string(valid));
  std::vector<int> out;
  out.reserve(text.size() / 3);
  size_t at = 0;
  // Where each usable added token next occurs at or after `at` (npos: nowhere).
  const auto& added = impl_->added_by_length;
  std::vector<size_t> next(added.size(), std::string_view::npos);
  for (size_t k = 0; k < added.size(); ++k) {
    if (allow_special || !added[k]->special) next[k] = text.find(added[k]->content);
  }
  while (at < text.size()) {
    size_t best = std::string_view::npos;
    const AddedToken* hit = nullptr;
    for (size_t k = 0; k < added.size(); ++k) {
      if (next[k] != std::string_view::npos && next[k] < at) next[k] = text.find(added[k]->content, at);
      if (next[k] < best) best = next[k], hit = added[k];  // the longest first on ties
    }
    impl_->EncodeSegment(text.substr(at, (hit ? best : text.size()) - at), &out);
    if (hit == nullptr) break;
    out.push_back(hit->id);
    at = best + hit->content.size();
  }
  return out;
}

void Tokenizer::PreTokenize(std::string_view text, std::vector<std::string>* pieces) const {
  const size_t valid = ValidUtf8Prefix(text);
  if (valid != text.size()) throw TokenizerError("text is not UTF-8 at byte " + std::to_string(valid));
  std::string storage;
  std::vector<std::string_view> views;
  impl_->splitter->Split(impl_->Normalize(text, &storage), &views);
  for (std::string_view v : views) pieces->emplace_back(v);
}

std::string Tokenizer::Decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) {
    const auto added = impl_->added_of.find(id);
    if (added != impl_->added_of.end()) {
      out += added->second->content;
      continue;
    }
    if (id < 0 || id >= static_cast<int>(impl_->model.tokens.size()) || impl_->model.tokens[id].empty()) {
      throw TokenizerError("token id " + std::to_string(id) + " is not in the vocabulary");
    }
    out += impl_->model.tokens[id];
  }
  return out;
}

int Tokenizer::vocab_size() const {
  int n = static_cast<int>(impl_->model.tokens.size());
  for (const AddedToken& t : impl_->model.added) n = std::max(n, t.id + 1);
  return n;
}

std::optional<int> Tokenizer::TokenId(std::string_view token_bytes) const {
  const auto it = impl_->id_of.find(std::string(token_bytes));
  if (it != impl_->id_of.end()) return it->second;
  for (const AddedToken& t : impl_->model.added) {
    if (t.content == token_bytes) return t.id;
  }
  return std::nullopt;
}

const std::string& Tokenizer::TokenBytes(int id) const {
  const auto added = impl_->added_of.find(id);
  if (added != impl_->added_of.end()) return added->second->content;
  return impl_->model.tokens.at(id);
}

const TokenizerModel& Tokenizer::model() const { return impl_->model; }

std::string Tokenizer::ToJson() const {
  const TokenizerModel& m = impl_->model;
  if (m.merges.empty() && m.tokens.size() > 256) {
    throw TokenizerError("a tokenizer read from a rank file has no merge list to write as tokenizer.json");
  }
  using Ordered = nlohmann::ordered_json;
  Ordered vocab = Ordered::object();
  for (size_t id = 0; id < m.tokens.size(); ++id) {
    if (!m.tokens[id].empty()) vocab[ToByteLevel(m.tokens[id])] = id;
  }
  Ordered merges = Ordered::array();
  for (const auto& [a, b] : m.merges) merges.push_back({ToByteLevel(m.tokens[a]), ToByteLevel(m.tokens[b])});
  Ordered added = Ordered::array();
  for (const AddedToken& t : m.added) {
    added.push_back({{"id", t.id},
                     {"content", t.content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", t.special}});
  }
  const Ordered byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  Ordered j = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added}};
  j["normalizer"] = m.nfc ? Ordered{{"type", "NFC"}} : Ordered(nullptr);
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"Regex", m.pattern}}},
                           {"behavior", "Isolated"},
                           {"invert", false}},
                          byte_level}}};
  j["post_processor"] = nullptr;
  j["decoder"] = byte_level;
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", m.ignore_merges},
                {"vocab", vocab},
                {"merges", merges}};
  return j.dump(1);
}

void Tokenizer::SaveJson(const std::string& path) const {
  WriteFileAtomically(path, ToJson() + "\n");
}

}  // namespace troupe
