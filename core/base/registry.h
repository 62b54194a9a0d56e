// One registry per kind of plug-in (games, scripted strategies, pipeline tasks).
// Plug-ins register from an anonymous namespace with TROUPE_REGISTER; the
// libraries holding them are OBJECT libraries so registrations survive linking.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/errors.h"

namespace troupe {

// "a, b, c": for error messages that list what is registered.
inline std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

template <class Base, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Base>(Args...)>;

  static Registry& Get() {
    static Registry instance;
    return instance;
  }

  bool Register(const std::string& name, Factory factory) {
    factories_[name] = std::move(factory);
    return true;
  }

  bool Has(const std::string& name) const { return factories_.count(name) > 0; }

  std::unique_ptr<Base> Create(const std::string& name, Args... args) const {
    auto it = factories_.find(name);
    if (it == factories_.end()) {
      throw Error("unknown name '" + name + "' (registered: " + JoinNames(Names()) + ")");
    }
    return it->second(std::forward<Args>(args)...);
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [n, f] : factories_) names.push_back(n);
    return names;
  }

 private:
  std::map<std::string, Factory> factories_;
};

}  // namespace troupe

#define TROUPE_CONCAT_INNER(a, b) a##b
#define TROUPE_CONCAT(a, b) TROUPE_CONCAT_INNER(a, b)
// Registers `factory` under `name` in `RegistryType` at static-initialisation time.
#define TROUPE_REGISTER(RegistryType, name, factory) \
  static const bool TROUPE_CONCAT(troupe_registered_, __LINE__) = RegistryType::Get().Register(name, factory)
