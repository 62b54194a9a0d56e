// One Red-Black episode: willingness-ordered deliberation, parallel votes,
// majority choice, payoffs with multipliers, metrics and signals.
#include "games/red_black/red_black_state.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "core/base/words.h"

namespace troupe::red_black {

namespace {

std::vector<std::string> NumberWords(int n) {
  std::vector<std::string> w;
  if (n < 0) w.push_back("-");
  for (char c : std::to_string(n < 0 ? -n : n)) w.push_back(std::string(1, c));
  return w;
}

std::string CountWord(int n) { return "#" + std::to_string(n); }

std::string PointsWord(int p) { return (p > 0 ? "+" : "") + std::to_string(p); }

// The choice whose label (in `scenario`) the words start with, in any case: text models' answers are read back
// lower-cased, and a scenario's labels differ in more than case (ParseScenario).
bool ParseChoice(const std::vector<std::string>& words, const Scenario& scenario, Choice* out) {
  if (words.empty()) return false;
  for (Choice c : {Choice::kBlack, Choice::kRed}) {
    if (SameWordAnyCase(words[0], scenario.Label(c))) {
      *out = c;
      return true;
    }
  }
  return false;
}

const Scenario& PickScenario(const RedBlackGame& game, uint64_t seed, int index) {
  const std::vector<Scenario>& all = game.scenarios();
  if (index >= 0) return all.at(index);
  // Its own stream, so that a one-scenario game's episodes stay as they were.
  return all.size() == 1 ? all[0] : all[Rng(Rng::Mix(seed, 0x5CE7A210)).Below(static_cast<int>(all.size()))];
}

}  // namespace

RedBlackState::RedBlackState(const RedBlackGame& game, uint64_t seed, int scenario)
    : game_(&game), scenario_(&PickScenario(game, seed, scenario)), seed_(seed), rng_(seed) {
  invalid_ = {{"will", 0}, {"speak", 0}, {"vote", 0}};
  inert_.assign(2 * game.team_size(), false);
  StartRound();
}

void RedBlackState::StartRound() {
  const int n = game_->team_size();
  for (auto& t : teams_) {
    t.spoken.assign(n, false);
    t.willingness.assign(n, -1);
    t.speaker = -1;
    t.messages.clear();
    t.votes.assign(n, Choice::kBlack);
    t.order.clear();
  }
  cycle_ = 0;
  phase_ = Phase::kWill;
  SkipTrivialWillingness();
}

int RedBlackState::RemainingSpeakers(int team) const {
  const auto& s = teams_[team].spoken;
  return static_cast<int>(std::count(s.begin(), s.end(), false));
}

// With one agent left to speak there is nothing to order: it speaks.
void RedBlackState::SkipTrivialWillingness() {
  if (phase_ != Phase::kWill) return;
  if (RemainingSpeakers(0) > 1) return;
  for (auto& t : teams_) {
    for (int i = 0; i < static_cast<int>(t.spoken.size()); ++i) {
      if (!t.spoken[i]) t.speaker = i;
    }
  }
  phase_ = Phase::kSpeak;
}

RoundView RedBlackState::ViewFor(int team) const {
  RoundView v;
  v.round = round_;
  v.rounds = game_->rounds();
  v.multiplier = round_ < game_->rounds() ? game_->Multiplier(round_) : 1;
  for (const auto& r : history_) {
    v.own.push_back(r.choice[team]);
    v.other.push_back(r.choice[1 - team]);
  }
  return v;
}

// What a seat sees, oldest first and the present last, so the facts of the
// current decision sit next to the phase word the answer follows:
//   history <own> <other> <own points> ... now says <rec> <reasoning> ...
//   us <score> them <score> round #r of #N left #k x #m <phase>
std::vector<std::string> RedBlackState::Observation(int seat, const std::string& phase,
                                                    std::vector<LatentRef>* refs) const {
  const int team = game_->TeamOf(seat);
  std::vector<std::string> o = scenario_->Preamble();  // what the options mean, in a scenario
  o.push_back("history");
  auto append = [&o](const std::vector<std::string>& w) { o.insert(o.end(), w.begin(), w.end()); };
  for (const auto& r : history_) {
    // Both teams' choices and points, own team first (the spec's history).
    o.push_back(scenario_->Label(r.choice[team]));
    o.push_back(scenario_->Label(r.choice[1 - team]));
    o.push_back(PointsWord(r.points[team]));
    o.push_back(PointsWord(r.points[1 - team]));
  }
  o.push_back("now");
  for (const auto& m : HeardMessages(seat)) {
    o.push_back("says");
    if (m.latent >= 0) {
      refs->push_back({o.size(), m.latent});
      continue;
    }
    o.push_back(scenario_->Label(m.recommendation));
    append(m.reasoning);
  }
  o.push_back("us");
  append(NumberWords(score_[team]));
  o.push_back("them");
  append(NumberWords(score_[1 - team]));
  // Round, rounds left and multiplier are single tokens ("#10"), so a model can
  // find them by what they are rather than by counting digits.
  append({"round", CountWord(round_ + 1), "of", CountWord(game_->rounds()), "left",
          CountWord(game_->rounds() - round_ - 1), "x", CountWord(game_->Multiplier(round_))});
  o.push_back(phase);
  return o;
}

std::vector<Message> RedBlackState::HeardMessages(int seat) const {
  std::vector<Message> heard;
  if (game_->silent()) return heard;
  const int n = game_->team_size();
  for (const Message& m : teams_[game_->TeamOf(seat)].messages) {
    if (game_->Hears(seat % n, m.seat % n, round_)) heard.push_back(m);
  }
  return heard;
}

std::optional<PersuasionProbe> RedBlackState::Persuasion(const Decision& d) const {
  if (phase_ != Phase::kVote || d.phase != "vote") return std::nullopt;
  int black = 0, red = 0;
  for (const Message& m : HeardMessages(d.seat)) {
    if (m.seat != d.seat) (m.recommendation == Choice::kBlack ? black : red)++;
  }
  if (black == red) return std::nullopt;
  auto unheard = std::make_unique<RedBlackState>(*this);
  unheard->teams_[game_->TeamOf(d.seat)].messages.clear();
  PersuasionProbe p;
  p.unheard = {d.seat, d.phase, {}, d.max_words, d.options, d.message};
  p.unheard.observation = unheard->Observation(d.seat, d.phase, &p.unheard.latent_messages);
  p.unheard.text = unheard->ObservationText(d.seat, d.phase);
  p.recommended = scenario_->Label(black > red ? Choice::kBlack : Choice::kRed);
  p.unheard_state = std::move(unheard);
  return p;
}

std::vector<Decision> RedBlackState::Longest(const RedBlackGame& game, int message_words) {
  std::vector<Decision> all;
  for (size_t i = 0; i < game.scenarios().size(); ++i) {
    for (Decision& d : LongestIn(game, static_cast<int>(i), message_words)) all.push_back(std::move(d));
  }
  return all;
}

std::vector<Decision> RedBlackState::LongestIn(const RedBlackGame& game, int scenario, int message_words) {
  RedBlackState s(game, 0, scenario);
  const int n = game.team_size();
  int most_points = 0;
  for (int r = 0; r < game.rounds(); ++r) most_points += 6 * game.Multiplier(r);
  s.round_ = game.rounds() - 1;
  s.history_.assign(game.rounds() - 1, RoundRecord{});
  for (size_t r = 0; r < s.history_.size(); ++r) {  // the longest text: the widest figures
    RoundRecord& rec = s.history_[r];
    rec.multiplier = game.Multiplier(static_cast<int>(r));
    rec.choice = {Choice::kBlack, Choice::kBlack};
    rec.points = {-6 * rec.multiplier, -6 * rec.multiplier};
  }
  s.score_ = {-most_points, -most_points};  // the most words: a sign and the most digits
  // A message reads as its recommendation and reasoning, or (latent) as `message_words` expanded tokens.
  Message longest;
  // Reasoning words as text models see them at their longest (ten letters, rare ones: many tokens each).
  longest.reasoning.assign(std::max(game.reason_words(), message_words - 1), std::string(kLongestTextWord));
  std::vector<Decision> d;
  const int speakers = n * (1 + game.discussion_rounds());
  // The last speaker of the round reads every message but its own; voters read them all.
  s.teams_[0].messages.assign(speakers - 1, longest);
  std::vector<LatentRef> none;
  d.push_back({0, "will", s.Observation(0, "will", &none), 1, {"0", "1", "2", "3"}});
  const std::vector<std::string> options = s.scenario_->OrderedLabels();
  d.push_back({0, "speak", s.Observation(0, "speak", &none), 1 + game.reason_words(), options, true});
  for (Decision& x : d) x.text = s.ObservationText(0, x.phase);
  s.teams_[0].messages.assign(speakers, longest);
  d.push_back({0, "vote", s.Observation(0, "vote", &none), 1, options});
  d.back().text = s.ObservationText(0, "vote");
  return d;
}

std::vector<Decision> RedBlackState::PendingDecisions() const { return Pending(true); }

// Apply only needs who acts and in which phase; observations are built on demand.
std::vector<Decision> RedBlackState::Pending(bool with_observations) const {
  std::vector<Decision> d;
  // The decision's observation and the latent messages in it, when asked for.
  auto observe = [&](int seat, const char* phase) {
    return with_observations ? Observation(seat, phase, &d.back().latent_messages) : std::vector<std::string>{};
  };
  auto add = [&](int seat, const char* phase, int max_words, std::vector<std::string> options, bool message) {
    d.push_back({seat, phase, {}, max_words, std::move(options), message});
    d.back().observation = observe(seat, phase);
    if (with_observations) d.back().text = ObservationText(seat, phase);
  };
  const int n = game_->team_size();
  for (int t = 0; t < 2; ++t) {
    const Team& team = teams_[t];
    for (int i = 0; i < n; ++i) {
      const int seat = t * n + i;
      switch (phase_) {
        case Phase::kWill:
          if (!team.spoken[i]) add(seat, "will", 1, {"0", "1", "2", "3"}, false);
          break;
        case Phase::kSpeak:
          if (i == team.speaker) {
            add(seat, "speak", 1 + game_->reason_words(), scenario_->OrderedLabels(), true);
          }
          break;
        case Phase::kVote: add(seat, "vote", 1, scenario_->OrderedLabels(), false); break;
        case Phase::kDone: break;
      }
    }
  }
  return d;
}

std::vector<bool> RedBlackState::Apply(const std::vector<SeatOutput>& outputs) {
  const std::vector<Decision> pending = Pending(false);
  if (pending.empty()) throw GameError("red_black: Apply on a finished game");
  if (outputs.size() != pending.size()) {
    throw GameError("red_black: expected " + std::to_string(pending.size()) + " outputs, got " +
                    std::to_string(outputs.size()));
  }
  // Record the action line first (Serialize replays it).
  std::string line;
  for (const auto& out : outputs) {
    if (!line.empty()) line += "|";
    line += std::to_string(out.seat) + ":";
    for (size_t i = 0; i < out.words.size(); ++i) line += (i ? " " : "") + out.words[i];
    if (out.latent_message >= 0) line += " = " + std::to_string(out.latent_message);  // a latent message
  }

  const int n = game_->team_size();
  inert_.assign(2 * n, false);
  std::vector<bool> valid(outputs.size(), false);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const SeatOutput& out = outputs[k];
    auto it = std::find_if(pending.begin(), pending.end(), [&](const Decision& d) { return d.seat == out.seat; });
    if (it == pending.end()) throw GameError("red_black: seat " + std::to_string(out.seat) + " is not to act now");
    Team& team = teams_[game_->TeamOf(out.seat)];
    const int i = out.seat % n;
    ++decisions_;
    if (phase_ == Phase::kWill) {
      int w = 0;
      if (!out.words.empty() && out.words[0].size() == 1 && out.words[0][0] >= '0' && out.words[0][0] <= '3') {
        w = out.words[0][0] - '0';
        valid[k] = true;
      }
      team.willingness[i] = w;
    } else if (phase_ == Phase::kSpeak) {
      Message m;
      m.seat = out.seat;
      valid[k] = ParseChoice(out.words, *scenario_, &m.recommendation);
      if (!valid[k]) m.recommendation = game_->invalid_choice();
      for (size_t w = 1; w < out.words.size() && static_cast<int>(m.reasoning.size()) < game_->reason_words(); ++w) {
        m.reasoning.push_back(out.words[w]);
      }
      m.latent = out.latent_message;
      team.messages.push_back(m);
      team.spoken[i] = true;
      team.order.push_back(out.seat);
    } else if (phase_ == Phase::kVote) {
      Choice c = game_->invalid_choice();
      valid[k] = ParseChoice(out.words, *scenario_, &c);
      team.votes[i] = valid[k] ? c : game_->invalid_choice();
    }
    if (!valid[k]) ++invalid_[it->phase];
  }
  applied_.push_back(line);

  if (phase_ == Phase::kWill) {
    ChooseSpeakers();
  } else if (phase_ == Phase::kSpeak) {
    if (RemainingSpeakers(0) == 0) {
      ++cycle_;
      if (cycle_ <= game_->discussion_rounds()) {
        for (auto& t : teams_) t.spoken.assign(n, false);
        phase_ = Phase::kWill;
      } else {
        phase_ = Phase::kVote;
      }
    } else {
      phase_ = Phase::kWill;
    }
    SkipTrivialWillingness();
  } else if (phase_ == Phase::kVote) {
    ResolveRound();
  }
  return valid;
}

void RedBlackState::ChooseSpeakers() {
  for (auto& t : teams_) {
    int best = -1;
    std::vector<int> tied;
    for (int i = 0; i < static_cast<int>(t.spoken.size()); ++i) {
      if (t.spoken[i]) continue;
      if (t.willingness[i] > best) {
        best = t.willingness[i];
        tied.clear();
      }
      if (t.willingness[i] == best) tied.push_back(i);
    }
    t.speaker = tied[tied.size() == 1 ? 0 : rng_.Below(static_cast<int>(tied.size()))];
  }
  phase_ = Phase::kSpeak;
}

Choice RedBlackState::Majority(int red, int black) const {
  return red > black ? Choice::kRed : black > red ? Choice::kBlack : game_->invalid_choice();
}

void RedBlackState::ResolveRound() {
  RoundRecord rec;
  rec.multiplier = game_->Multiplier(round_);
  const int n = game_->team_size();
  for (int t = 0; t < 2; ++t) {
    int red = 0;
    for (Choice v : teams_[t].votes) red += v == Choice::kRed;
    int black = n - red;
    rec.choice[t] = Majority(red, black);
    // A vote is inert when flipping it would not change the team's choice.
    for (int i = 0; i < n; ++i) {
      const bool was_red = teams_[t].votes[i] == Choice::kRed;
      const Choice flipped = was_red ? Majority(red - 1, black + 1) : Majority(red + 1, black - 1);
      inert_[t * n + i] = flipped == rec.choice[t];
    }
    rec.messages[t] = teams_[t].messages;
    rec.votes[t] = teams_[t].votes;
    rec.speaking_order[t] = teams_[t].order;
  }
  for (int t = 0; t < 2; ++t) {
    rec.points[t] = BasePayoff(rec.choice[t], rec.choice[1 - t]) * rec.multiplier;
    score_[t] += rec.points[t];
  }
  history_.push_back(std::move(rec));
  ++round_;
  if (round_ >= game_->rounds()) {
    phase_ = Phase::kDone;
  } else {
    StartRound();
  }
}

double RedBlackState::Signal(const std::string& name, int seat) const {
  const int team = game_->TeamOf(seat);
  if (name == "team_score") return score_[team];
  if (name == "opponent_score") return score_[1 - team];
  if (name == "combined_score") return score_[0] + score_[1];
  if (name == "team_cooperation") {
    int black = 0;
    for (const auto& r : history_) black += r.choice[team] == Choice::kBlack;
    return history_.empty() ? 0.0 : static_cast<double>(black) / history_.size();
  }
  throw GameError("red_black: unknown signal '" + name + "'");
}

double RedBlackState::TurnSignal(const std::string& name, int seat, int turn) const {
  if (turn < 0 || turn >= static_cast<int>(history_.size())) return 0.0;
  const auto& r = history_[turn];
  const int team = game_->TeamOf(seat);
  if (name == "round_payoff") return r.points[team];
  if (name == "round_combined") return r.points[0] + r.points[1];
  throw GameError("red_black: unknown turn signal '" + name + "'");
}

std::map<std::string, double> RedBlackState::Metrics() const {
  std::map<std::string, double> m;
  const double rounds = std::max<size_t>(1, history_.size());
  int black_a = 0, black_b = 0;
  for (const auto& r : history_) {
    black_a += r.choice[0] == Choice::kBlack;
    black_b += r.choice[1] == Choice::kBlack;
  }
  const int best = game_->BestCombined();
  m["team_a_score"] = score_[0];
  m["team_b_score"] = score_[1];
  m["combined_score"] = score_[0] + score_[1];
  m["efficiency"] = (score_[0] + score_[1] + best) / (2.0 * best);
  m["team_a_cooperation"] = black_a / rounds;
  m["team_b_cooperation"] = black_b / rounds;
  m["game_cooperation"] = (black_a + black_b) / (2.0 * rounds);
  // End-game defection, the classic exploit against reciprocating strategies.
  m["team_a_red_last_round"] = IsTerminal() && history_.back().choice[0] == Choice::kRed ? 1.0 : 0.0;
  int invalid = 0;
  for (const auto& [phase, count] : invalid_) {
    m["invalid_" + phase] = count;
    invalid += count;
  }
  m["invalid_outputs"] = invalid;
  m["decisions"] = decisions_;
  return m;
}

std::string RedBlackState::Serialize() const {
  std::string s = std::to_string(seed_) + "\n";
  for (const auto& line : applied_) s += line + "\n";
  return s;
}

std::string RedBlackState::ToString() const {
  std::ostringstream out;
  out << "round  mult  A      B      A pts  B pts\n";
  int a = 0, b = 0;
  for (size_t r = 0; r < history_.size(); ++r) {
    const auto& rec = history_[r];
    a += rec.points[0];
    b += rec.points[1];
    // Each label in a column of at least 7 ("red    ", "black  ").
    auto column = [&](Choice c) {
      const std::string& label = scenario_->Label(c);
      return label + std::string(label.size() < 5 ? 7 - label.size() : 2, ' ');
    };
    out << (r + 1 < 10 ? " " : "") << r + 1 << "     x" << rec.multiplier << (rec.multiplier < 10 ? "    " : "   ")
        << column(rec.choice[0]) << column(rec.choice[1]) << rec.points[0] << "\t" << rec.points[1] << "\n";
  }
  out << "score  A " << a << "  B " << b << (IsTerminal() ? "  (final)" : "") << "\n";
  // Which label is which in this scenario (viewers colour the defecting one).
  out << "scenario " << scenario_->name << ": cooperate " << scenario_->Label(Choice::kBlack) << ", defect "
      << scenario_->Label(Choice::kRed) << "\n";
  return out.str();
}

}  // namespace troupe::red_black
