// Filling a message's unset fields from a table of defaults of the same type,
// by reflection: the workflow defaults table and each architecture's options
// defaults use it.
#pragma once

#include <google/protobuf/message.h>

namespace troupe {

// Copies into `target` every field `defaults` sets that `target` does not;
// recurses into sub-messages `target` has (each element of a repeated one
// gets the table's first element as its defaults).
void FillUnset(const google::protobuf::Message& defaults, google::protobuf::Message* target);

}  // namespace troupe
