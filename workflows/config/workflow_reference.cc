// Walks the schema as protoc's parser reads it (with its comments) beside the
// defaults tables.
#include "workflows/config/workflow_reference.h"

#include <cctype>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include "core/base/errors.h"
#include "core/models/architecture_spec.h"
#include "workflows/config/defaults.h"

namespace troupe {

extern const char kWorkflowProtoText[];  // workflow_proto_text.cc, made from the schema at build time

namespace {

namespace pb = google::protobuf;

class ThrowingErrors : public pb::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    throw Error("workflow.proto:" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message);
  }
};

pb::FileDescriptorProto ParseSchema() {
  const std::string text = kWorkflowProtoText;
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  ThrowingErrors errors;
  pb::io::Tokenizer tokenizer(&input, &errors);
  pb::compiler::Parser parser;
  parser.RecordErrorsTo(&errors);
  pb::FileDescriptorProto file;
  if (!parser.Parse(&tokenizer, &file)) throw Error("workflow.proto does not parse");
  return file;
}

// One line of comment text, safe in a table cell.
std::string Cell(std::string text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}

}  // namespace

std::map<std::pair<std::string, std::string>, std::string> WorkflowDefaultValues() {
  std::map<std::pair<std::string, std::string>, std::string> table;
  std::function<void(const pb::Message&)> collect = [&](const pb::Message& m) {
    std::vector<const pb::FieldDescriptor*> fields;
    m.GetReflection()->ListFields(m, &fields);
    for (const auto* f : fields) {
      if (f->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
        collect(f->is_repeated() ? m.GetReflection()->GetRepeatedMessage(m, f, 0)
                                 : m.GetReflection()->GetMessage(m, f));
        continue;
      }
      std::string value;
      pb::TextFormat::PrintFieldValueToString(m, f, -1, &value);
      table[{m.GetDescriptor()->name(), f->name()}] = value;
    }
  };
  collect(WorkflowDefaults());
  for (const std::string& name : ArchitectureNames()) {
    config::ModelSpec model;
    model.GetReflection()->MutableMessage(&model, config::ModelSpec::descriptor()->FindFieldByName(name));
    ApplyArchitectureDefaults(&model);
    collect(ArchitectureOptions(model));
  }
  return table;
}

namespace {

// A heading's anchor as Markdown renderers make it ("ModelSpec" -> "modelspec").
std::string Anchor(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string TypeOf(const pb::FieldDescriptorProto& f) {
  std::string type;
  if (f.has_type_name()) {
    type = f.type_name();
    if (type.rfind('.') != std::string::npos) type = type.substr(type.rfind('.') + 1);
    type = "[" + type + "](#" + Anchor(type) + ")";
  } else {
    static const std::map<int, std::string> names = {
        {pb::FieldDescriptorProto::TYPE_DOUBLE, "double"}, {pb::FieldDescriptorProto::TYPE_FLOAT, "float"},
        {pb::FieldDescriptorProto::TYPE_INT64, "int64"},   {pb::FieldDescriptorProto::TYPE_UINT64, "uint64"},
        {pb::FieldDescriptorProto::TYPE_INT32, "int32"},   {pb::FieldDescriptorProto::TYPE_UINT32, "uint32"},
        {pb::FieldDescriptorProto::TYPE_BOOL, "bool"},     {pb::FieldDescriptorProto::TYPE_STRING, "string"},
        {pb::FieldDescriptorProto::TYPE_BYTES, "bytes"}};
    auto it = names.find(f.type());
    type = it == names.end() ? "?" : it->second;
  }
  if (f.label() == pb::FieldDescriptorProto::LABEL_REPEATED) type = "repeated " + type;
  return type;
}

}  // namespace

std::string WorkflowReferenceMarkdown() {
  const pb::FileDescriptorProto file = ParseSchema();
  // Comments by location path (message m: {4, m}; its field f: {4, m, 2, f}; enum e: {5, e}; value v: {5, e, 2, v}).
  std::map<std::vector<int>, std::string> comments;
  for (const auto& loc : file.source_code_info().location()) {
    std::string text = loc.leading_comments();
    if (!loc.trailing_comments().empty()) text += (text.empty() ? "" : " ") + loc.trailing_comments();
    if (!text.empty()) comments[std::vector<int>(loc.path().begin(), loc.path().end())] = Cell(text);
  }
  auto comment = [&](std::vector<int> path) {
    auto it = comments.find(path);
    return it == comments.end() ? std::string() : it->second;
  };
  // Where each message is used: "Workflow.model", ...
  std::map<std::string, std::vector<std::string>> used_in;
  for (const auto& m : file.message_type()) {
    for (const auto& f : m.field()) {
      if (f.type() != pb::FieldDescriptorProto::TYPE_MESSAGE) continue;
      used_in[f.type_name().substr(f.type_name().rfind('.') + 1)].push_back(m.name() + "." + f.name());
    }
  }
  const auto defaults = WorkflowDefaultValues();
  std::ostringstream out;
  out << "# Workflow file reference\n\n"
      << "Every field a workflow file (protobuf text format) may set, with its type, its default and what it\n"
      << "means. Generated from the schema (`comms/proto/workflow.proto`) and the defaults tables\n"
      << "(`workflows/config/defaults.cc`, and each architecture's `core/models/NAME/NAME_spec.cc`) by\n"
      << "`troupe reference`; a test fails when this page and the schema differ, so edit the schema and run\n"
      << "`./build/workflows/troupe reference > docs/reference/workflow.md`. A workflow starts at\n"
      << "[Workflow](#workflow); `troupe validate FILE` prints the resolved workflow a run would use.\n\n";
  for (int mi = 0; mi < file.message_type_size(); ++mi) {
    const pb::DescriptorProto& m = file.message_type(mi);
    out << "## " << m.name() << "\n\n";
    if (!comment({4, mi}).empty()) out << comment({4, mi}) << "\n\n";
    if (used_in.count(m.name())) {
      out << "Used as:";
      for (const std::string& where : used_in[m.name()]) out << " `" << where << "`";
      out << "\n\n";
    }
    if (m.oneof_decl_size() > 0) {
      for (int o = 0; o < m.oneof_decl_size(); ++o) {
        if (m.oneof_decl(o).name().rfind('_', 0) == 0) continue;  // proto3 optional's synthetic oneofs
        out << "At most one of:";
        for (const auto& f : m.field()) {
          if (f.has_oneof_index() && f.oneof_index() == o && !f.proto3_optional()) out << " `" << f.name() << "`";
        }
        out << " (`" << m.oneof_decl(o).name() << "`).\n\n";
      }
    }
    out << "| field | type | default | what it is |\n|---|---|---|---|\n";
    for (int fi = 0; fi < m.field_size(); ++fi) {
      const pb::FieldDescriptorProto& f = m.field(fi);
      auto d = defaults.find({m.name(), f.name()});
      out << "| `" << f.name() << "` | " << TypeOf(f) << " | "
          << (d == defaults.end() ? "" : "`" + Cell(d->second) + "`") << " | " << comment({4, mi, 2, fi}) << " |\n";
    }
    out << "\n";
  }
  out << "## Enums\n\n";
  for (int ei = 0; ei < file.enum_type_size(); ++ei) {
    const pb::EnumDescriptorProto& e = file.enum_type(ei);
    out << "### " << e.name() << "\n\n";
    if (!comment({5, ei}).empty()) out << comment({5, ei}) << "\n\n";
    out << "| value | what it is |\n|---|---|\n";
    for (int vi = 0; vi < e.value_size(); ++vi) {
      out << "| `" << e.value(vi).name() << "` | " << comment({5, ei, 2, vi}) << " |\n";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace troupe
