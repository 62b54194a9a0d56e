// FillUnset over every scalar type the schemas use.
#include "comms/proto/fill_unset.h"

#include <vector>

namespace troupe {

namespace pb = google::protobuf;

void FillUnset(const pb::Message& defaults, pb::Message* target) {
  const pb::Reflection* from = defaults.GetReflection();
  const pb::Reflection* to = target->GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  from->ListFields(defaults, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    if (f->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < to->FieldSize(*target, f); ++i) {
          FillUnset(from->GetRepeatedMessage(defaults, f, 0), to->MutableRepeatedMessage(target, f, i));
        }
      } else if (to->HasField(*target, f)) {
        FillUnset(from->GetMessage(defaults, f), to->MutableMessage(target, f));
      }
      continue;
    }
    if (f->is_repeated() || to->HasField(*target, f)) continue;
    switch (f->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_INT32: to->SetInt32(target, f, from->GetInt32(defaults, f)); break;
      case pb::FieldDescriptor::CPPTYPE_INT64: to->SetInt64(target, f, from->GetInt64(defaults, f)); break;
      case pb::FieldDescriptor::CPPTYPE_UINT32: to->SetUInt32(target, f, from->GetUInt32(defaults, f)); break;
      case pb::FieldDescriptor::CPPTYPE_UINT64: to->SetUInt64(target, f, from->GetUInt64(defaults, f)); break;
      case pb::FieldDescriptor::CPPTYPE_FLOAT: to->SetFloat(target, f, from->GetFloat(defaults, f)); break;
      case pb::FieldDescriptor::CPPTYPE_DOUBLE: to->SetDouble(target, f, from->GetDouble(defaults, f)); break;
      case pb::FieldDescriptor::CPPTYPE_BOOL: to->SetBool(target, f, from->GetBool(defaults, f)); break;
      case pb::FieldDescriptor::CPPTYPE_STRING: to->SetString(target, f, from->GetString(defaults, f)); break;
      case pb::FieldDescriptor::CPPTYPE_ENUM: to->SetEnumValue(target, f, from->GetEnumValue(defaults, f)); break;
      case pb::FieldDescriptor::CPPTYPE_MESSAGE: break;  // handled above
    }
  }
}

}  // namespace troupe
