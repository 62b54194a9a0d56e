// Typed parameters of plug-ins: each game or task declares ParamSpecs; values
// from a workflow file are checked against them (name, type, range).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/base/errors.h"

namespace troupe {

using ParamValue = std::variant<int64_t, double, bool, std::string>;

enum class ParamType { kInt, kReal, kFlag, kText };

struct ParamSpec {
  std::string name;
  ParamType type;
  ParamValue default_value;
  std::string help;
  double min = -1e18;  // for kInt and kReal
  double max = 1e18;
};

std::string ParamTypeName(ParamType type);
std::string ParamValueToString(const ParamValue& value);

// Parameters resolved against their specs: every declared name has a value.
class Params {
 public:
  Params() = default;
  explicit Params(const std::vector<ParamSpec>& specs);

  // Sets a value, checking the name, type and range; throws GameError otherwise.
  void Set(const std::string& name, const ParamValue& value);

  int64_t Int(const std::string& name) const;
  double Real(const std::string& name) const;
  bool Flag(const std::string& name) const;
  const std::string& Text(const std::string& name) const;
  const std::map<std::string, ParamValue>& values() const { return values_; }
  // Whether `name` was set (not left at its default): presets fill the rest.
  bool Given(const std::string& name) const { return given_.count(name) > 0; }

 private:
  const ParamSpec& Spec(const std::string& name) const;
  std::vector<ParamSpec> specs_;
  std::map<std::string, ParamValue> values_;
  std::set<std::string> given_;
};

// The parameter specs of every registered plug-in of one kind (games, tasks),
// so a workflow's parameters are checked before the plug-in is made.
template <class Kind>
class ParamSpecRegistry {
 public:
  static ParamSpecRegistry& Get() {
    static ParamSpecRegistry instance;
    return instance;
  }
  bool Register(const std::string& name, std::vector<ParamSpec> specs) {
    specs_[name] = std::move(specs);
    return true;
  }
  const std::vector<ParamSpec>* Find(const std::string& name) const {
    auto it = specs_.find(name);
    return it == specs_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, std::vector<ParamSpec>> specs_;
};

}  // namespace troupe
