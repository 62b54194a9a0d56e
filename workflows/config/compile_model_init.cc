// Compiling init_from (compile_model_init.h).
#include "workflows/config/compile_model_init.h"

#include <filesystem>
#include <set>

#include <google/protobuf/util/message_differencer.h>

#include "core/base/errors.h"
#include "core/base/file_io.h"
#include "core/checkpoint.h"

namespace troupe {

namespace fs = std::filesystem;

namespace {

constexpr char kResolvedWorkflow[] = "workflow.resolved.textproto";

// The run folder that holds `checkpoint` (RUN/checkpoints/iter-N, or a snapshot's
// RUN/snapshots/MODEL/iter-N), or `given` when it is one.
fs::path RunFolderOf(const fs::path& given, const fs::path& checkpoint) {
  if (fs::exists(given / kResolvedWorkflow)) return given;
  fs::path p = checkpoint.parent_path().parent_path();
  if (!fs::exists(p / kResolvedWorkflow) && fs::exists(p.parent_path() / kResolvedWorkflow)) p = p.parent_path();
  return p;
}

// The workflow files being compiled for an init_from, innermost last: a chain
// that comes back to one of them would never end.
std::vector<std::string>& CompilingSources() {
  thread_local std::vector<std::string> files;
  return files;
}

std::string Describe(const ModelConfig& m) {
  const ArchitectureSpec& arch = ArchitectureSpecOf(m.spec);
  const ModelSizes s = arch.Sizes(m.spec);
  return arch.name() + " d=" + std::to_string(s.width) + " layers=" + std::to_string(s.layers) +
         " heads=" + std::to_string(s.heads) + " max_len=" + std::to_string(s.max_len);
}

// The roles on model `m`, by slot.
std::vector<std::string> RolesBySlot(const CompiledWorkflow& c, int m) {
  std::vector<std::string> names(static_cast<size_t>(c.models[m].num_roles));
  for (const RoleInfo& r : c.rollout.roles) {
    if (r.model == m && r.slot < static_cast<int>(names.size())) names[r.slot] = r.name;
  }
  return names;
}

}  // namespace

void CompileModelInits(const LoadedWorkflow& w, CompiledWorkflow& c) {
  for (int i = 0; i < static_cast<int>(c.models.size()); ++i) {
    const config::ModelSpec& spec = w.proto.model(i);
    if (!spec.has_init_from()) {
      if (spec.has_init_model()) w.Fail({{"model", i}, {"init_model"}}, "init_model names a model of init_from's run; set init_from");
      continue;
    }
    ModelConfig& m = c.models[i];
    const std::vector<PathStep> at{{"model", i}, {"init_from"}};
    const std::string given = spec.init_from();
    std::vector<std::string> damaged;
    const std::optional<std::string> checkpoint = FindCheckpoint(given, &damaged);
    // A model never starts from a damaged file, nor silently from an older checkpoint than asked.
    if (!damaged.empty()) {
      w.Fail(at, "model '" + m.name + "': the newest checkpoint of " + given + " is damaged (" + damaged.front() + ")" +
                     (checkpoint ? "; name the complete one to start from it: " + *checkpoint : ""));
    }
    if (!checkpoint) {
      w.Fail(at, "model '" + m.name + "': no checkpoint in " + given +
                     " (init_from takes a run folder of `troupe train`, one of its checkpoints/iter-N folders, or a snapshot's "
                     "snapshots/MODEL/iter-N folder)");
    }
    const fs::path run = RunFolderOf(given, *checkpoint);
    const fs::path resolved = run / kResolvedWorkflow;
    if (!fs::exists(resolved)) {
      w.Fail(at, "model '" + m.name + "': " + resolved.string() +
                     " is missing, so what the checkpoint's models are cannot be known");
    }
    // The run that wrote the checkpoint, compiled again.
    std::vector<std::string>& compiling = CompilingSources();
    const std::string key = fs::weakly_canonical(resolved).string();
    for (const std::string& f : compiling) {
      if (f == key) w.Fail(at, "model '" + m.name + "': init_from comes back to " + resolved.string());
    }
    CompiledWorkflow source;
    compiling.push_back(key);
    try {
      source = CompileWorkflow(LoadWorkflowFile(resolved.string()));
    } catch (const Error& e) {
      compiling.pop_back();
      w.Fail(at, "model '" + m.name + "': the run in " + run.string() + " no longer compiles: " + e.what());
    }
    compiling.pop_back();
    const std::string name = spec.has_init_model() ? spec.init_model() : m.name;
    int s = -1;
    std::string names;
    for (size_t k = 0; k < source.models.size(); ++k) {
      if (source.models[k].name == name) s = static_cast<int>(k);
      names += (k ? ", " : "") + source.models[k].name;
    }
    if (s < 0) {
      w.Fail(spec.has_init_model() ? std::vector<PathStep>{{"model", i}, {"init_model"}} : at,
             "model '" + m.name + "': the run in " + run.string() + " has no model '" + name + "' (it has: " +
                 (names.empty() ? "none" : names) + ")" + (spec.has_init_model() ? "" : "; name it with init_model"));
    }
    const ModelConfig& src = source.models[s];
    const std::string from = "model '" + m.name + "': init_from " + given + " (its model '" + name + "')";
    // The same architecture with the same options, and the same troupe parts.
    if (ArchitectureSpecOf(src.spec).name() != ArchitectureSpecOf(m.spec).name() ||
        !google::protobuf::util::MessageDifferencer::Equals(ArchitectureOptions(src.spec), ArchitectureOptions(m.spec))) {
      w.Fail(at, from + " is a " + Describe(src) + " (" + ArchitectureOptions(src.spec).ShortDebugString() +
                     "); this model is a " + Describe(m) + " (" + ArchitectureOptions(m.spec).ShortDebugString() + ")");
    }
    auto part = [&](bool differs, const std::string& what) {
      if (differs) w.Fail(at, from + " differs in " + what + ", which changes its parameters");
    };
    part(src.lora_rank != m.lora_rank, "per-role LoRA adapters (rank " + std::to_string(src.lora_rank) + " there, " +
                                           std::to_string(m.lora_rank) + " here)");
    part(src.role_heads != m.role_heads, "per-role heads");
    part(src.latent != m.latent || src.latent_in_width != m.latent_in_width, "latent message parts");
    auto init = std::make_shared<ModelInit>();
    init->checkpoint = *checkpoint;
    // Prompts: both text through one tokenizer, or both words.
    const bool text = !m.tokenizer_json.empty(), src_text = !src.tokenizer_json.empty();
    if (text != src_text) {
      w.Fail(at, from + (src_text ? " reads text through " + src.tokenizer_json + "; this model reads words"
                                  : " reads words; this model reads text through " + m.tokenizer_json));
    }
    if (text) {
      if (ReadWholeFile(src.tokenizer_json) != ReadWholeFile(m.tokenizer_json)) {
        w.Fail(at, from + " reads text through " + src.tokenizer_json + ", another tokenizer than this model's " +
                       m.tokenizer_json);
      }
    } else {
      // Words by word; this model's role tokens and role slots by the roles' order on the model.
      const Vocab& here = c.rollout.vocab;
      const Vocab& there = source.rollout.vocab;
      const std::vector<std::string> roles_here = RolesBySlot(c, i), roles_there = RolesBySlot(source, s);
      std::set<std::string> mapped_roles;
      for (size_t k = 0; k < roles_here.size() && k < roles_there.size(); ++k)
        mapped_roles.insert("<role:" + roles_here[k] + ">");
      int shared = 0, words = 0;
      for (int id = 0; id < here.size(); ++id) {
        std::string word = here.Word(id);
        if (mapped_roles.count(word)) {
          for (size_t k = 0; k < roles_here.size(); ++k) {
            if ("<role:" + roles_here[k] + ">" == word) word = "<role:" + roles_there[k] + ">";
          }
        }
        const int there_id = there.Id(word);
        const bool known = there_id < there.size() && there.Word(there_id) == word;
        init->token_map.push_back(known ? there_id : -1);
        if (id >= 4 && word.rfind("<role:", 0) != 0) ++words, shared += known ? 1 : 0;
      }
      if (2 * shared < words) {
        w.Fail(at, from + " knows only " + std::to_string(shared) + " of this workflow's " + std::to_string(words) +
                       " words: it was trained on another game's vocabulary");
      }
    }
    for (int k = 0; k < m.num_roles; ++k) init->slot_map.push_back(k < src.num_roles ? k : -1);
    ModelConfig source_model = src;
    source_model.init.reset();  // its weights are the checkpoint's
    init->source = std::make_shared<const ModelConfig>(std::move(source_model));
    m.init = std::move(init);
  }
}

}  // namespace troupe
