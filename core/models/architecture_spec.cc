// The architecture registry's configuration side, and config.json both ways.
#include "core/models/architecture_spec.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>

#include <google/protobuf/text_format.h>

#include "comms/proto/fill_unset.h"
#include "core/base/errors.h"
#include "core/base/file_io.h"

namespace troupe {

namespace pb = google::protobuf;

void HfConfigReader::Fail(const char* field, const std::string& message) const {
  throw CheckpointError(path_ + ": '" + prefix_ + field + "' " + message);
}

double HfConfigReader::number(const char* field) const {
  if (!has(field) || !json_[field].is_number()) throw CheckpointError(path_ + ": needs a number '" + prefix_ + field + "'");
  return json_[field].get<double>();
}

int64_t HfConfigReader::count(const char* field) const {
  const double v = number(field);
  // 2^53: past it a double no longer holds every whole number (nor fits what troupe allocates).
  if (v < 0 || v > 9007199254740992.0 || v != std::floor(v)) Fail(field, "must be a non-negative whole number");
  return static_cast<int64_t>(v);
}

int32_t HfConfigReader::size(const char* field) const {
  const int64_t v = count(field);
  if (v > std::numeric_limits<int32_t>::max()) Fail(field, "is " + std::to_string(v) + ", more than troupe builds");
  return static_cast<int32_t>(v);
}

bool HfConfigReader::flag(const char* field, bool absent) const {
  if (!has(field)) return absent;
  if (!json_[field].is_boolean()) Fail(field, "must be true or false");
  return json_[field].get<bool>();
}

std::string HfConfigReader::text(const char* field, const std::string& absent) const {
  if (!has(field)) return absent;
  if (!json_[field].is_string()) Fail(field, "must be a string");
  return json_[field].get<std::string>();
}

std::vector<std::string> HfConfigReader::texts(const char* field) const {
  std::vector<std::string> out;
  if (!has(field)) return out;
  if (!json_[field].is_array()) Fail(field, "must be an array of strings");
  for (const auto& t : json_[field]) {
    if (!t.is_string()) Fail(field, "must be an array of strings");
    out.push_back(t.get<std::string>());
  }
  return out;
}

HfConfigReader HfConfigReader::object(const char* field) const {
  if (!has(field) || !json_[field].is_object()) Fail(field, "must be an object");
  return HfConfigReader(json_[field], path_, prefix_ + field + ".");
}

void CheckSize(std::vector<OptionProblem>* problems, const char* field, int64_t value, int64_t limit) {
  if (value <= 0) problems->push_back({field, std::string(field) + " must be positive (is " + std::to_string(value) + ")"});
  else if (value > limit) {
    problems->push_back({field, std::string(field) + " " + std::to_string(value) + " is more than troupe builds (at most " +
                                    std::to_string(limit) + ")"});
  }
}

void CheckSizeOrDefault(std::vector<OptionProblem>* problems, const char* field, int64_t value, int64_t limit,
                        const char* zero_means) {
  if (value < 0 || value > limit) {
    problems->push_back({field, std::string(field) + " must be 0 (" + zero_means + ") or at most " +
                                    std::to_string(limit)});
  }
}

namespace {

// One instance of each registered architecture, made on first use.
const std::map<std::string, std::unique_ptr<ArchitectureSpec>>& Specs() {
  static const auto specs = [] {
    std::map<std::string, std::unique_ptr<ArchitectureSpec>> all;
    for (const std::string& name : ArchitectureSpecRegistry::Get().Names()) {
      all[name] = ArchitectureSpecRegistry::Get().Create(name);
    }
    return all;
  }();
  return specs;
}

const pb::FieldDescriptor* OptionsField(const std::string& name) {
  const pb::FieldDescriptor* f = config::ModelSpec::descriptor()->FindFieldByName(name);
  if (f == nullptr || f->containing_oneof() == nullptr) {
    throw ModelError("architecture '" + name + "' has no options field in ModelSpec's architecture oneof");
  }
  return f;
}

}  // namespace

std::vector<std::string> ArchitectureNames() { return ArchitectureSpecRegistry::Get().Names(); }

const ArchitectureSpec& ArchitectureSpecNamed(const std::string& name) {
  auto it = Specs().find(name);
  if (it == Specs().end()) {
    throw ModelError("unknown architecture '" + name + "' (known: " + JoinNames(ArchitectureNames()) + ")");
  }
  return *it->second;
}

const ArchitectureSpec& ArchitectureSpecOf(const config::ModelSpec& model) {
  const pb::OneofDescriptor* oneof = config::ModelSpec::descriptor()->FindOneofByName("architecture");
  const pb::FieldDescriptor* set = model.GetReflection()->GetOneofFieldDescriptor(model, oneof);
  if (set == nullptr) throw ConfigError("model '" + model.name() + "' names no architecture");
  return ArchitectureSpecNamed(set->name());
}

const pb::Message& ArchitectureOptions(const config::ModelSpec& model) {
  return model.GetReflection()->GetMessage(model, OptionsField(ArchitectureSpecOf(model).name()));
}

void ApplyArchitectureDefaults(config::ModelSpec* model) {
  const pb::OneofDescriptor* oneof = config::ModelSpec::descriptor()->FindOneofByName("architecture");
  const pb::Reflection* r = model->GetReflection();
  const pb::FieldDescriptor* set = r->GetOneofFieldDescriptor(*model, oneof);
  const ArchitectureSpec& arch = set ? ArchitectureSpecNamed(set->name()) : ArchitectureSpecNamed(kDefaultArchitecture);
  pb::Message* options = r->MutableMessage(model, OptionsField(arch.name()));
  std::unique_ptr<pb::Message> defaults(options->New());
  if (!pb::TextFormat::ParseFromString(arch.defaults_text(), defaults.get())) {
    throw Error("the defaults of architecture '" + arch.name() + "' do not parse");
  }
  FillUnset(*defaults, options);
}

int64_t ReadHfFolderConfig(const std::string& dir, config::ModelSpec* model) {
  const std::string path = dir + "/config.json";
  std::ifstream in(path);
  if (!in) throw CheckpointError(path + ": cannot open");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(path + ": not JSON: " + e.what());
  }
  if (!json.is_object()) throw CheckpointError(path + ": expected a JSON object");
  const HfConfigReader config(json, path);
  const std::string type = config.text("model_type", "llama");
  std::vector<std::string> known;
  for (const auto& [name, arch] : Specs()) {
    for (const std::string& t : arch->hf_model_types()) {
      known.push_back(t);
      if (t != type) continue;
      arch->ReadHfConfig(config, model);
      // Validated as a workflow's options are; the first problem is named by its config.json field.
      const std::vector<OptionProblem> problems = arch->Validate(*model);
      if (!problems.empty()) {
        const OptionProblem& p = problems.front();
        const std::string field = p.field.empty() ? "" : arch->HfFieldOf(p.field);
        throw CheckpointError(path + ": " + (field.empty() ? "" : "'" + field + "': ") + p.message);
      }
      const int64_t vocab = config.count("vocab_size");
      if (vocab == 0 || vocab > SizeLimits::kVocabulary) {
        config.Fail("vocab_size", "is " + std::to_string(vocab) + "; troupe builds vocabularies of 1 to " +
                                      std::to_string(SizeLimits::kVocabulary) + " tokens");
      }
      return vocab;
    }
  }
  throw CheckpointError(path + ": model_type '" + type + "' is not one troupe reads (" + JoinNames(known) + ")");
}

void WriteHfFolderConfig(const config::ModelSpec& model, int64_t vocab_size, const std::string& dir,
                         const std::string& torch_dtype) {
  nlohmann::json json = ArchitectureSpecOf(model).HfConfig(model);
  json["vocab_size"] = vocab_size;
  json["torch_dtype"] = torch_dtype;
  WriteFileAtomically(dir + "/config.json", json.dump(2) + "\n");
}

}  // namespace troupe
