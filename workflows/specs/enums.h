// Proto enums of the workflow schema and their C++ counterparts, mapped by
// name in one place (never by position).
#pragma once

#include <optional>

#include "comms/proto/workflow.pb.h"
#include "core/credit.h"

namespace troupe {

// nullopt for a value the schema does not name (proto3 enums are open).
std::optional<Estimator> EstimatorOf(int proto_value);
std::optional<GroupKey> GroupKeyOf(int proto_value);
config::GroupKey ToProto(GroupKey k);

}  // namespace troupe
