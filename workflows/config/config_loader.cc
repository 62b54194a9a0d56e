// Text-format parsing with positions, and command-line overrides by reflection.
#include "workflows/config/config_loader.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/base/errors.h"

namespace troupe {

namespace pb = google::protobuf;

struct LoadedWorkflow::Positions {
  pb::TextFormat::ParseInfoTree tree;
};

LoadedWorkflow::LoadedWorkflow() : positions(std::make_unique<Positions>()) {}
LoadedWorkflow::~LoadedWorkflow() = default;
LoadedWorkflow::LoadedWorkflow(LoadedWorkflow&&) noexcept = default;
LoadedWorkflow& LoadedWorkflow::operator=(LoadedWorkflow&&) noexcept = default;

SourcePos LoadedWorkflow::Locate(const std::vector<PathStep>& path) const {
  const pb::Descriptor* desc = proto.GetDescriptor();
  const pb::TextFormat::ParseInfoTree* tree = &positions->tree;
  SourcePos pos;
  for (size_t i = 0; i < path.size() && tree != nullptr && desc != nullptr; ++i) {
    const pb::FieldDescriptor* field = desc->FindFieldByName(path[i].field);
    if (field == nullptr) return pos;
    const int index = field->is_repeated() ? std::max(0, path[i].index) : -1;
    pb::TextFormat::ParseLocation loc = tree->GetLocation(field, index);
    if (loc.line >= 0) pos = {loc.line + 1, loc.column + 1};
    if (field->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
      tree = tree->GetTreeForNested(field, index);
      desc = field->message_type();
    } else {
      break;
    }
  }
  return pos;
}

void LoadedWorkflow::Fail(const std::vector<PathStep>& path, const std::string& message) const {
  SourcePos pos = Locate(path);
  throw ConfigError(file, pos.line, pos.col, message);
}

namespace {

class CollectFirstError : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!has_error) {
      has_error = true;
      this->line = line + 1;
      this->column = column + 1;
      this->message = message;
    }
  }
  bool has_error = false;
  int line = 0;
  int column = 0;
  std::string message;
};

}  // namespace

LoadedWorkflow ParseWorkflowText(const std::string& text, const std::string& file_name) {
  LoadedWorkflow w;
  w.file = file_name;
  w.text = text;
  CollectFirstError errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&w.positions->tree);
  if (!parser.ParseFromString(text, &w.proto)) {
    int column = errors.column;
    // The parser reports unknown names after reading them; point at the name itself.
    size_t open = std::string::npos;
    for (const char* lead : {"field named \"", "enumeration value of \""}) {
      const auto at = errors.message.find(lead);
      if (at != std::string::npos) open = at + std::strlen(lead) - 1;
    }
    const auto close = open == std::string::npos ? open : errors.message.find('"', open + 1);
    if (close != std::string::npos) {
      const std::string name = errors.message.substr(open + 1, close - open - 1);
      std::istringstream lines(text);
      std::string line;
      for (int i = 0; i < errors.line && std::getline(lines, line); ++i) {}
      const auto at = line.rfind(name, static_cast<size_t>(std::max(0, column - 1)));
      if (at != std::string::npos) column = static_cast<int>(at) + 1;
    }
    throw ConfigError(file_name, errors.line, column,
                      errors.has_error ? errors.message : std::string("cannot parse workflow"));
  }
  return w;
}

LoadedWorkflow LoadWorkflowFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path, 0, 0, "cannot open workflow file");
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseWorkflowText(buf.str(), path);
}

void ApplyOverride(LoadedWorkflow& workflow, const std::string& assignment) {
  const auto eq = assignment.find('=');
  auto fail = [&](const std::string& why) -> void { throw ConfigError("--set " + assignment + ": " + why); };
  if (eq == std::string::npos || eq == 0) fail("expected field.path=value");
  const std::string path = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  pb::Message* msg = &workflow.proto;
  std::stringstream steps(path);
  std::string step;
  std::vector<std::string> parts;
  while (std::getline(steps, step, '.')) parts.push_back(step);
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string name = parts[i];
    int index = -1;
    const auto br = name.find('[');
    if (br != std::string::npos) {
      if (name.back() != ']') fail("bad index in '" + parts[i] + "'");
      try {
        index = std::stoi(name.substr(br + 1, name.size() - br - 2));
      } catch (const std::exception&) {
        fail("bad index in '" + parts[i] + "'");
      }
      name = name.substr(0, br);
    }
    const pb::FieldDescriptor* field = msg->GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) fail("no field '" + name + "' in " + msg->GetDescriptor()->name());
    const pb::Reflection* refl = msg->GetReflection();
    const bool last = i + 1 == parts.size();
    if (field->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
      if (last) fail("'" + name + "' is a message; set one of its fields");
      if (field->is_repeated()) {
        const int size = refl->FieldSize(*msg, field);
        if (index < 0) fail("'" + name + "' is repeated; write " + name + "[i]");
        if (index > size) fail("index " + std::to_string(index) + " past the end of '" + name + "'");
        msg = index == size ? refl->AddMessage(msg, field) : refl->MutableRepeatedMessage(msg, field, index);
      } else {
        msg = refl->MutableMessage(msg, field);
      }
    } else {
      if (!last) fail("'" + name + "' is not a message");
      if (field->is_repeated() && index >= 0) fail("indexing repeated scalars is not supported; the value is appended");
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        // Strings need no quotes on the command line.
        if (field->is_repeated()) refl->AddString(msg, field, value);
        else refl->SetString(msg, field, value);
      } else {
        pb::LogSilencer quiet;  // the parser would log what we report ourselves
        if (!pb::TextFormat::ParseFieldValueFromString(value, field, msg)) {
          fail("'" + value + "' is not a valid value for " + name);
        }
      }
    }
  }
}

}  // namespace troupe
