// Session events from the training loop and the rollout.
#include "workflows/report/session_events.h"

#include <google/protobuf/text_format.h>

#include <chrono>
#include <cmath>
#include <cstdint>

#include "workflows/runtime/worker_hub.h"

namespace troupe {

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string Join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

}  // namespace

SessionEvents::SessionEvents(const CompiledWorkflow& workflow, const std::string& publish,
                             const std::string& record_path, bool append)
    : workflow_(workflow), t0_(Now()) {
  if (!publish.empty()) {
    SocketOptions o;
    o.security.keys_dir = workflow.runtime.keys_dir;
    o.send_hwm = 10000;
    publisher_ = std::make_unique<EventPublisher>(publish, o);
  }
  if (!record_path.empty()) writer_ = std::make_unique<SessionWriter>(record_path, append);
}

SessionEvents::~SessionEvents() {
  if (writer_) writer_->Flush();
}

void SessionEvents::Emit(session::Event& event, bool flush) {
  event.set_sequence(sequence_++);
  event.set_time(Now() - t0_);
  if (publisher_) {
    // A viewer that joins late still needs the run's description to draw anything.
    if (publisher_->TakeNewSubscriber() && run_start_.has_run_start() && !event.has_run_start()) {
      publisher_->Publish(run_start_);
    }
    publisher_->Publish(event);
  }
  if (writer_) writer_->Write(event, flush);
}

void SessionEvents::RunStarted(const std::string& run_id, int start_iteration) {
  if (!enabled()) return;
  session::Event e;
  auto* s = e.mutable_run_start();
  s->set_run_id(run_id);
  s->set_workflow_file(workflow_.file);
  std::string text;
  google::protobuf::TextFormat::PrintToString(workflow_.proto, &text);
  s->set_workflow_text(text);
  if (workflow_.rollout.game) s->set_game(workflow_.rollout.game->Name());
  for (const auto& r : workflow_.rollout.roles) {
    s->add_role(r.name);
    s->add_role_model(r.trained() ? r.model : -1);
  }
  for (const auto& m : workflow_.models) s->add_model(m.name);
  for (size_t i = 0; i < workflow_.rollout.seat_names.size(); ++i) {
    s->add_seat(workflow_.rollout.seat_names[i]);
    s->add_seat_role(workflow_.rollout.seat_role[i]);
  }
  for (const auto& h : workflow_.headline_metrics) s->add_headline_metric(h);
  s->set_iterations(workflow_.run.iterations);
  s->set_start_iteration(start_iteration);
  Emit(e, true);
  run_start_ = e;
  for (auto& w : early_) Emit(w, true);
  early_.clear();
}

void SessionEvents::BeginIteration(int iteration, bool evaluation) {
  iteration_ = iteration;
  evaluation_ = evaluation;
}

void SessionEvents::WorkerChanged(const WorkerNotice& n) {
  if (!enabled()) return;
  session::Event e;
  auto* w = e.mutable_worker();
  w->set_model(n.model);
  w->set_replica(n.replica);
  w->set_endpoint(n.endpoint);
  w->set_kind(n.lost ? session::WorkerEvent::LOST : session::WorkerEvent::JOINED);
  w->set_detail(n.detail);
  if (!run_start_.has_run_start()) {
    early_.push_back(e);  // workers join before the run starts: keep RunStart first
    return;
  }
  Emit(e, true);
}

bool SessionEvents::Detailed(int episode) const { return enabled() && episode < workflow_.runtime.detail_episodes; }

void SessionEvents::EpisodeStarted(int episode, int group, const std::vector<int>& seat_roles) {
  if (!enabled()) return;
  session::Event e;
  auto* s = e.mutable_episode_start();
  s->set_iteration(iteration_);
  s->set_episode(episode);
  s->set_group(group);
  s->set_evaluation(evaluation_);
  if (!workflow_.rollout.seat_draws.empty() || !workflow_.rollout.matchups.empty()) {
    s->mutable_seat_role()->Add(seat_roles.begin(), seat_roles.end());
  }
  const auto playing = snapshots_playing_.find(episode);
  if (playing != snapshots_playing_.end()) {
    for (const std::string& label : playing->second) s->add_seat_snapshot(label);
    snapshots_playing_.erase(playing);
  }
  Emit(e);
}

void SessionEvents::SnapshotsPlaying(int episode, const std::vector<std::string>& seat_snapshot) {
  if (enabled()) snapshots_playing_[episode] = seat_snapshot;
}

void SessionEvents::Acted(int episode, const CallRecord& call, const std::vector<std::string>& words, bool scripted) {
  session::Event a;
  auto* n = a.mutable_node();
  n->set_iteration(iteration_);
  n->set_episode(episode);
  n->set_role(call.role);
  n->set_seat(call.seat);
  n->set_turn(call.turn);
  n->set_phase(call.phase);
  Emit(a);
  session::Event e;
  const RoleInfo& role = workflow_.rollout.roles.at(call.role);
  if (call.latent_steps > 0) {
    // A latent message: its readers see the vectors and (HYBRID) the first words.
    const std::vector<std::string> shown(words.begin(),
                                         words.begin() + std::min<size_t>(words.size(), role.text_words));
    auto* m = NewMessage(&e, episode, call.role, call.seat, call.turn, call.phase,
                         config::ChannelMode_Name(role.message_mode), shown);
    const int width = static_cast<int>(call.latents.size()) / call.latent_steps;
    m->set_wire_bytes(static_cast<int64_t>(m->text().size() + call.latents.size() * sizeof(float)));
    m->set_valid(call.valid);
    SummarizeLatents(call.latents, width, m);
  } else {
    auto* m = NewMessage(&e, episode, call.role, call.seat, call.turn, call.phase, "TEXT", words);
    m->set_step(call.step);
    if (!call.recommended.empty()) {
      m->set_recommended(call.recommended);
      m->set_unheard(Join(call.unheard));
    }
    if (!scripted) m->set_text_tokens(static_cast<int>(call.response.size()));
    if (call.soft_inputs.empty()) {
      m->set_prompt(call.model >= 0 ? workflow_.rollout.Codec(call.role).Show(call.prompt)
                                    : Join(workflow_.rollout.vocab.Decode(call.prompt)));
    }
    m->set_wire_bytes(static_cast<int64_t>(m->text().size()));
    m->set_valid(call.valid);
  }
  Emit(e);
}

void SessionEvents::ToolRan(int episode, const std::string& node, int step, const std::vector<std::string>& inputs,
                            const std::map<std::string, std::vector<std::string>>& outputs, bool ok) {
  // A tool's call: role -1, its inputs as the prompt, its outputs key by key as the text.
  session::Event e;
  std::string text;
  for (const auto& [key, items] : outputs) {
    for (const auto& item : items) text += (text.empty() ? "" : "\n") + key + ": " + item;
  }
  auto* m = NewMessage(&e, episode, -1, 0, 0, node, "TOOL", {text});
  m->set_step(step);
  m->set_prompt(Join(inputs));
  m->set_valid(ok);
  Emit(e);
}

session::Message* SessionEvents::NewMessage(session::Event* e, int episode, int role, int seat, int turn,
                                            const std::string& phase, const std::string& channel,
                                            const std::vector<std::string>& words) const {
  auto* m = e->mutable_message();
  m->set_iteration(iteration_);
  m->set_episode(episode);
  m->set_role(role);
  m->set_seat(seat);
  m->set_turn(turn);
  m->set_phase(phase);
  m->set_channel(channel);
  m->set_text(Join(words));
  m->set_text_tokens(static_cast<int>(words.size()));
  return m;
}

void SessionEvents::StateChanged(int episode, const State& state) {
  session::Event e;
  auto* s = e.mutable_snapshot();
  s->set_iteration(iteration_);
  s->set_episode(episode);
  s->set_turn(state.Turn());
  if (workflow_.rollout.game) s->set_game(workflow_.rollout.game->Name());
  s->set_state(state.Serialize());
  s->set_text(state.ToString());
  Emit(e);
}

void SessionEvents::EpisodeEnded(int episode, const EpisodeSummary& summary) {
  if (!enabled()) return;
  session::Event e;
  auto* s = e.mutable_episode_end();
  s->set_iteration(iteration_);
  s->set_episode(episode);
  for (const auto& [k, v] : summary.metrics) (*s->mutable_metrics())[k] = v;
  if (Detailed(episode) || summary.dropped) s->set_final_state(summary.final_state);
  s->set_dropped(summary.dropped);
  if (summary.dropped) s->set_drop_reason("a model worker serving it was lost");
  Emit(e, summary.dropped);
}

std::vector<session::RoleCredit> CreditByRole(const std::vector<CallRecord>& records, int roles) {
  std::vector<session::RoleCredit> by_role(roles);
  std::vector<double> adv2(roles, 0.0);
  for (const auto& r : records) {
    if (r.role < 0 || r.role >= roles) continue;
    session::RoleCredit& c = by_role[r.role];
    c.set_calls(c.calls() + 1);
    c.set_reward_mean(c.reward_mean() + r.reward);
    c.set_advantage_mean(c.advantage_mean() + r.advantage);
    c.set_invalid_fraction(c.invalid_fraction() + !r.valid);
    adv2[r.role] += r.advantage * r.advantage;
  }
  for (int i = 0; i < roles; ++i) {
    session::RoleCredit& c = by_role[i];
    c.set_role(i);
    if (c.calls() == 0) continue;
    const double n = c.calls(), mean = c.advantage_mean() / n;
    c.set_reward_mean(c.reward_mean() / n);
    c.set_advantage_mean(mean);
    c.set_invalid_fraction(c.invalid_fraction() / n);
    c.set_advantage_std(std::sqrt(std::max(0.0, adv2[i] / n - mean * mean)));
  }
  return by_role;
}

void SessionEvents::Credit(int iteration, const std::vector<CallRecord>& records) {
  if (!enabled()) return;
  for (session::RoleCredit& rc : CreditByRole(records, static_cast<int>(workflow_.rollout.roles.size()))) {
    if (rc.calls() == 0) continue;
    session::Event e;
    rc.set_iteration(iteration);
    *e.mutable_credit() = std::move(rc);
    Emit(e);
  }
}

void SessionEvents::Metrics(int iteration, const std::map<std::string, double>& values, double episodes_per_s,
                            double forward_calls_per_turn) {
  if (!enabled()) return;
  session::Event e;
  auto* m = e.mutable_metrics();
  m->set_iteration(iteration);
  for (const auto& [k, v] : values) (*m->mutable_values())[k] = v;
  Emit(e);
  session::Event t;
  auto* th = t.mutable_throughput();
  th->set_iteration(iteration);
  th->set_episodes_per_s(episodes_per_s);
  th->set_forward_calls_per_turn(forward_calls_per_turn);
  th->set_events_dropped(dropped());
  Emit(t, true);
}

void SessionEvents::SummarizeLatents(const std::vector<float>& latents, int width, session::Message* m) {
  if (width <= 0 || latents.empty()) return;
  auto* l = m->mutable_latent();
  const int k = static_cast<int>(latents.size()) / width;
  l->set_vectors(k);
  l->set_width(width);
  for (int i = 0; i < k; ++i) {
    double norm = 0;
    for (int j = 0; j < width; ++j) norm += latents[i * width + j] * latents[i * width + j];
    l->add_norms(static_cast<float>(std::sqrt(norm)));
    for (int j = 0; j < std::min(width, 16); ++j) l->add_preview(latents[i * width + j]);
  }
}

void SessionEvents::RunEnded(int iterations, double seconds, bool failed, const std::string& reason) {
  if (!enabled() || ended_) return;
  ended_ = true;
  session::Event e;
  auto* r = e.mutable_run_end();
  r->set_iterations(iterations);
  r->set_seconds(seconds);
  r->set_failed(failed);
  r->set_reason(reason);
  Emit(e, true);
}

}  // namespace troupe
