// Checking and resolving a pretraining workflow.
#include "workflows/config/pretrain_config.h"

#include <algorithm>
#include <cstdint>

#include "core/base/errors.h"
#include "core/base/registry.h"
#include "core/models/architecture_spec.h"
#include "core/text/corpora.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/defaults.h"
#include "workflows/config/model_options.h"
#include "workflows/specs/model_spec.h"

namespace troupe {

CompiledPretrain CompilePretrain(const LoadedWorkflow& w) {
  if (!w.proto.has_pretrain()) w.Fail({}, "not a pretraining workflow: it has no pretrain { } section");
  if (w.proto.has_game() || w.proto.has_pipeline())
    w.Fail({{"pretrain"}}, "a pretraining workflow has no game or pipeline");
  if (w.proto.role_size() > 0) w.Fail({{"role", 0}}, "a pretraining workflow has no roles");
  if (w.proto.model_size() != 1) w.Fail({}, "a pretraining workflow has exactly one model");
  CompiledPretrain c;
  c.file = w.file;
  c.proto = w.proto;
  ApplyDefaults(&c.proto);
  c.seed = c.proto.seed();
  const config::ModelSpec& m = w.proto.model(0);
  try {
    c.model = ModelConfigOf(c.proto.model(0));
  } catch (const CheckpointError& e) {
    w.Fail({{"model", 0}, {"hf_dir"}}, e.what());
  }
  const ArchitectureSpec& arch = ArchitectureSpecOf(c.model.spec);
  if (!arch.hugging_face()) {
    w.Fail({{"model", 0}}, "pretraining writes a Hugging Face folder, which " + arch.name() +
                               " has none: give the model llama { } or gpt2 { } (or hf_dir)");
  }
  c.model.index = 0;
  CheckModelDevice(w, 0);
  CheckModelOptions(w, 0, c.model);
  const config::PretrainSpec& p = c.proto.pretrain();
  if (p.corpus_size() == 0) {
    w.Fail({{"pretrain"}}, "pretrain needs at least one corpus: " + JoinNames(CorpusNames()));
  }
  const std::vector<std::string> known = CorpusNames();
  for (int i = 0; i < p.corpus_size(); ++i) {
    if (std::find(known.begin(), known.end(), p.corpus(i)) == known.end()) {
      w.Fail({{"pretrain"}, {"corpus", i}}, "unknown corpus '" + p.corpus(i) + "' (known: " + JoinNames(known) + ")");
    }
    c.corpora.push_back(p.corpus(i));
  }
  auto positive = [&](const char* field, double value) {
    if (value <= 0) w.Fail({{"pretrain"}, {field}}, std::string(field) + " must be positive");
  };
  positive("seq_len", p.seq_len());
  positive("batch", p.batch());
  positive("epochs", p.epochs());
  positive("eval_every", p.eval_every());
  positive("checkpoint_every", p.checkpoint_every());
  positive("threads", p.threads());
  positive("replicas", p.replicas());
  if (p.replicas() > p.batch() && p.batch() > 0) {
    w.Fail({{"pretrain"}, {"replicas"}}, "replicas " + std::to_string(p.replicas()) + " exceeds batch " +
                                             std::to_string(p.batch()) +
                                             ": each replica needs a sequence of the batch");
  }
  if (p.seq_len() > c.model.sizes().max_len) {
    w.Fail({{"pretrain"}, {"seq_len"}}, "seq_len " + std::to_string(p.seq_len()) + " exceeds the model's max_len " +
                                            std::to_string(c.model.sizes().max_len));
  }
  if (p.heldout_every() < 2) w.Fail({{"pretrain"}, {"heldout_every"}}, "heldout_every must be at least 2");
  if (p.tokenizer().empty() && p.vocab_size() < 512) {
    w.Fail({{"pretrain"}, {"vocab_size"}}, "a learnt vocabulary needs at least 512 tokens");
  }
  if (m.has_hf_dir() && p.tokenizer().empty()) {
    w.Fail({{"pretrain"}}, "continuing from hf_dir needs that model's tokenizer: set pretrain.tokenizer");
  }
  if (p.min_lr_ratio() < 0 || p.min_lr_ratio() > 1) {
    w.Fail({{"pretrain"}, {"min_lr_ratio"}}, "min_lr_ratio is between 0 and 1");
  }
  if (p.reading_share() < 0 || p.reading_share() > 0.9) {
    w.Fail({{"pretrain"}, {"reading_share"}}, "reading_share is between 0 and 0.9 (the rest is the corpora)");
  }
  if (p.induction_share() < 0 || p.reading_share() + p.induction_share() > 0.9) {
    w.Fail({{"pretrain"}, {"induction_share"}},
           "induction_share is 0 or more, and with reading_share at most 0.9 (the rest is the corpora)");
  }
  if (p.renamed_share() < 0 || p.reading_share() + p.induction_share() + p.renamed_share() > 0.9) {
    w.Fail(
        {{"pretrain"}, {"renamed_share"}},
        "renamed_share is 0 or more, and with reading_share and induction_share at most 0.9 (the rest is the corpora)");
  }
  c.reading_share = p.reading_share();
  c.induction_share = p.induction_share();
  c.renamed_share = p.renamed_share();
  if (p.renamed_echo() < 0 || p.renamed_echo() > 1) {
    w.Fail({{"pretrain"}, {"renamed_echo"}}, "renamed_echo is a share of the renamed windows, between 0 and 1");
  }
  c.renamed_echo = p.renamed_echo();
  if (p.repeated_text_share() < 0 ||
      p.reading_share() + p.induction_share() + p.renamed_share() + p.repeated_text_share() > 0.9) {
    w.Fail({{"pretrain"}, {"repeated_text_share"}},
           "repeated_text_share is 0 or more, and with the other shares at most 0.9 (the rest is the corpora)");
  }
  c.repeated_text_share = p.repeated_text_share();
  if (p.answer_weight() < 0) w.Fail({{"pretrain"}, {"answer_weight"}}, "answer_weight is 0 (reported only) or more");
  if (p.answer_weight() > 0 && p.reading_share() <= 0) {
    w.Fail({{"pretrain"}, {"answer_weight"}},
           "the answer loss is on reading documents' answers: answer_weight needs reading_share above 0");
  }
  c.answer_weight = p.answer_weight();
  if (p.reading_fact_share() < 0 || p.reading_fact_share() > 0.8) {
    w.Fail({{"pretrain"}, {"reading_fact_share"}},
           "reading_fact_share is a share of the reading documents between 0 and 0.8 (a fifth are name lists)");
  }
  if (p.reading_fact_share() > 0 && p.reading_share() <= 0) {
    w.Fail({{"pretrain"}, {"reading_fact_share"}},
           "reading_fact_share is a share of the reading documents: it needs reading_share above 0");
  }
  c.reading_fact_share = p.reading_fact_share();
  if (p.reading_countries() < 1 || p.reading_countries() > 6) {
    w.Fail({{"pretrain"}, {"reading_countries"}}, "reading_countries (countries per passage document) is 1 to 6");
  }
  c.reading_countries = p.reading_countries();
  c.reading_short_passages = p.reading_short_passages();
  const config::ReadingLessonSpec& lesson = p.first_lesson();
  if (lesson.steps() < 0) w.Fail({{"pretrain"}, {"first_lesson"}, {"steps"}}, "steps is 0 (none) or more");
  if (lesson.steps() > 0 && p.reading_share() <= 0) {
    w.Fail({{"pretrain"}, {"first_lesson"}},
           "the first lesson reads the reading documents in their easiest form: it needs reading_share above 0");
  }
  if (lesson.steps() > 0 && (lesson.reading_share() < 0.1 || lesson.reading_share() > 0.9)) {
    w.Fail({{"pretrain"}, {"first_lesson"}, {"reading_share"}},
           "reading_share is between 0.1 and 0.9 of the first lesson's tokens (the rest is the corpora)");
  }
  if (lesson.steps() > 0 && p.max_tokens() > 0 &&
      static_cast<int64_t>(lesson.steps()) * p.batch() * p.seq_len() >= p.max_tokens()) {
    w.Fail({{"pretrain"}, {"first_lesson"}, {"steps"}},
           "the first lesson's " + std::to_string(lesson.steps()) + " steps of " + std::to_string(p.batch()) + " x " +
               std::to_string(p.seq_len()) + " tokens take all of max_tokens " + std::to_string(p.max_tokens()));
  }
  c.first_lesson_steps = lesson.steps();
  c.first_lesson_reading_share = lesson.reading_share();
  const config::GuidedAttentionSpec& g = p.guided_attention();
  if (g.steps() < 0) w.Fail({{"pretrain"}, {"guided_attention"}, {"steps"}}, "steps is 0 (off) or more");
  if (g.steps() > 0) {
    const int64_t layers = c.model.sizes().layers, heads = c.model.sizes().heads;
    if (arch.name() != "llama") {
      w.Fail({{"pretrain"}, {"guided_attention"}},
             "guided attention needs a llama model (this one is " + arch.name() + ")");
    }
    if (g.weight() <= 0) w.Fail({{"pretrain"}, {"guided_attention"}, {"weight"}}, "weight must be positive");
    if (g.lookup_weight() <= 0) {
      w.Fail({{"pretrain"}, {"guided_attention"}, {"lookup_weight"}}, "lookup_weight must be positive");
    }
    if (g.previous_layer() < 0 || g.previous_layer() >= g.induction_layer() || g.induction_layer() >= layers) {
      w.Fail({{"pretrain"}, {"guided_attention"}, {"induction_layer"}},
             "previous_layer (" + std::to_string(g.previous_layer()) + ") must come before induction_layer (" +
                 std::to_string(g.induction_layer()) + "), and both be layers of the model's " +
                 std::to_string(layers));
    }
    if (g.lookup_layer() != -1 && (g.lookup_layer() <= g.induction_layer() || g.lookup_layer() >= layers)) {
      w.Fail({{"pretrain"}, {"guided_attention"}, {"lookup_layer"}},
             "lookup_layer (" + std::to_string(g.lookup_layer()) + ") is -1 (off) or a layer after induction_layer (" +
                 std::to_string(g.induction_layer()) + ") among the model's " + std::to_string(layers));
    }
    // A copy loss leads a reading head's output: 0 (off) or more, and only on a head that is on.
    const auto copy_weight = [&](const char* head, double weight, int layer) {
      const std::string field = std::string(head) + "_copy_weight";
      if (weight < 0 || (weight > 0 && layer == -1)) {
        w.Fail({{"pretrain"}, {"guided_attention"}, {field.c_str()}},
               weight < 0 ? field + " is 0 (off) or more"
                          : field + " leads the " + head + " head's output: " + head + "_layer is -1 (off)");
      }
    };
    copy_weight("lookup", g.lookup_copy_weight(), g.lookup_layer());
    copy_weight("subject", g.subject_copy_weight(), g.subject_layer());
    // The copy losses' options, each on a loss that is on.
    const auto copy_option = [&](const char* field, bool set, double weight, const char* weight_field) {
      if (set && weight <= 0) {
        w.Fail({{"pretrain"}, {"guided_attention"}, {field}},
               std::string(field) + " changes a copy loss that is off: " + weight_field + " is 0");
      }
    };
    copy_option("subject_copy_at_stream_scale", g.subject_copy_at_stream_scale(), g.subject_copy_weight(),
                "subject_copy_weight");
    copy_option("lookup_copy_reaches_stream", g.lookup_copy_reaches_stream(), g.lookup_copy_weight(),
                "lookup_copy_weight");
    if (g.lookup_layer() != -1 && p.reading_share() <= 0) {
      w.Fail({{"pretrain"}, {"guided_attention"}, {"lookup_layer"}},
             "the lookup head is led to reading documents' answers: it needs reading_share above 0");
    }
    if (g.subject_layer() != -1 &&
        (g.lookup_layer() == -1 || g.subject_layer() < 0 || g.subject_layer() >= g.lookup_layer())) {
      w.Fail({{"pretrain"}, {"guided_attention"}, {"subject_layer"}},
             "subject_layer (" + std::to_string(g.subject_layer()) +
                 ") is -1 (off) or a layer before lookup_layer, whose head matches what it binds (lookup_layer " +
                 std::to_string(g.lookup_layer()) + ")");
    }
    // The optional heads each on a layer of the model that no other guided head uses.
    const std::vector<std::pair<std::string, int>> guided = {{"previous_layer", g.previous_layer()},
                                                             {"induction_layer", g.induction_layer()},
                                                             {"lookup_layer", g.lookup_layer()},
                                                             {"line_start_layer", g.line_start_layer()},
                                                             {"subject_layer", g.subject_layer()}};
    for (size_t i = 2; i < guided.size(); ++i) {
      const auto& [field, layer] = guided[i];
      if (layer == -1) continue;
      std::string others;
      bool shared = false;
      for (size_t j = 0; j < guided.size(); ++j) {
        if (j == i || guided[j].second == -1) continue;
        others += (others.empty() ? "" : ", ") + guided[j].first + " " + std::to_string(guided[j].second);
        shared = shared || guided[j].second == layer;
      }
      if (layer < 0 || layer >= layers || shared) {
        w.Fail({{"pretrain"}, {"guided_attention"}, {field.c_str()}},
               field + " (" + std::to_string(layer) + ") is -1 (off) or one of the model's " + std::to_string(layers) +
                   " layers that no other guided head uses (" + others + ")");
      }
    }
    if (g.reading_from_step() != 0 || g.reading_until_step() != 0) {
      const int until = g.reading_until_step() > 0 ? g.reading_until_step() : g.steps();
      if (g.lookup_layer() == -1) {
        w.Fail({{"pretrain"}, {"guided_attention"}, {g.reading_from_step() != 0 ? "reading_from_step" : "reading_until_step"}},
               "the reading heads' steps need a reading head: lookup_layer is -1 (off)");
      }
      if (g.reading_from_step() < 0 || g.reading_until_step() < 0) {
        w.Fail({{"pretrain"}, {"guided_attention"}, {g.reading_from_step() < 0 ? "reading_from_step" : "reading_until_step"}},
               "reading_from_step and reading_until_step are steps: 0 or more");
      }
      if (until <= g.reading_from_step()) {
        w.Fail({{"pretrain"}, {"guided_attention"}, {"reading_until_step"}},
               "the reading heads' guide stops at step " + std::to_string(until) +
                   (g.reading_until_step() > 0 ? "" : " (reading_until_step 0: `steps`)") +
                   ", not after it starts (reading_from_step " + std::to_string(g.reading_from_step()) + ")");
      }
    }
    if (g.head() < 0 || g.head() >= heads) {
      w.Fail({{"pretrain"}, {"guided_attention"}, {"head"}},
             "head " + std::to_string(g.head()) + " is not one of the model's " + std::to_string(heads) + " heads");
    }
  }
  if (g.steps() > 0) {
    // The previous and induction heads for the first `steps` steps; the reading heads for theirs.
    const int from = g.reading_from_step(), until = g.reading_until_step() > 0 ? g.reading_until_step() : g.steps();
    std::vector<GuidedHead>& heads = c.guided_attention.heads;
    heads = {{GuidedHeadKind::kPrevious, g.previous_layer(), g.weight(), 0, g.steps()},
             {GuidedHeadKind::kInduction, g.induction_layer(), g.weight(), 0, g.steps()}};
    if (g.lookup_layer() >= 0) {
      heads.push_back({GuidedHeadKind::kLookup, g.lookup_layer(), g.lookup_weight(), from, until});
      heads.back().copy_weight = g.lookup_copy_weight();
      heads.back().copy_scale_layer = static_cast<int>(c.model.sizes().layers) - 1;  // what it adds to the logits
      heads.back().copy_reaches_stream = g.lookup_copy_reaches_stream();
    }
    if (g.line_start_layer() >= 0)
      heads.push_back({GuidedHeadKind::kLineStart, g.line_start_layer(), g.weight(), from, until});
    if (g.subject_layer() >= 0) {
      heads.push_back({GuidedHeadKind::kSubject, g.subject_layer(), g.weight(), from, until});
      heads.back().copy_weight = g.subject_copy_weight();
      if (g.subject_copy_at_stream_scale()) heads.back().copy_scale_layer = g.subject_layer();  // where it lands
    }
  } else {
    c.guided_attention.heads.clear();
  }
  c.guided_attention.head = g.head();
  c.guided_attention.induction_only_where_right = g.induction_only_where_right();
  c.heldout_every = p.heldout_every();
  c.tokenizer = p.tokenizer();
  c.vocab_size = p.vocab_size();
  c.seq_len = p.seq_len();
  c.batch = p.batch();
  c.epochs = p.epochs();
  c.max_tokens = p.max_tokens();
  c.warmup_steps = p.warmup_steps();
  c.min_lr_ratio = p.min_lr_ratio();
  c.eval_every = p.eval_every();
  c.eval_tokens = p.eval_tokens();
  c.checkpoint_every = p.checkpoint_every();
  c.threads = p.threads();
  c.replicas = p.replicas();
  c.max_minutes = p.max_minutes();
  c.sample_prompts.assign(p.sample_prompt().begin(), p.sample_prompt().end());
  for (int i = 0; i < p.unseen_questions_size(); ++i) {
    if (p.unseen_questions(i).empty()) w.Fail({{"pretrain"}, {"unseen_questions", i}}, "an empty question file name");
    c.unseen_questions.push_back(p.unseen_questions(i));
  }
  if (!c.unseen_questions.empty() && std::find(c.corpora.begin(), c.corpora.end(), "factbook") == c.corpora.end()) {
    w.Fail({{"pretrain"}, {"unseen_questions", 0}},
           "unseen_questions leaves Factbook pages out, but no corpus is 'factbook'");
  }
  return c;
}

}  // namespace troupe
