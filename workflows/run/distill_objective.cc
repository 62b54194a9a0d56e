// Hybrid message distillation: episodes to the first message tick, the
// teacher's messages, stage 1 and stage 2 examples, steps on the workers.
#include "workflows/run/distill_objective.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "core/base/errors.h"
#include "workflows/run/evaluate.h"
#include "workflows/rollout/rollout.h"
#include "workflows/report/session_events.h"

namespace troupe {

namespace {

// Step figures summed since the last metrics line.
struct Window {
  HybridStepStats sum;
  int steps = 0;
  void Add(const HybridStepStats& st) {
    for (const auto& [k, v] : st) sum[k] += v;
    ++steps;
  }
  std::string Save() const {
    std::ostringstream o;
    o.precision(17);
    o << steps;
    for (const auto& [k, v] : sum) o << ' ' << k << ' ' << v;
    return o.str();
  }
  void Load(const std::string& text) {
    std::istringstream in(text);
    in >> steps;
    std::string key;
    double value = 0;
    while (in >> key >> value) sum[key] = value;
  }
};

// An episode played by the teacher up to its first tick with messages.
struct MessageTick {
  std::unique_ptr<State> state;
  std::vector<Decision> decisions;
  std::vector<std::vector<std::string>> said;  // the teacher's words for every decision of the tick
  std::vector<size_t> latents;                 // per decision: index into the step's generated latents, or npos
};

class DistillationObjective : public TrainingObjective {
 public:
  DistillationObjective(const CompiledWorkflow& w, PolicyService& policy, SessionEvents& events, std::ostream& out)
      : w_(w),
        h_(w.proto.trainer().hybrid()),
        mode_(w.hybrid_mode),
        policy_(policy),
        events_(events),
        rollout_(w.rollout, policy),
        teacher_(StrategyFactory::Get().Create(h_.teacher())),
        rng_(Rng::Mix(w.seed, 9)),
        bot_(w.rollout.vocab.Id("<bot>")),
        eot_(w.rollout.vocab.Id("<eot>")) {
    if (!w.rollout.game || w.rollout.game->MessagePhases().empty()) {
      throw ConfigError(w.file, 0, 0, "trainer.hybrid trains the messages of a game with message phases");
    }
    out << "hybrid messages: channels " << config::ChannelMode_Name(mode_)
        << (mode_ == config::TEXT ? "" : ", K=" + std::to_string(h_.latent_vectors()) + " latent vectors")
        << (mode_ == config::HYBRID ? " + " + std::to_string(h_.text_words()) + " text word(s)" : "")
        << (h_.differentiable() ? ", differentiable" : "") << "; " << h_.stage1_steps() << " + " << h_.stage2_steps()
        << " steps of " << h_.batch() << " episodes\n";
  }

  int iterations() const override { return h_.stage1_steps() + h_.stage2_steps(); }
  int checkpoint_every() const override { return h_.eval_every(); }
  int LinesAfter(int steps) const override { return steps / h_.eval_every(); }
  std::string unit() const override { return "step"; }
  bool greedy_evaluation() const override { return true; }

  IterationReport Iterate(int step) override {
    const int stage = step < h_.stage1_steps() ? 1 : 2;
    // Each stage poses the teacher a new task: the hidden-state loss warms up again.
    const int into_stage = stage == 1 ? step : step - h_.stage1_steps();
    HybridSettings settings;
    settings.latent_vectors = latent_vectors();
    settings.differentiable = h_.differentiable();
    settings.eot = eot_;
    settings.distill_weight =
        h_.distill_weight() * std::min(1.0, static_cast<double>(into_stage) / std::max(1, h_.distill_warmup_steps()));
    const HybridBatch batch = Examples(stage, Rng::Mix(w_.seed, 0x57E9, static_cast<uint64_t>(step)));
    HybridStepStats st;  // all models
    for (const HybridStepStats& m : policy_.HybridStep(batch, settings)) {
      for (const auto& [k, v] : m) st[k] += v;
    }
    window_.Add(st);
    IterationReport r;
    if ((step + 1) % h_.eval_every() != 0 && step + 1 != iterations()) return r;
    events_.BeginIteration(step + 1, true);
    const EvalResult ev = Evaluate(w_, policy_, std::min(w_.run.eval_episodes, 128), w_.seed, true,
                                   w_.trainer.temperature, 0, events_.enabled() ? &events_ : nullptr);
    const double n = window_.steps;
    r.has_line = true;
    r.line.Add("step", step + 1);
    r.line.Add("stage", stage);
    for (const auto& [k, v] : window_.sum) r.line.Add(k, v / n);
    for (const auto& [k, v] : ev.metrics) r.line.Add("eval/" + k, v);
    std::ostringstream p;
    p << "stage " << stage << "  loss " << std::fixed << std::setprecision(3) << window_.sum["loss"] / n;
    for (const std::string& key : w_.headline_metrics) {
      auto f = ev.metrics.find(key);
      if (f != ev.metrics.end()) p << "  " << key << "=" << std::setprecision(key == "wire_bytes" ? 0 : 3) << f->second;
    }
    r.progress = p.str();
    window_ = Window();
    return r;
  }

  void Save(RunState* state) const override {
    (*state)["rng"] = rng_.Save();
    (*state)["window"] = window_.Save();
  }
  void Load(RunState& state) override {
    rng_.Load(state["rng"]);
    window_.Load(state["window"]);
  }

 private:
  int latent_vectors() const { return mode_ == config::TEXT ? 0 : h_.latent_vectors(); }

  // The text a sender writes: all of the teacher's message (TEXT), its first words (HYBRID), none (LATENT).
  std::vector<std::string> TextPart(const std::vector<std::string>& message) const {
    if (mode_ == config::LATENT) return {};
    if (mode_ == config::TEXT) return message;
    return {message.begin(), message.begin() + std::min<size_t>(message.size(), h_.text_words())};
  }

  const RoleInfo& Role(int seat) const { return w_.rollout.roles[w_.rollout.seat_role[seat]]; }

  // A sender's prompt, as the rollout makes it: with <bot> when it sends vectors.
  std::vector<int> SenderPrompt(const Decision& d) const {
    std::vector<int> p = rollout_.Prompt(w_.rollout.seat_role[d.seat], d.observation).tokens;
    if (latent_vectors() > 0) p.push_back(bot_);
    return p;
  }

  // The teacher plays `state` until a tick with messages; false when it ends first.
  bool PlayToMessages(MessageTick* tick) {
    while (!tick->state->IsTerminal()) {
      tick->decisions = tick->state->PendingDecisions();
      tick->said.clear();
      for (const Decision& d : tick->decisions) tick->said.push_back(teacher_->Act(*tick->state, d, rng_));
      if (std::any_of(tick->decisions.begin(), tick->decisions.end(), [](const Decision& d) { return d.message; })) {
        return true;
      }
      std::vector<SeatOutput> outputs;
      for (size_t k = 0; k < tick->decisions.size(); ++k) outputs.push_back({tick->decisions[k].seat, tick->said[k]});
      tick->state->Apply(outputs);
    }
    return false;
  }

  HybridBatch Examples(int stage, uint64_t step_seed) {
    std::vector<MessageTick> ticks;
    for (int e = 0; e < h_.batch(); ++e) {
      MessageTick t;
      t.state = w_.rollout.game->NewInitialState(Rng::Mix(step_seed, static_cast<uint64_t>(e)));
      if (!PlayToMessages(&t)) {
        throw GameError("trainer.hybrid: an episode of " + w_.rollout.game->Name() + " ended before any message");
      }
      ticks.push_back(std::move(t));
    }
    HybridBatch batch;
    if (stage == 1) {
      // Each message distilled into its sender's own latents (text-only channels: learnt as text).
      for (const MessageTick& t : ticks) {
        for (size_t k = 0; k < t.decisions.size(); ++k) {
          const Decision& d = t.decisions[k];
          if (!d.message) continue;
          const RoleInfo& r = Role(d.seat);
          const std::vector<int> message = w_.rollout.vocab.Encode(t.said[k]);
          if (latent_vectors() > 0) batch.self.push_back({r.model, r.slot, SenderPrompt(d), message, message});
          else batch.senders.push_back({r.model, r.slot, SenderPrompt(d), message});
        }
      }
      return batch;
    }
    const std::vector<Generation> latents = SenderLatents(&ticks);
    for (MessageTick& t : ticks) AddStage2(t, latents, &batch);
    return batch;
  }

  // The latents of every message of the step, made by the sender models as in
  // a rollout (greedy; no gradients). Differentiable runs recompute them in the step instead.
  std::vector<Generation> SenderLatents(std::vector<MessageTick>* ticks) {
    std::vector<Generation> out;
    if (latent_vectors() == 0 || h_.differentiable()) return out;
    std::deque<std::vector<int>> prompts;  // stable addresses for the queries
    std::vector<GenerateBatch> batches(w_.models.size());
    std::vector<std::vector<size_t>> where(w_.models.size());  // per model: the flat index of each query
    size_t flat = 0;
    for (MessageTick& t : *ticks) {
      t.latents.assign(t.decisions.size(), SIZE_MAX);
      for (size_t k = 0; k < t.decisions.size(); ++k) {
        if (!t.decisions[k].message) continue;
        const RoleInfo& r = Role(t.decisions[k].seat);
        prompts.push_back(SenderPrompt(t.decisions[k]));
        GenerateQuery q;
        q.role_slot = r.slot;
        q.prompt = &prompts.back();
        q.max_new_tokens = 1;
        q.latent_steps = latent_vectors();
        q.latent_end = eot_;
        batches[r.model].queries.push_back(q);
        where[r.model].push_back(flat);
        t.latents[k] = flat++;
      }
    }
    std::vector<GenerateBatch> asked;
    std::vector<int> models;
    for (size_t m = 0; m < batches.size(); ++m) {
      if (batches[m].queries.empty()) continue;
      batches[m].model = static_cast<int>(m);
      batches[m].greedy = true;
      asked.push_back(std::move(batches[m]));
      models.push_back(static_cast<int>(m));
    }
    const std::vector<std::vector<Generation>> gens = policy_.Generate(asked);
    out.resize(flat);
    for (size_t b = 0; b < asked.size(); ++b) {
      for (size_t i = 0; i < gens[b].size(); ++i) {
        if (gens[b][i].lost) throw CommsError("a model worker was lost during a hybrid distillation step");
        out[where[models[b]][i]] = gens[b][i];
      }
    }
    return out;
  }

  // Stage 2 examples of one episode: its senders, and the readers of the next tick.
  void AddStage2(MessageTick& t, const std::vector<Generation>& latents, HybridBatch* batch) {
    auto student = t.state->Clone(), teacher = t.state->Clone();
    std::vector<LatentMessage> sent;
    std::vector<int> sender_of_handle;
    std::vector<SeatOutput> student_out, teacher_out;
    for (size_t k = 0; k < t.decisions.size(); ++k) {
      const Decision& d = t.decisions[k];
      teacher_out.push_back({d.seat, t.said[k]});
      if (!d.message || latent_vectors() == 0) {
        if (d.message) {  // a text message: its sender learns to write it
          const RoleInfo& r = Role(d.seat);
          batch->senders.push_back({r.model, r.slot, SenderPrompt(d), w_.rollout.vocab.Encode(t.said[k])});
        }
        student_out.push_back({d.seat, t.said[k]});
        continue;
      }
      const RoleInfo& r = Role(d.seat);
      const std::vector<std::string> text = TextPart(t.said[k]);
      LatentMessage m;
      m.role = w_.rollout.seat_role[d.seat];
      m.width = r.latent_width;
      m.text = text;
      if (!latents.empty()) m.latents = latents.at(t.latents[k]).latents;
      else m.latents.assign(static_cast<size_t>(latent_vectors()) * m.width, 0.0f);  // placeholders: read in-graph
      sender_of_handle.push_back(-1);
      if (!text.empty() || h_.differentiable()) {
        sender_of_handle.back() = static_cast<int>(batch->senders.size());
        batch->senders.push_back({r.model, r.slot, SenderPrompt(d), w_.rollout.vocab.Encode(text)});
      }
      SeatOutput out{d.seat, text};
      out.latent_message = static_cast<int>(sent.size());
      sent.push_back(std::move(m));
      student_out.push_back(std::move(out));
    }
    student->Apply(student_out);
    teacher->Apply(teacher_out);
    if (student->IsTerminal()) return;
    const std::vector<Decision> reads = student->PendingDecisions(), teacher_reads = teacher->PendingDecisions();
    if (reads.size() != teacher_reads.size()) {
      throw GameError("trainer.hybrid: " + w_.rollout.game->Name() +
                      " asks different seats after text and latent messages");
    }
    for (size_t k = 0; k < reads.size(); ++k) {
      const Decision& d = reads[k];
      if (d.message) continue;  // readers answer; the next messages are another tick's
      const int role = w_.rollout.seat_role[d.seat];
      const RoleInfo& r = w_.rollout.roles[role];
      ReceiverExample x;
      x.model = r.model;
      x.role_slot = r.slot;
      PromptParts prompt = rollout_.Prompt(role, d.observation, d.latent_messages, &sent);
      x.prompt = std::move(prompt.tokens);
      if (h_.differentiable() && latent_vectors() > 0) {
        for (const LatentRef& ref : d.latent_messages) x.from_senders.push_back(sender_of_handle.at(ref.handle));
      } else {
        x.soft = std::move(prompt.soft);
        x.soft_width = prompt.soft_width;
      }
      x.teacher_prompt = rollout_.Prompt(role, teacher_reads[k].observation).tokens;
      x.answer = w_.rollout.vocab.Encode(teacher_->Act(*teacher, teacher_reads[k], rng_));
      batch->receivers.push_back(std::move(x));
    }
  }

  const CompiledWorkflow& w_;
  const config::HybridSpec& h_;  // resolved
  const config::ChannelMode mode_;
  PolicyService& policy_;
  SessionEvents& events_;
  Rollout rollout_;
  std::unique_ptr<ScriptedStrategy> teacher_;
  Rng rng_;
  Window window_;
  const int bot_, eot_;
};

}  // namespace

std::unique_ptr<TrainingObjective> MakeDistillationObjective(const CompiledWorkflow& workflow, PolicyService& policy,
                                                             SessionEvents& events, std::ostream& out) {
  return std::make_unique<DistillationObjective>(workflow, policy, events, out);
}

}  // namespace troupe
