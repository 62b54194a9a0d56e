// Checks of a model entry shared by every kind of workflow.
#include "workflows/config/model_options.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/device_support.h"
#include "core/models/architecture_spec.h"

namespace troupe {

std::vector<PathStep> ModelOptionsPath(const LoadedWorkflow& w, int i, const std::string& architecture,
                                       const std::string& field) {
  std::vector<PathStep> path{{"model", i}};
  if (w.proto.model(i).has_hf_dir()) return path.push_back({"hf_dir"}), path;
  // A model that names no architecture gets the default one: point at the model.
  if (w.proto.model(i).architecture_case() == config::ModelSpec::ARCHITECTURE_NOT_SET) return path;
  path.push_back({architecture.c_str()});
  if (!field.empty()) path.push_back({field.c_str()});
  return path;
}

void CheckModelOptions(const LoadedWorkflow& w, int i, const ModelConfig& model) {
  const ArchitectureSpec& arch = ArchitectureSpecOf(model.spec);
  const std::string name = arch.name();
  for (const OptionProblem& p : arch.Validate(model.spec)) {
    // A nested option ("rope_scaling.factor") points at its message; the message names the rest.
    const std::string field = p.field.substr(0, p.field.find('.'));
    w.Fail(ModelOptionsPath(w, i, name, field), "model '" + model.name + "': " + p.message);
  }
  if (model.lr <= 0) w.Fail({{"model", i}, {"optimizer"}, {"lr"}}, "learning rate must be positive");
}

namespace {

bool ValidDeviceSyntax(const std::string& d) {
  if (d.empty() || d == "cpu") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5) return false;
  return std::all_of(d.begin() + 5, d.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void CheckModelDevice(const LoadedWorkflow& w, int i) {
  const std::string& d = w.proto.model(i).device();
  if (!ValidDeviceSyntax(d)) {
    w.Fail({{"model", i}, {"device"}}, "model '" + w.proto.model(i).name() + "': device '" + d + "' is not cpu or cuda:N");
  }
  const std::optional<int> cuda = CudaDeviceCount();
  if (d.rfind("cuda:", 0) != 0 || !cuda) return;
  const std::string index = d.substr(5);
  if (index.size() > 4 || std::stoi(index) >= *cuda) {
    w.Fail({{"model", i}, {"device"}},
           "model '" + w.proto.model(i).name() + "': device '" + d + "', but this build of LibTorch " +
               (*cuda == 0 ? std::string("has no CUDA devices (a CPU build, or no GPU here)")
                           : "sees " + std::to_string(*cuda) + " CUDA device(s)"));
  }
}

}  // namespace troupe
