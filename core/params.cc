// Typed plug-in parameters: checking and access.
#include "core/params.h"

#include "core/base/registry.h"

#include <cstdint>
#include <sstream>

namespace troupe {

std::string ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kInt: return "int";
    case ParamType::kReal: return "real";
    case ParamType::kFlag: return "flag";
    case ParamType::kText: return "text";
  }
  return "?";
}

std::string ParamValueToString(const ParamValue& value) {
  std::ostringstream out;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) out << (v ? "true" : "false");
        else if constexpr (std::is_same_v<T, std::string>) out << '"' << v << '"';
        else out << v;
      },
      value);
  return out.str();
}

Params::Params(const std::vector<ParamSpec>& specs) : specs_(specs) {
  for (const auto& s : specs_) values_[s.name] = s.default_value;
}

const ParamSpec& Params::Spec(const std::string& name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return s;
  }
  std::vector<std::string> known;
  for (const auto& s : specs_) known.push_back(s.name);
  throw GameError("unknown parameter '" + name + "' (known: " + JoinNames(known) + ")");
}

void Params::Set(const std::string& name, const ParamValue& value) {
  const ParamSpec& spec = Spec(name);
  ParamValue v = value;
  // An int is accepted where a real is declared.
  if (spec.type == ParamType::kReal && std::holds_alternative<int64_t>(v)) {
    v = static_cast<double>(std::get<int64_t>(v));
  }
  bool ok = (spec.type == ParamType::kInt && std::holds_alternative<int64_t>(v)) ||
            (spec.type == ParamType::kReal && std::holds_alternative<double>(v)) ||
            (spec.type == ParamType::kFlag && std::holds_alternative<bool>(v)) ||
            (spec.type == ParamType::kText && std::holds_alternative<std::string>(v));
  if (!ok) {
    throw GameError("parameter '" + name + "' takes a " + ParamTypeName(spec.type) + " value, got " +
                    ParamValueToString(v));
  }
  if (spec.type == ParamType::kInt || spec.type == ParamType::kReal) {
    double x = spec.type == ParamType::kInt ? static_cast<double>(std::get<int64_t>(v)) : std::get<double>(v);
    if (x < spec.min || x > spec.max) {
      std::ostringstream m;
      m << "parameter '" << name << "' = " << ParamValueToString(v) << " is outside [" << spec.min << ", " << spec.max
        << "]";
      throw GameError(m.str());
    }
  }
  values_[name] = v;
  given_.insert(name);
}

int64_t Params::Int(const std::string& name) const {
  Spec(name);
  return std::get<int64_t>(values_.at(name));
}
double Params::Real(const std::string& name) const {
  Spec(name);
  return std::get<double>(values_.at(name));
}
bool Params::Flag(const std::string& name) const {
  Spec(name);
  return std::get<bool>(values_.at(name));
}
const std::string& Params::Text(const std::string& name) const {
  Spec(name);
  return std::get<std::string>(values_.at(name));
}

}  // namespace troupe
