// split_facts: rules, observations, the data generator and scripted players.
#include "games/split_facts/split_facts.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <sstream>
#include <utility>

#include "core/base/errors.h"

namespace troupe {

const std::vector<std::string>& SplitFactsGame::EntityNames() {
  static const std::vector<std::string> n = {"ann", "bob", "cal", "dan", "eve", "fay", "gus", "hal"};
  return n;
}

const std::vector<std::string>& SplitFactsGame::ValueNames() {
  static const std::vector<std::string> v = {"red", "blue", "green", "gold", "gray", "pink", "teal", "plum"};
  return v;
}

SplitFactsGame::SplitFactsGame(const Params& p)
    : entities_(static_cast<int>(p.Int("entities"))),
      values_(static_cast<int>(p.Int("values"))),
      asks_(static_cast<int>(p.Int("asks"))),
      message_words_(static_cast<int>(p.Int("message_words"))) {
  if (asks_ > entities_ / 2) {
    throw GameError("split_facts: asks " + std::to_string(asks_) + " exceeds the " + std::to_string(entities_ / 2) +
                    " entities each agent knows");
  }
  if (message_words_ == 0) message_words_ = asks_;
}

std::vector<std::string> SplitFactsGame::Vocabulary() const {
  std::vector<std::string> v = {"you", "a", "b", "know", "asked", "they", "message", "heard", "nothing", "answer"};
  for (int e = 0; e < entities_; ++e) v.push_back(EntityNames()[e]);
  for (int x = 0; x < values_; ++x) v.push_back(ValueNames()[x]);
  return v;
}

SplitFactsEpisode SplitFactsGame::Generate(uint64_t seed) const {
  Rng rng(Rng::Mix(seed, 0x5F));
  SplitFactsEpisode ep;
  for (int e = 0; e < entities_; ++e) ep.value_of.push_back(rng.Below(values_));
  std::vector<int> order(entities_);
  std::iota(order.begin(), order.end(), 0);
  for (int i = entities_ - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
  ep.known.assign(2, {});
  for (int i = 0; i < entities_; ++i) ep.known[i < entities_ / 2 ? 0 : 1].push_back(order[i]);
  for (auto& k : ep.known) std::sort(k.begin(), k.end());
  ep.asked.assign(2, {});
  for (int seat = 0; seat < 2; ++seat) {
    std::vector<int> pool = ep.known[1 - seat];
    for (int i = static_cast<int>(pool.size()) - 1; i > 0; --i) std::swap(pool[i], pool[rng.Below(i + 1)]);
    ep.asked[seat].assign(pool.begin(), pool.begin() + asks_);
  }
  return ep;
}

std::unique_ptr<State> SplitFactsGame::NewInitialState(uint64_t seed) const {
  return std::make_unique<SplitFactsState>(*this, seed);
}

std::unique_ptr<State> SplitFactsGame::Deserialize(const std::string& text) const {
  std::istringstream in(text);
  uint64_t seed = 0;
  in >> seed;
  auto state = std::make_unique<SplitFactsState>(*this, seed);
  std::string line;
  std::getline(in, line);
  std::vector<SeatOutput> step;
  while (std::getline(in, line)) {
    if (line == "--") {
      state->Apply(step);
      step.clear();
      continue;
    }
    std::istringstream words(line);
    SeatOutput out;
    words >> out.seat;
    std::string w;
    while (words >> w) {
      if (w != "=") {
        out.words.push_back(w);
      } else if (!(words >> out.latent_message)) {
        throw GameError("split_facts: bad latent message handle in '" + line + "'");
      }
    }
    step.push_back(out);
  }
  return state;
}

std::vector<Decision> SplitFactsGame::LongestDecisions(int message_words) const {
  // Observations have fixed lengths but for the message heard: the longest
  // text, or a latent message's expansion in the reader's view.
  SplitFactsState state(*this, 0);
  std::vector<Decision> longest = state.PendingDecisions();
  std::vector<SeatOutput> said;
  for (int seat = 0; seat < 2; ++seat)  // the longest words a text view shows
    said.push_back({seat, std::vector<std::string>(message_words_, std::string(kLongestTextWord))});
  state.Apply(said);
  for (Decision d : state.PendingDecisions()) {
    const int extra = message_words - message_words_;  // a latent message's expansion replaces the words
    if (extra > 0) d.observation.insert(d.observation.end() - 1, extra, "nothing");
    longest.push_back(std::move(d));
  }
  return longest;
}

SplitFactsState::SplitFactsState(const SplitFactsGame& game, uint64_t seed)
    : game_(&game), seed_(seed), episode_(game.Generate(seed)) {}

std::vector<std::string> SplitFactsState::Observation(int seat, std::vector<LatentRef>* refs) const {
  const auto& E = SplitFactsGame::EntityNames();
  const auto& V = SplitFactsGame::ValueNames();
  std::vector<std::string> o = {"you", seat == 0 ? "a" : "b", "know"};
  for (int e : episode_.known[seat]) {
    o.push_back(E[e]);
    o.push_back(V[episode_.value_of[e]]);
  }
  o.push_back("asked");
  for (int e : episode_.asked[seat]) o.push_back(E[e]);
  o.push_back("they");  // what the other agent is asked: what it needs to hear
  for (int e : episode_.asked[1 - seat]) o.push_back(E[e]);
  if (phase_ == 0) {
    o.push_back("message");
  } else {
    o.push_back("heard");
    const auto& heard = messages_[1 - seat];
    if (latent_[1 - seat] >= 0) {
      // The runtime puts the latent message (its vectors and words) here.
      if (refs != nullptr) refs->push_back({o.size(), latent_[1 - seat]});
    } else {
      if (heard.empty()) o.push_back("nothing");
      o.insert(o.end(), heard.begin(), heard.end());
    }
    o.push_back("answer");
  }
  return o;
}

std::string SplitFactsState::ObservationText(int seat) const {
  const auto& E = SplitFactsGame::EntityNames();
  const auto& V = SplitFactsGame::ValueNames();
  const std::string other = seat == 0 ? "B" : "A";
  std::ostringstream t;
  t << "You are agent " << (seat == 0 ? "A" : "B") << ". You know:";
  const char* sep = " ";
  for (int e : episode_.known[seat]) {
    t << sep << E[e] << " is " << V[episode_.value_of[e]];
    sep = ", ";
  }
  t << ".\nYou are asked about:";
  sep = " ";
  for (int e : episode_.asked[seat]) t << std::exchange(sep, ", ") << E[e];
  t << ". Agent " << other << " is asked about:";
  sep = " ";
  for (int e : episode_.asked[1 - seat]) t << std::exchange(sep, ", ") << E[e];
  t << ".\n";
  if (phase_ == 0) {
    t << "Write agent " << other << " a message of at most " << game_->message_words() << " words.";
    return t.str();
  }
  const auto& heard = messages_[1 - seat];
  if (latent_[1 - seat] >= 0 || heard.empty()) {
    t << "Agent " << other << " sent no words.\n";
  } else {
    t << "Agent " << other << " says:";
    for (const auto& w : heard) t << ' ' << TextWord(w);
    t << ".\n";
  }
  t << "Answer with the value of";
  sep = " ";
  for (int e : episode_.asked[seat]) t << std::exchange(sep, ", then ") << E[e];
  t << ".";
  return t.str();
}

std::vector<Decision> SplitFactsState::PendingDecisions() const {
  if (phase_ == 2) return {};
  std::vector<Decision> d;
  for (int seat = 0; seat < 2; ++seat) {
    Decision x;
    x.seat = seat;
    x.phase = phase_ == 0 ? "message" : "answer";
    x.message = phase_ == 0;
    x.observation = Observation(seat, &x.latent_messages);
    x.text = ObservationText(seat);
    x.max_words = phase_ == 0 ? game_->message_words() : game_->asks();
    if (phase_ == 1) {
      x.options.assign(SplitFactsGame::ValueNames().begin(), SplitFactsGame::ValueNames().begin() + game_->values());
    }
    d.push_back(std::move(x));
  }
  return d;
}

std::vector<bool> SplitFactsState::Apply(const std::vector<SeatOutput>& outputs) {
  if (phase_ == 2) throw GameError("split_facts: the episode is over");
  if (outputs.size() != 2)
    throw GameError("split_facts: both seats act at once (got " + std::to_string(outputs.size()) + " outputs)");
  std::vector<bool> valid(2, true);
  const auto& V = SplitFactsGame::ValueNames();
  for (size_t k = 0; k < outputs.size(); ++k) {
    const int seat = outputs[k].seat;
    if (seat < 0 || seat > 1) throw GameError("split_facts: no seat " + std::to_string(seat));
    std::vector<std::string> words = outputs[k].words;
    if (phase_ == 0) {
      if (static_cast<int>(words.size()) > game_->message_words()) words.resize(game_->message_words());
      messages_[seat] = words;
      latent_[seat] = outputs[k].latent_message;
      continue;
    }
    answers_[seat] = words;
    int right = 0;
    for (int i = 0; i < game_->asks(); ++i) {
      const bool is_value = i < static_cast<int>(words.size()) &&
                            std::find(V.begin(), V.begin() + game_->values(), words[i]) != V.begin() + game_->values();
      if (!is_value) valid[k] = false;
      right += i < static_cast<int>(words.size()) && words[i] == V[episode_.value_of[episode_.asked[seat][i]]];
    }
    invalid_ += !valid[k];
    correct_[seat] = static_cast<double>(right) / game_->asks();
  }
  ++phase_;
  return valid;
}

double SplitFactsState::Signal(const std::string& name, int seat) const {
  if (name == "correct") return correct_.at(seat);
  if (name == "team_correct") return (correct_[0] + correct_[1]) / 2;
  throw GameError("split_facts: unknown signal '" + name + "' (correct, team_correct)");
}

double SplitFactsState::TurnSignal(const std::string& name, int seat, int) const { return Signal(name, seat); }

std::map<std::string, double> SplitFactsState::Metrics() const {
  double words = 0;
  for (const auto& m : messages_) words += static_cast<double>(m.size());
  return {{"accuracy", (correct_[0] + correct_[1]) / 2},
          {"message_words", words},
          {"invalid_outputs", static_cast<double>(invalid_)}};
}

std::vector<std::string> SplitFactsState::OracleMessage(int seat) const {
  std::vector<std::string> m;
  for (int e : episode_.asked[1 - seat]) m.push_back(SplitFactsGame::ValueNames()[episode_.value_of[e]]);
  if (static_cast<int>(m.size()) > game_->message_words()) m.resize(game_->message_words());
  return m;
}

std::vector<std::string> SplitFactsState::Answer(int seat) const {
  std::vector<std::string> a;
  for (int e : episode_.asked[seat]) a.push_back(SplitFactsGame::ValueNames()[episode_.value_of[e]]);
  return a;
}

std::string SplitFactsState::Serialize() const {
  std::ostringstream out;
  out << seed_ << "\n";
  for (int p = 0; p < phase_; ++p) {
    for (int seat = 0; seat < 2; ++seat) {
      out << seat;
      for (const auto& w : p == 0 ? messages_[seat] : answers_[seat]) out << " " << w;
      if (p == 0 && latent_[seat] >= 0) out << " = " << latent_[seat];  // a latent message's handle
      out << "\n";
    }
    out << "--\n";
  }
  return out.str();
}

std::string SplitFactsState::ToString() const {
  std::ostringstream out;
  const auto& E = SplitFactsGame::EntityNames();
  const auto& V = SplitFactsGame::ValueNames();
  for (int seat = 0; seat < 2; ++seat) {
    out << (seat == 0 ? "a" : "b") << " knows";
    for (int e : episode_.known[seat]) out << " " << E[e] << "=" << V[episode_.value_of[e]];
    out << "; asked";
    for (int e : episode_.asked[seat]) out << " " << E[e];
    out << "; said '";
    for (size_t i = 0; i < messages_[seat].size(); ++i) out << (i ? " " : "") << messages_[seat][i];
    out << "'; answered '";
    for (size_t i = 0; i < answers_[seat].size(); ++i) out << (i ? " " : "") << answers_[seat][i];
    out << "'"
        << (phase_ == 2 ? " (" + std::to_string(static_cast<int>(correct_[seat] * game_->asks())) + "/" +
                              std::to_string(game_->asks()) + " right)"
                        : "")
        << "\n";
  }
  return out.str();
}

namespace {

// Sends exactly what the other seat is asked, and answers from what it heard.
class Oracle : public ScriptedStrategy {
 public:
  std::string GameName() const override { return "split_facts"; }
  std::vector<std::string> Act(const State& state, const Decision& d, Rng& rng) const override {
    const auto& s = dynamic_cast<const SplitFactsState&>(state);
    if (d.phase == "message") return s.OracleMessage(d.seat);
    std::vector<std::string> answer = s.Heard(d.seat);
    answer.resize(d.max_words, "");
    for (auto& w : answer) {
      if (w.empty()) w = d.options[rng.Below(static_cast<int>(d.options.size()))];
    }
    return answer;
  }
};

// Says nothing and guesses: the no-communication baseline.
class Silent : public ScriptedStrategy {
 public:
  std::string GameName() const override { return "split_facts"; }
  bool Deterministic() const override { return false; }
  std::vector<std::string> Act(const State&, const Decision& d, Rng& rng) const override {
    if (d.phase == "message") return {};
    std::vector<std::string> answer;
    for (int i = 0; i < d.max_words; ++i) answer.push_back(d.options[rng.Below(static_cast<int>(d.options.size()))]);
    return answer;
  }
};

std::vector<ParamSpec> Specs() {
  return {{"entities", ParamType::kInt, int64_t{6}, "entities with a hidden value (split evenly)", 2, 8},
          {"values", ParamType::kInt, int64_t{6}, "possible values", 2, 8},
          {"asks", ParamType::kInt, int64_t{2}, "entities each agent is asked about", 1, 4},
          {"message_words", ParamType::kInt, int64_t{0}, "longest text message (0: asks)", 0, 8}};
}

TROUPE_REGISTER_GAME("split_facts", Specs(), SplitFactsGame);
TROUPE_REGISTER_STRATEGY("oracle", Oracle);
TROUPE_REGISTER_STRATEGY("silent", Silent);

}  // namespace

}  // namespace troupe
