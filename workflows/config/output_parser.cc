// Pipeline answer parsers (see output_parser.h).
#include "workflows/config/output_parser.h"

#include <cctype>

#include <boost/algorithm/string/trim.hpp>
#include <nlohmann/json.hpp>

#include "core/base/errors.h"

namespace troupe {

namespace {

std::string TagName(const std::string& tag) {
  std::string name;
  for (char c : tag) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') name.push_back(c);
  }
  return name;
}

}  // namespace

// "<update>|<add>" -> {"<update>", "<add>"}.
std::vector<std::string> Alternatives(const std::string& tags) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t bar; (bar = tags.find('|', start)) != std::string::npos; start = bar + 1) out.push_back(tags.substr(start, bar - start));
  out.push_back(tags.substr(start));
  return out;
}

std::string OutputParser::DefaultKey(const config::ParserSpec& spec) {
  if (spec.kind() == config::JSON_KEY && !spec.key().empty()) return spec.key();
  if (spec.kind() == config::TAG && !TagName(Alternatives(spec.open()).front()).empty()) {
    return TagName(Alternatives(spec.open()).front());
  }
  return "text";
}

std::string OutputParser::MarkerKey(const std::string& marker) { return TagName(marker); }

OutputParser::OutputParser(const config::ParserSpec& spec, std::string output_key)
    : spec_(spec), output_key_(std::move(output_key)) {
  if (output_key_.empty()) output_key_ = DefaultKey(spec);
  if (output_key_ == "raw") throw Error("output key 'raw' is taken: it is always the whole answer");
  if (spec.max_items() <= 0) throw Error("parser max_items must be positive");
  switch (spec.kind()) {
    case config::TAG:
      if (spec.open().empty()) throw Error("a tag parser needs `open`, e.g. \"<answer>\"");
      opens_ = Alternatives(spec.open());
      if (!spec.close().empty() && opens_.size() > 1) throw Error("`close` goes with a single `open` tag");
      for (const auto& open : opens_) {
        if (open.empty()) throw Error("an empty tag in `open` \"" + spec.open() + "\"");
        std::string close = spec.close();
        if (close.empty()) {
          if (open.front() != '<') throw Error("a tag parser whose `open` does not start with '<' needs `close`");
          close = open;
          close.insert(1, "/");
        }
        closes_.push_back(close);
      }
      break;
    case config::JSON_KEY:
      if (spec.key().empty()) throw Error("a json_key parser needs `key`");
      break;
    case config::REGEX:
      try {
        regex_ = std::make_unique<std::regex>(spec.pattern(), std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        throw Error("parser pattern '" + spec.pattern() + "' is not a regular expression: " + e.what());
      }
      if (spec.pattern().empty()) throw Error("a regex parser needs `pattern`");
      break;
    default:
      break;
  }
  for (const auto& m : spec.marker()) {
    if (MarkerKey(m).empty()) throw Error("marker '" + m + "' has no letters to name its key");
    if (MarkerKey(m) == output_key_ || MarkerKey(m) == "raw") throw Error("marker '" + m + "' names a key already taken");
  }
}

std::vector<std::string> OutputParser::Keys() const {
  std::vector<std::string> keys = {"raw", output_key_};
  for (const auto& m : spec_.marker()) keys.push_back(MarkerKey(m));
  return keys;
}

NodeOutput OutputParser::Parse(const std::string& answer) const {
  NodeOutput out;
  out.ran = true;
  out.raw = answer;
  std::vector<std::string> items;
  const size_t max = static_cast<size_t>(spec_.max_items());
  switch (spec_.kind()) {
    case config::RAW:
      if (std::string item = boost::algorithm::trim_copy(answer); !item.empty()) items.push_back(std::move(item));
      break;
    case config::TAG:
      // Each occurrence of any alternative, in the order they appear.
      for (size_t at = 0; items.size() < max;) {
        size_t open = std::string::npos, which = 0;
        for (size_t k = 0; k < opens_.size(); ++k) {
          const size_t found = answer.find(opens_[k], at);
          if (found < open) open = found, which = k;
        }
        if (open == std::string::npos) break;
        const size_t begin = open + opens_[which].size();
        const size_t close = answer.find(closes_[which], begin);
        if (close == std::string::npos) break;
        const std::string item = boost::algorithm::trim_copy(answer.substr(begin, close - begin));
        if (!item.empty()) items.push_back(item);
        at = close + closes_[which].size();
      }
      break;
    case config::JSON_KEY: {
      const size_t b = answer.find('{'), e = answer.rfind('}');
      if (b == std::string::npos || e == std::string::npos || e < b) break;
      const nlohmann::json j = nlohmann::json::parse(answer.substr(b, e - b + 1), nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains(spec_.key())) break;
      const auto& v = j[spec_.key()];
      auto add = [&](const nlohmann::json& x) {
        if (items.size() >= max || !x.is_string()) return;
        std::string item = boost::algorithm::trim_copy(x.get<std::string>());
        if (!item.empty()) items.push_back(std::move(item));
      };
      if (v.is_array()) for (const auto& x : v) add(x);
      else add(v);
      break;
    }
    case config::REGEX:
      for (auto it = std::sregex_iterator(answer.begin(), answer.end(), *regex_); it != std::sregex_iterator() && items.size() < max; ++it) {
        const std::string item = boost::algorithm::trim_copy(it->size() > 1 ? (*it)[1].str() : (*it)[0].str());
        if (!item.empty()) items.push_back(item);
      }
      break;
    default:
      break;
  }
  out.valid = !items.empty();
  if (!items.empty()) out.values[output_key_] = std::move(items);
  for (const auto& m : spec_.marker()) {
    if (answer.find(m) != std::string::npos) {
      out.values[MarkerKey(m)] = {m};
      out.valid = true;
    }
  }
  return out;
}

std::string OutputParser::Format(const std::vector<std::string>& items) const {
  switch (spec_.kind()) {
    case config::TAG: {
      std::string out;
      for (const auto& i : items) out += opens_.front() + i + closes_.front();
      return out;
    }
    case config::JSON_KEY:
      return nlohmann::json({{spec_.key(), items}}).dump();
    default: {
      std::string out;
      for (size_t i = 0; i < items.size(); ++i) out += (i ? " " : "") + items[i];
      return out;
    }
  }
}

}  // namespace troupe
