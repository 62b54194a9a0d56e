// An example game defined outside games/: the signalling game. A speaker sees a
// secret colour and says one word; a listener hears the word and names a
// colour; both score 1 when the listener is right. Registered like any game,
// it is trained from its own workflow file (see README.md beside this file).
#include <cstdint>
#include <sstream>

#include "core/game.h"

namespace signal_game {

using troupe::Decision;
using troupe::Params;
using troupe::ParamSpec;
using troupe::ParamType;
using troupe::SeatOutput;

const std::vector<std::string>& Colours() {
  static const std::vector<std::string> c = {"red", "green", "blue", "yellow", "purple", "orange"};
  return c;
}
const std::vector<std::string>& CodeWords() {
  static const std::vector<std::string> w = {"ka", "lo", "mi", "nu", "pe", "ru"};
  return w;
}

class SignalGame;

class SignalState : public troupe::State {
 public:
  SignalState(int colours, uint64_t seed) : colours_(colours), seed_(seed) {
    troupe::Rng rng(seed);
    secret_ = rng.Below(colours);
  }
  std::vector<Decision> PendingDecisions() const override {
    if (phase_ == 0) return {{0, "speak", {"secret", Colours()[secret_], "speak"}, 1}};
    if (phase_ == 1) return {{1, "guess", {"heard", word_.empty() ? "nothing" : word_, "guess"}, 1}};
    return {};
  }
  std::vector<bool> Apply(const std::vector<SeatOutput>& outputs) override {
    if (outputs.size() != 1) throw troupe::GameError("signal_game: one output per step");
    const auto& words = outputs[0].words;
    std::ostringstream line;
    line << outputs[0].seat << ":";
    for (const auto& w : words) line << " " << w;
    applied_.push_back(line.str());
    if (phase_ == 0) {
      word_ = words.empty() ? "" : words[0];
      phase_ = 1;
      return {!words.empty()};
    }
    bool valid = false;
    for (int c = 0; c < colours_; ++c) {
      if (!words.empty() && words[0] == Colours()[c]) {
        valid = true;
        success_ = c == secret_;
      }
    }
    invalid_ += !valid;
    phase_ = 2;
    return {valid};
  }
  bool IsTerminal() const override { return phase_ == 2; }
  int Turn() const override { return phase_ == 2 ? 1 : 0; }
  double Signal(const std::string& name, int) const override {
    if (name == "success") return success_ ? 1.0 : 0.0;
    throw troupe::GameError("signal_game: unknown signal " + name);
  }
  double TurnSignal(const std::string& name, int seat, int) const override { return Signal(name, seat); }
  std::map<std::string, double> Metrics() const override {
    return {{"success", success_ ? 1.0 : 0.0}, {"invalid_outputs", static_cast<double>(invalid_)}};
  }
  std::unique_ptr<troupe::State> Clone() const override { return std::make_unique<SignalState>(*this); }
  std::string Serialize() const override {
    std::string s = std::to_string(colours_) + " " + std::to_string(seed_) + "\n";
    for (const auto& l : applied_) s += l + "\n";
    return s;
  }
  std::string ToString() const override {
    return "secret " + Colours()[secret_] + ", word " + (word_.empty() ? "-" : word_) + ", " +
           (phase_ < 2 ? "playing"
            : success_ ? "success"
                       : "failure") +
           "\n";
  }

 private:
  int colours_;
  uint64_t seed_;
  int secret_ = 0;
  int phase_ = 0;
  std::string word_;
  bool success_ = false;
  int invalid_ = 0;
  std::vector<std::string> applied_;
};

class SignalGame : public troupe::Game {
 public:
  explicit SignalGame(const Params& p) : colours_(static_cast<int>(p.Int("colours"))) {}
  std::string Name() const override { return "signal_game"; }
  std::vector<std::string> SeatNames() const override { return {"speaker", "listener"}; }
  std::vector<std::string> Vocabulary() const override {
    std::vector<std::string> v = {"secret", "heard", "nothing", "speak", "guess"};
    for (const auto& c : Colours()) v.push_back(c);
    for (const auto& w : CodeWords()) v.push_back(w);
    return v;
  }
  std::vector<std::string> SignalNames() const override { return {"success"}; }
  std::vector<std::string> TurnSignalNames() const override { return {"success"}; }
  std::vector<std::string> HeadlineMetrics(int) const override { return {"success"}; }
  std::unique_ptr<troupe::State> NewInitialState(uint64_t seed) const override {
    return std::make_unique<SignalState>(colours_, seed);
  }
  std::unique_ptr<troupe::State> Deserialize(const std::string& text) const override {
    std::istringstream in(text);
    int colours = 0;
    uint64_t seed = 0;
    in >> colours >> seed;
    auto state = std::make_unique<SignalState>(colours, seed);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      const auto colon = line.find(':');
      SeatOutput out{std::stoi(line.substr(0, colon)), {}};
      std::istringstream words(line.substr(colon + 1));
      std::string w;
      while (words >> w) out.words.push_back(w);
      state->Apply({out});
    }
    return state;
  }

 private:
  int colours_;
};

// A scripted listener: takes the word literally when it is a colour.
class LiteralListener : public troupe::ScriptedStrategy {
 public:
  std::string GameName() const override { return "signal_game"; }
  std::vector<std::string> Act(const troupe::State&, const Decision& d, troupe::Rng& rng) const override {
    const std::string& heard = d.observation.at(1);
    for (const auto& c : Colours()) {
      if (c == heard) return {c};
    }
    return {Colours()[rng.Below(3)]};
  }
};

namespace {
std::vector<ParamSpec> Specs() { return {{"colours", ParamType::kInt, int64_t{3}, "number of colours", 2, 6}}; }
TROUPE_REGISTER_GAME("signal_game", Specs(), SignalGame);
TROUPE_REGISTER_STRATEGY("literal_listener", LiteralListener);
}  // namespace

}  // namespace signal_game
