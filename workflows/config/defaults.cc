// The default of every workflow field that has one, and the filler.
#include "workflows/config/defaults.h"

#include <google/protobuf/text_format.h>

#include "comms/proto/fill_unset.h"
#include "core/base/errors.h"
#include "core/models/architecture_spec.h"

namespace troupe {

namespace pb = google::protobuf;

namespace {

// One element stands for each element of a repeated message field.
constexpr char kDefaults[] = R"pb(
  model {
    device: "cpu"
    optimizer { lr: 0.001 weight_decay: 0 grad_clip: 1 }
    lora_rank: 4
    snapshots { keep: 8 }
  }
  role { pool { share: 0.8 seat_share: 1 recency: 0.7 priority_power: 2 } }
  matchup { weight: 1 }
  reward { weight: 1 }
  credit { group_size: 8 gamma: 1 lambda: 1 baseline_decay: 0.9 }
  trainer {
    iterations: 100
    episodes_per_iteration: 32
    epochs: 1
    minibatch: 1024
    clip: 0.2
    entropy_coef: 0
    kl_coef: 0
    value_coef: 0.5
    temperature: 1
    max_minutes: 0
    checkpoint_every: 10
    eval_episodes: 64
    threads: 1
    update_records: 0
    tree_row_positions: 144
    pass_positions: 16384
    sft { steps: 50 }
    hybrid {
      latent_vectors: 6
      text_words: 1
      stage1_steps: 200
      stage2_steps: 400
      batch: 64
      distill_weight: 20
      teacher: "oracle"
      eval_every: 50
    }
  }
  pipeline {
    node {
      max_tokens: 4
      retries: 1
      fail_open: true
      parser { max_items: 3 valid_reward: 0 invalid_reward: -1 }
    }
  }
  pretrain {
    heldout_every: 50
    tokenizer: ""
    vocab_size: 8192
    seq_len: 256
    batch: 16
    epochs: 1
    max_tokens: 0
    warmup_steps: 100
    min_lr_ratio: 0.1
    eval_every: 200
    eval_tokens: 65536
    checkpoint_every: 200
    threads: 2
    replicas: 1
    max_minutes: 0
    reading_share: 0
    induction_share: 0
    renamed_share: 0
    renamed_echo: 0
    repeated_text_share: 0
    answer_weight: 0
    reading_fact_share: 0
    reading_countries: 3
    reading_short_passages: false
    first_lesson { steps: 0 reading_share: 0.9 }
    guided_attention { steps: 0 weight: 1 previous_layer: 0 induction_layer: 1 head: 0 lookup_layer: -1 lookup_weight: 1 induction_only_where_right: false line_start_layer: -1 subject_layer: -1 reading_from_step: 0 reading_until_step: 0 lookup_copy_weight: 0 subject_copy_weight: 0 subject_copy_at_stream_scale: false lookup_copy_reaches_stream: false }
  }
  experiment { seeds: 1 eval_episodes: 200 train: true greedy: false }
  runtime {
    heartbeat_ms: 200
    worker_timeout_ms: 3000
    request_timeout_ms: 600000
    join_timeout_ms: 60000
    detail_episodes: 2
    worker { replicas: 1 }
  }
)pb";

}  // namespace

const config::Workflow& WorkflowDefaults() {
  static const config::Workflow table = [] {
    config::Workflow w;
    if (!pb::TextFormat::ParseFromString(kDefaults, &w)) throw Error("the workflow defaults table does not parse");
    return w;
  }();
  return table;
}

void ApplyDefaults(config::Workflow* w) {
  // Sections every workflow has, shown in full in the resolved workflow.
  w->mutable_credit();
  w->mutable_trainer();
  w->mutable_runtime();
  for (auto& m : *w->mutable_model()) {
    // Each architecture's options default in its own folder; a model that
    // starts from a Hugging Face folder gets its architecture from it (ModelConfigOf).
    if (!m.has_hf_dir() || m.architecture_case() != config::ModelSpec::ARCHITECTURE_NOT_SET) {
      ApplyArchitectureDefaults(&m);
    }
    m.mutable_optimizer();
  }
  FillUnset(WorkflowDefaults(), w);
}

}  // namespace troupe
