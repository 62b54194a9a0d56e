// The hybrid message training loop: episodes from the game, the teacher's text
// messages, stage 1 and stage 2 steps, and evaluations with accounting.
#include "workflows/run/hybrid_run.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "core/base/errors.h"
#include "core/models/checkpoint.h"
#include "core/models/hybrid_comm.h"
#include "core/vocab.h"
#include "workflows/run/metrics_log.h"
#include "workflows/run/metrics_sink.h"
#include "workflows/run/run_folder.h"
#include "workflows/run/session_events.h"

namespace troupe {

namespace fs = std::filesystem;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class HybridLoop {
 public:
  HybridLoop(const CompiledWorkflow& w, ModelPool& pool)
      : w_(w),
        h_(w.proto.trainer().hybrid()),
        mode_(w.hybrid_mode),
        teacher_(StrategyFactory::Get().Create(h_.teacher())) {
    HybridSettings s;
    s.latent_vectors = mode_ == config::TEXT ? 0 : h_.latent_vectors();
    s.differentiable = h_.differentiable();
    s.distill_weight = h_.distill_weight();
    s.bot = w.vocab.Id("<bot>");
    s.eot = w.vocab.Id("<eot>");
    if (s.bot == Vocab::kUnk || s.eot == Vocab::kUnk) {
      throw ConfigError(w.file, 0, 0, "game '" + w.game->Name() + "' has no <bot>/<eot> words for hybrid messages");
    }
    trainer_ = std::make_unique<HybridCommTrainer>(pool, s);
  }

  HybridCommTrainer& trainer() { return *trainer_; }

  // The text a sender writes: all of the teacher's message (TEXT), its first words (HYBRID), none (LATENT).
  std::vector<std::string> TextPart(const std::vector<std::string>& message) const {
    if (mode_ == config::LATENT) return {};
    if (mode_ == config::TEXT) return message;
    return std::vector<std::string>(message.begin(),
                                    message.begin() + std::min<size_t>(message.size(), h_.text_words()));
  }

  int TextBudget(const Decision& d) const {
    if (mode_ == config::LATENT) return 0;
    if (mode_ == config::TEXT) return d.max_words;
    return std::min(h_.text_words(), d.max_words);
  }

  std::vector<int> Prompt(int seat, const std::vector<std::string>& observation) const {
    const int role = w_.seat_role[seat];
    std::vector<int> p = {Vocab::kBos, w_.vocab.RoleToken(role)};
    for (const auto& word : observation) p.push_back(w_.vocab.Id(word));
    p.push_back(w_.vocab.Id("<bot>"));
    return p;
  }

  const RoleInfo& Role(int seat) const { return w_.roles[w_.seat_role[seat]]; }

  static void Require(const std::vector<Decision>& d, const std::string& phase) {
    if (d.size() != 2)
      throw GameError("hybrid messages need two seats acting at once; the game has " + std::to_string(d.size()));
    for (const auto& x : d) {
      if (x.phase != phase)
        throw GameError("hybrid messages need a '" + phase + "' phase; the game asked for '" + x.phase + "'");
    }
  }

  HybridStepStats Step(int stage, uint64_t step_seed, Rng& rng) {
    std::vector<SelfDistillExample> self;
    std::vector<CoTrainExample> co;
    for (int e = 0; e < h_.batch(); ++e) {
      auto state = w_.game->NewInitialState(Rng::Mix(step_seed, static_cast<uint64_t>(e)));
      const std::vector<Decision> msg = state->PendingDecisions();
      Require(msg, "message");
      std::vector<std::vector<std::string>> full(2);
      for (int k = 0; k < 2; ++k) full[k] = teacher_->Act(*state, msg[k], rng);
      if (stage == 1) {
        for (int k = 0; k < 2; ++k) {
          const RoleInfo& r = Role(msg[k].seat);
          self.push_back({r.model, r.slot, Prompt(msg[k].seat, msg[k].observation), w_.vocab.Encode(full[k]),
                          w_.vocab.Encode(full[k])});
        }
        continue;
      }
      auto student = state->Clone(), teacher = state->Clone();
      student->Apply({{msg[0].seat, TextPart(full[0])}, {msg[1].seat, TextPart(full[1])}});
      teacher->Apply({{msg[0].seat, full[0]}, {msg[1].seat, full[1]}});
      const std::vector<Decision> ans = student->PendingDecisions(), tans = teacher->PendingDecisions();
      Require(ans, "answer");
      for (int k = 0; k < 2; ++k) {
        const int other = 1 - k;
        CoTrainExample x;
        const RoleInfo &s = Role(msg[other].seat), &r = Role(ans[k].seat);
        x.sender_model = s.model;
        x.sender_slot = s.slot;
        x.sender_prompt = Prompt(msg[other].seat, msg[other].observation);
        x.sender_text = w_.vocab.Encode(TextPart(full[other]));
        x.receiver_model = r.model;
        x.receiver_slot = r.slot;
        x.receiver_prompt = Prompt(ans[k].seat, ans[k].observation);
        x.teacher_prompt = Prompt(tans[k].seat, tans[k].observation);
        x.answer = w_.vocab.Encode(teacher_->Act(*teacher, tans[k], rng));
        co.push_back(std::move(x));
      }
    }
    return stage == 1 ? trainer_->SelfDistill(self) : trainer_->CoTrain(co);
  }

  HybridEval Evaluate(int episodes, uint64_t seed, std::vector<std::string>* shown, SessionEvents* events = nullptr) {
    std::map<std::string, double> sum;
    Rng rng(seed);
    const int64_t d_bytes = 4;  // float32 per latent value on the wire
    for (int e = 0; e < episodes; ++e) {
      auto state = w_.game->NewInitialState(Rng::Mix(seed, static_cast<uint64_t>(e)));
      const std::vector<Decision> msg = state->PendingDecisions();
      Require(msg, "message");
      std::vector<SendQuery> sends;
      for (const auto& d : msg) {
        const RoleInfo& r = Role(d.seat);
        sends.push_back({r.model, r.slot, Prompt(d.seat, d.observation), TextBudget(d), {}});
      }
      std::vector<SentMessage> sent = trainer_->Send(sends);
      std::vector<SeatOutput> said;
      double text_tokens = 0, bytes = 0, latents = 0;
      const bool detailed = events != nullptr && events->Detailed(e);
      if (events != nullptr) events->EpisodeStarted(e, e);
      for (int k = 0; k < 2; ++k) {
        std::vector<std::string> words = w_.vocab.Decode(sent[k].text);
        int64_t message_bytes = static_cast<int64_t>(sent[k].latents.size()) * d_bytes;
        for (size_t i = 0; i < words.size(); ++i) message_bytes += static_cast<int64_t>(words[i].size() + (i > 0));
        text_tokens += static_cast<double>(words.size());
        latents += sent[k].width > 0 ? static_cast<double>(sent[k].latents.size()) / sent[k].width : 0;
        bytes += static_cast<double>(message_bytes);
        if (detailed) {
          events->HybridMessage(e, msg[k].seat, config::ChannelMode_Name(mode_), words, sent[k].latents, sent[k].width,
                                message_bytes);
        }
        said.push_back({msg[k].seat, words});
      }
      state->Apply(said);
      const std::vector<Decision> ans = state->PendingDecisions();
      Require(ans, "answer");
      std::vector<AnswerQuery> asks;
      for (int k = 0; k < 2; ++k) {
        const RoleInfo& r = Role(ans[k].seat);
        AnswerQuery q;
        q.model = r.model;
        q.role_slot = r.slot;
        q.prompt = Prompt(ans[k].seat, ans[k].observation);
        q.heard = &sent[1 - k];
        q.answer_tokens = ans[k].max_words;
        q.options = w_.vocab.Encode(ans[k].options);
        asks.push_back(std::move(q));
      }
      std::vector<std::vector<int>> answers = trainer_->Answer(asks);
      state->Apply({{ans[0].seat, w_.vocab.Decode(answers[0])}, {ans[1].seat, w_.vocab.Decode(answers[1])}});
      if (events != nullptr) {
        EpisodeSummary summary;
        summary.metrics = state->Metrics();
        summary.metrics["text_tokens"] = text_tokens;
        summary.metrics["latent_vectors"] = latents;
        summary.metrics["wire_bytes"] = bytes;
        summary.final_state = state->ToString();
        if (detailed) events->StateChanged(e, *state);
        events->EpisodeEnded(e, summary);
      }
      for (const auto& [k, v] : state->Metrics()) sum[k] += v;
      sum["text_tokens"] += text_tokens;
      sum["latent_vectors"] += latents;
      sum["wire_bytes"] += bytes;
      if (shown != nullptr && static_cast<int>(shown->size()) < 3) shown->push_back(state->ToString());
    }
    HybridEval r;
    for (auto& [k, v] : sum) r.metrics[k] = v / std::max(1, episodes);
    return r;
  }

 private:
  const CompiledWorkflow& w_;
  const config::HybridSpec& h_;  // resolved
  const config::ChannelMode mode_;
  std::unique_ptr<ScriptedStrategy> teacher_;
  std::unique_ptr<HybridCommTrainer> trainer_;
};

}  // namespace

std::string HybridTable(const HybridResult& r) {
  std::ostringstream out;
  out << std::left << std::setw(22) << "per episode" << std::right << std::setw(12) << "untrained" << std::setw(12)
      << "trained"
      << "\n";
  for (const char* key : {"accuracy", "text_tokens", "latent_vectors", "wire_bytes", "invalid_outputs"}) {
    auto b = r.before.metrics.find(key), a = r.after.metrics.find(key);
    if (a == r.after.metrics.end()) continue;
    out << std::left << std::setw(22) << key << std::right << std::fixed << std::setprecision(3) << std::setw(12)
        << (b == r.before.metrics.end() ? 0.0 : b->second) << std::setw(12) << a->second << "\n";
  }
  return out.str();
}

namespace {

// Step statistics summed since the last evaluation line.
struct Window {
  HybridStepStats sum;
  int steps = 0;
  void Add(const HybridStepStats& st) {
    sum.loss += st.loss;
    sum.answer_ce += st.answer_ce;
    sum.teacher_ce += st.teacher_ce;
    sum.distill += st.distill;
    sum.text_ce += st.text_ce;
    ++steps;
  }
  std::string Save() const {
    std::ostringstream o;
    o.precision(17);
    o << steps << ' ' << sum.loss << ' ' << sum.answer_ce << ' ' << sum.teacher_ce << ' ' << sum.distill << ' '
      << sum.text_ce;
    return o.str();
  }
  void Load(const std::string& text) {
    std::istringstream in(text);
    in >> steps >> sum.loss >> sum.answer_ce >> sum.teacher_ce >> sum.distill >> sum.text_ce;
  }
};

std::string Number17(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

HybridEval EvalFromFile(const fs::path& path) {
  HybridEval e;
  e.metrics = ReadJsonNumbers(path.string());
  return e;
}

}  // namespace

HybridResult HybridTrain(const CompiledWorkflow& w, const TrainOptions& options, std::ostream& out) {
  SetTorchThreads(w.run.threads);
  const fs::path dir(options.out_dir);
  PrepareRunFolder(dir.string(), w, options.resume);

  ModelPool pool(w.models, w.seed);
  HybridLoop loop(w, pool);
  const config::HybridSpec& h = w.proto.trainer().hybrid();  // resolved
  const int total = h.stage1_steps() + h.stage2_steps();
  const uint64_t eval_seed = Rng::Mix(w.seed, 0xE7A1);
  Rng rng(Rng::Mix(w.seed, 9));
  Window window;
  HybridResult result;
  int start = 0;
  double elapsed_before = 0.0;
  if (options.resume) {
    std::string ckpt;
    RunState state = ResumeRun(
        dir.string(), w,
        [&](const std::string& d) {
          pool.Load(d);
          loop.trainer().Load(d);
        },
        &ckpt);
    start = std::stoi(state["iteration"]);
    rng.Load(state["rng"]);
    window.Load(state["window"]);
    elapsed_before = std::atof(state["elapsed_s"].c_str());
    result.before = EvalFromFile(dir / "eval_untrained.json");
    out << "resuming " << ckpt << " at step " << start << "\n";
  }
  // Evaluation lines already written: one per eval_every steps before `start`.
  SessionEvents events(w, options.publish.empty() ? w.runtime.publish : options.publish, options.record,
                       options.resume);
  MetricsSink metrics(dir.string(), events, options.resume, start / h.eval_every());
  events.RunStarted(dir.filename().string(), start);
  const config::ChannelMode mode = w.hybrid_mode;
  out << "hybrid messages: channels " << config::ChannelMode_Name(mode)
      << (mode == config::TEXT ? "" : ", K=" + std::to_string(h.latent_vectors()) + " latent vectors")
      << (mode == config::HYBRID ? " + " + std::to_string(h.text_words()) + " text word(s)" : "")
      << (h.differentiable() ? ", differentiable" : "") << "; " << h.stage1_steps() << " + " << h.stage2_steps()
      << " steps of " << h.batch() << " episodes; " << loop.trainer().ParameterCount() << " parameters\n";
  if (!options.resume) {
    result.before = loop.Evaluate(w.run.eval_episodes, eval_seed, nullptr);
    JsonLine before;
    for (const auto& [k, v] : result.before.metrics) before.Add(k, v);
    std::ofstream(dir / "eval_untrained.json") << before.Str() << "\n";
  }
  const double t0 = Now();
  auto elapsed = [&] { return elapsed_before + Now() - t0; };
  auto save = [&](int step) {
    RunState state;
    state["rng"] = rng.Save();
    state["window"] = window.Save();
    state["vocab"] = w.vocab.Fingerprint();
    state["elapsed_s"] = Number17(elapsed());
    SaveCheckpoint(dir.string(), step, state, [&](const std::string& d) {
      pool.Save(d);
      loop.trainer().Save(d);
    });
  };
  int step = start;
  bool interrupted = false;
  for (; step < total; ++step) {
    if ((options.stop != nullptr && *options.stop) || (options.stop_at > 0 && step >= options.stop_at)) {
      out << "interrupted: saving a checkpoint at step " << step << " (continue with --resume)\n";
      interrupted = true;
      break;
    }
    const int stage = step < h.stage1_steps() ? 1 : 2;
    // Each stage poses the teacher a new task: the hidden-state loss warms up again.
    const int into_stage = stage == 1 ? step : step - h.stage1_steps();
    loop.trainer().SetDistillWeight(
        h.distill_weight() * std::min(1.0, static_cast<double>(into_stage) / std::max(1, h.distill_warmup_steps())));
    window.Add(loop.Step(stage, Rng::Mix(w.seed, 0x57E9, static_cast<uint64_t>(step)), rng));
    if ((step + 1) % h.eval_every() != 0 && step + 1 != total) continue;
    events.BeginIteration(step + 1, true);
    HybridEval ev = loop.Evaluate(std::min(w.run.eval_episodes, 128), eval_seed, nullptr, &events);
    const double n = window.steps;
    JsonLine line;
    line.Add("step", step + 1);
    line.Add("stage", stage);
    line.Add("loss", window.sum.loss / n);
    line.Add("answer_ce", window.sum.answer_ce / n);
    line.Add("teacher_ce", window.sum.teacher_ce / n);
    line.Add("distill", window.sum.distill / n);
    line.Add("text_ce", window.sum.text_ce / n);
    for (const auto& [k, v] : ev.metrics) line.Add("eval/" + k, v);
    line.Add("time/elapsed_s", elapsed());
    metrics.Write(step + 1, line, 0, 0);
    if (options.progress) {
      out << "[step " << step + 1 << "/" << total << " stage " << stage << "] loss " << std::fixed
          << std::setprecision(3) << window.sum.loss / n << "  accuracy " << ev.metrics["accuracy"] << "  text tokens "
          << ev.metrics["text_tokens"] << "  bytes " << std::setprecision(0) << ev.metrics["wire_bytes"] << "\n"
          << std::flush;
    }
    window = Window();
    save(step + 1);
  }
  if (interrupted && step > start) save(step);
  result.steps = step;
  result.seconds = elapsed();
  if (!interrupted) {
    std::vector<std::string> shown;
    result.after = loop.Evaluate(w.run.eval_episodes, eval_seed, &shown);
    JsonLine after;
    for (const auto& [k, v] : result.after.metrics) after.Add(k, v);
    std::ofstream(dir / "eval_trained.json") << after.Str() << "\n";
    for (const auto& s : shown) out << s;
  }
  events.RunEnded(step, result.seconds, interrupted, interrupted ? "interrupted" : "");
  return result;
}

}  // namespace troupe
