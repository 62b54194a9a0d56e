// How a pipeline role node's answer is read (ParserSpec): raw, tag, JSON key
// or regex, each giving items under the node's output key, plus markers
// ("<end>") that alone make a valid answer.
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "comms/proto/workflow.pb.h"
#include "workflows/config/pipeline_expr.h"

namespace troupe {

class OutputParser {
 public:
  // Throws ConfigError-free Error with a plain message on a bad spec (the
  // validator adds the position).
  OutputParser(const config::ParserSpec& spec, std::string output_key);
  // The output of an answer: `raw`, items under output_key(), marker keys,
  // and whether it parsed.
  NodeOutput Parse(const std::string& answer) const;
  const std::string& output_key() const { return output_key_; }
  // Every key an output of this parser can have ("raw" included).
  std::vector<std::string> Keys() const;
  double valid_reward() const { return spec_.valid_reward(); }
  config::ParserKind kind() const { return spec_.kind(); }
  std::vector<std::string> markers() const { return {spec_.marker().begin(), spec_.marker().end()}; }
  double invalid_reward() const { return spec_.invalid_reward(); }
  // The answer a demonstration writes for `items` (SFT): the inverse of Parse.
  std::string Format(const std::vector<std::string>& items) const;

  // The default output key of a spec: the JSON key, the tag's name, or "text".
  static std::string DefaultKey(const config::ParserSpec& spec);
  // A marker's key: its letters and digits ("<end>" -> "end").
  static std::string MarkerKey(const std::string& marker);

 private:
  config::ParserSpec spec_;
  std::string output_key_;
  std::vector<std::string> opens_, closes_;  // TAG: the alternatives
  std::unique_ptr<std::regex> regex_;
};

}  // namespace troupe
