// Making games by name with checked parameters.
#include "core/game.h"

namespace troupe {

std::unique_ptr<Game> MakeGame(const std::string& name, const std::map<std::string, ParamValue>& values) {
  const std::vector<ParamSpec>* specs = GameParamRegistry::Get().Find(name);
  if (specs == nullptr || !GameFactory::Get().Has(name)) {
    throw GameError("unknown game '" + name + "' (registered: " + JoinNames(GameFactory::Get().Names()) + ")");
  }
  Params params(*specs);
  for (const auto& [k, v] : values) params.Set(k, v);
  return GameFactory::Get().Create(name, params);
}

}  // namespace troupe
