// What the configuration side knows of a model architecture, without
// LibTorch: its options message (one field of ModelSpec's `architecture`
// oneof in comms/proto/workflow.proto), their defaults and validation, the
// sizes every architecture has, and its Hugging Face config.json, both ways.
// Each architecture's folder (core/models/<name>/) implements one in
// <name>_spec.cc and registers it with TROUPE_REGISTER_ARCHITECTURE_SPEC; its
// LibTorch half (architecture.h) builds, saves and loads the module.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comms/proto/workflow.pb.h"
#include "core/base/registry.h"

namespace troupe {

// The sizes every architecture has.
struct ModelSizes {
  int64_t width = 0;  // of the hidden states and input embeddings
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t max_len = 0;  // positions
};

// A problem with an architecture's options: the field of its message (empty:
// the message as a whole) and what is wrong.
struct OptionProblem {
  std::string field;
  std::string message;
};

// Reads a config.json's fields, each error naming the file and the field.
class HfConfigReader {
 public:
  HfConfigReader(const nlohmann::json& json, std::string path, std::string prefix = "")
      : json_(json), path_(std::move(path)), prefix_(std::move(prefix)) {}
  bool has(const char* field) const { return json_.contains(field) && !json_[field].is_null(); }
  double number(const char* field) const;
  int64_t count(const char* field) const;  // a non-negative whole number
  int32_t size(const char* field) const;   // a count that fits an int32 (a size of the model)
  bool flag(const char* field, bool absent) const;
  std::string text(const char* field, const std::string& absent) const;
  std::vector<std::string> texts(const char* field) const;  // an array of strings
  // A field that is itself an object (rope_scaling), read the same way; its
  // errors name "field.inner".
  HfConfigReader object(const char* field) const;
  // A CheckpointError naming the file and the field.
  [[noreturn]] void Fail(const char* field, const std::string& message) const;
  const std::string& path() const { return path_; }

 private:
  const nlohmann::json& json_;
  std::string path_, prefix_;
};

// The largest sizes a model's options or config.json may give: a file cannot
// make troupe allocate more than a machine could hold (a vocabulary of 10^12
// rows) before it says which field is wrong.
struct SizeLimits {
  static constexpr int64_t kWidth = 1 << 16;         // hidden size, and head dimension x heads
  static constexpr int64_t kIntermediate = 1 << 18;  // feed-forward width
  static constexpr int64_t kLayers = 1024;
  static constexpr int64_t kHeads = 1024;
  static constexpr int64_t kPositions = 1 << 20;     // max_len
  static constexpr int64_t kVocabulary = 1 << 22;    // 4M tokens; the field's largest are about 256k
};

// Appends a problem when `value` is not in [1, limit].
void CheckSize(std::vector<OptionProblem>* problems, const char* field, int64_t value, int64_t limit);
// The same for a size whose 0 means a default (`zero_means`, e.g. "4 x hidden_size").
void CheckSizeOrDefault(std::vector<OptionProblem>* problems, const char* field, int64_t value, int64_t limit,
                        const char* zero_means);

class ArchitectureSpec {
 public:
  virtual ~ArchitectureSpec() = default;
  // The registry key, and the name of its field in ModelSpec's oneof.
  virtual std::string name() const = 0;
  // The model_type values of config.json this architecture reads.
  virtual std::vector<std::string> hf_model_types() const = 0;
  // Its options' defaults, in the schema's text format.
  virtual std::string defaults_text() const = 0;
  // Problems with defaulted options.
  virtual std::vector<OptionProblem> Validate(const config::ModelSpec& model) const = 0;
  virtual ModelSizes Sizes(const config::ModelSpec& model) const = 0;
  // "kv_heads=2" and the like: what a summary adds to the common sizes.
  virtual std::string Details(const config::ModelSpec& /*model*/) const { return ""; }
  // Whether roles sharing the model may have per-role heads (adapter: HEAD).
  virtual bool per_role_heads() const { return false; }
  // Whether it reads and writes Hugging Face folders (the rest is on the LibTorch side).
  virtual bool hugging_face() const { return !hf_model_types().empty(); }
  // Sets its options in `model` from a config.json (all but vocab_size).
  // Every config.json field that changes the forward pass is read and
  // implemented, or refused by name (docs/models.md, "config.json fields").
  virtual void ReadHfConfig(const HfConfigReader& config, config::ModelSpec* model) const = 0;
  // The config.json field an option of its message is read from (errors name both).
  virtual std::string HfFieldOf(const std::string& option) const { return option; }
  // The config.json fields of its options (all but vocab_size and torch_dtype).
  virtual nlohmann::json HfConfig(const config::ModelSpec& model) const = 0;
};

using ArchitectureSpecRegistry = Registry<ArchitectureSpec>;

#define TROUPE_REGISTER_ARCHITECTURE_SPEC(name, Type) \
  TROUPE_REGISTER(::troupe::ArchitectureSpecRegistry, name, [] { return std::make_unique<Type>(); })

// The architectures this build knows, by name.
std::vector<std::string> ArchitectureNames();
// The architecture `model` names (its oneof); ConfigError when it names none.
const ArchitectureSpec& ArchitectureSpecOf(const config::ModelSpec& model);
// The one registered under `name`; ModelError for an unknown name.
const ArchitectureSpec& ArchitectureSpecNamed(const std::string& name);
// Its options message within `model` (which must name it).
const google::protobuf::Message& ArchitectureOptions(const config::ModelSpec& model);

// The default architecture when a model names none and has no hf_dir.
constexpr char kDefaultArchitecture[] = "transformer";
// Fills a model's unset architecture options from its architecture's defaults
// (the default architecture's when it names none).
void ApplyArchitectureDefaults(config::ModelSpec* model);

// A Hugging Face folder's config.json, read into the architecture options of
// `model` (the architecture chosen by model_type) and validated as a
// workflow's options are. Returns its vocab_size. CheckpointError names the
// file and the field.
int64_t ReadHfFolderConfig(const std::string& dir, config::ModelSpec* model);
// Writes DIR/config.json for `model`, atomically; `torch_dtype` is "float32" or "bfloat16".
void WriteHfFolderConfig(const config::ModelSpec& model, int64_t vocab_size, const std::string& dir,
                         const std::string& torch_dtype);

}  // namespace troupe
