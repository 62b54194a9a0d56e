// The game abstraction (OpenSpiel-style, extended for text): an immutable Game
// made by name from a registry, and cloneable States that say which seats act
// now, what each sees (as words), and apply what the seats said.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/registry.h"
#include "core/params.h"
#include "core/rng.h"

namespace troupe {

// Where a latent message stands in an observation: the runtime splices the
// message's vectors (and text) in before observation[position].
struct LatentRef {
  size_t position = 0;
  int handle = -1;  // SeatOutput::latent_message of the output that sent it
  bool operator==(const LatentRef& o) const { return position == o.position && handle == o.handle; }
};

// Text views (Decision::text) show a word a model said up to this many letters,
// so that the longest prompt a game can give is known before anything runs:
// its longest decisions use kLongestTextWord (rare letters: many tokens).
inline constexpr size_t kTextWordLetters = 10;
inline constexpr std::string_view kLongestTextWord = "qzxjvkqzxj";
inline std::string TextWord(const std::string& word) { return word.substr(0, kTextWordLetters); }

// One seat must act now. Several decisions pending at once are simultaneous.
struct Decision {
  int seat = 0;
  std::string phase;                       // e.g. "will", "speak", "vote"
  std::vector<std::string> observation;    // the words the seat sees, ending with the phase word
  int max_words = 1;                       // longest answer the game reads
  std::vector<std::string> options;        // the words the answer must start with (empty: free text)
  bool message = false;                    // the answer is a message other seats will read (one of MessagePhases)
  std::vector<LatentRef> latent_messages;  // latent messages the seat reads, where they stand in `observation`
  // The same observation as natural-language text, for models that read text
  // through a tokenizer (Game::RendersText); empty when the game renders none.
  // The answer is read back as words: lower-cased, split at spaces and punctuation.
  std::string text;
};

// What one seat said in answer to its Decision.
struct SeatOutput {
  int seat = 0;
  std::vector<std::string> words;
  // Messages only: >= 0 marks a latent message, the runtime's handle of it.
  // Readers then see a LatentRef to it in place of its words (the runtime
  // expands it into their view: vectors, text). The game still rules on `words`.
  int latent_message = -1;
};

class State;

// A persuasion probe of one decision (State::Persuasion): the decision as the
// seat would face it had it heard no other seat's messages, in a state where
// it heard none (a scripted seat reads its state), and the answer those
// messages recommended (a word of the decision's options).
struct PersuasionProbe {
  std::unique_ptr<State> unheard_state;
  Decision unheard;
  std::string recommended;
};

class State {
 public:
  virtual ~State() = default;
  virtual std::vector<Decision> PendingDecisions() const = 0;
  // Applies one output for every pending decision; returns, per output, whether
  // the game could parse it (an unparseable output is handled per the game's rule).
  virtual std::vector<bool> Apply(const std::vector<SeatOutput>& outputs) = 0;
  // After Apply: whether `seat`'s last output provably could not change the
  // episode's outcome (e.g. a vote that was not pivotal). Credit assignment
  // gives such calls the baseline instead of the outcome (a difference reward).
  virtual bool Inert(int seat) const {
    (void)seat;
    return false;
  }
  // For a decision others' messages may sway (a vote after a deliberation):
  // the probe that measures whether they did (evaluations that ask for it).
  // None: no such decision, or the seat heard no majority recommendation.
  virtual std::optional<PersuasionProbe> Persuasion(const Decision& decision) const {
    (void)decision;
    return std::nullopt;
  }
  // When no seat must decide and the state is not terminal, the game runs its
  // own rules (a simulation step); false when it has nothing to run.
  virtual bool Advance() { return false; }
  virtual bool IsTerminal() const = 0;
  virtual int Turn() const = 0;  // current turn (round), 0-based
  // A named episode-level signal for one seat, e.g. "team_score".
  virtual double Signal(const std::string& name, int seat) const = 0;
  // A named per-turn signal for one seat, e.g. "round_payoff".
  virtual double TurnSignal(const std::string& name, int seat, int turn) const = 0;
  // Episode metrics (scores, cooperation, invalid outputs...).
  virtual std::map<std::string, double> Metrics() const = 0;
  virtual std::unique_ptr<State> Clone() const = 0;
  virtual std::string Serialize() const = 0;
  virtual std::string ToString() const = 0;
};

class Game {
 public:
  virtual ~Game() = default;
  virtual std::string Name() const = 0;
  virtual std::vector<std::string> SeatNames() const = 0;
  // Every word a seat may see or say; the model vocabulary is built from it.
  virtual std::vector<std::string> Vocabulary() const = 0;
  virtual std::vector<std::string> SignalNames() const = 0;
  virtual std::vector<std::string> TurnSignalNames() const = 0;
  // Phases whose answers are messages to other seats (and honour SeatOutput::latent_message).
  // LATENT and HYBRID channels need one outside trainer.hybrid.
  virtual std::vector<std::string> MessagePhases() const { return {}; }
  // Whether every Decision carries its observation as text (Decision::text), so
  // that a tokenizer-based language model can play any seat.
  virtual bool RendersText() const { return false; }
  // The longest decision any seat can face in each phase: a worst case the game
  // builds with its own observation code, so that validation can check every
  // prompt fits a model's max_len before anything runs. Messages (of
  // MessagePhases) take at least `message_words` words each in a reader's view
  // (the runtime's expansion of a latent message); 0: their own text. Empty:
  // the game cannot say, and prompt lengths are checked only while running.
  virtual std::vector<Decision> LongestDecisions(int message_words) const {
    (void)message_words;
    return {};
  }
  virtual std::unique_ptr<State> NewInitialState(uint64_t seed) const = 0;
  virtual std::unique_ptr<State> Deserialize(const std::string& text) const = 0;
  // The best value of `signal` that `seat` can reach when the other seats
  // follow the named scripted strategies (seat -> strategy), if computable.
  virtual std::optional<double> BestAchievable(const std::string& signal, int seat,
                                               const std::map<int, std::string>& scripted) const {
    (void)signal;
    (void)seat;
    (void)scripted;
    return std::nullopt;
  }
  // The episode metric (a State::Metrics key) that reports episode signal
  // `signal` for `seat`, so that its best achievable value can stand beside
  // it; empty when no metric does.
  virtual std::string MetricOfSignal(const std::string& signal, int seat) const {
    (void)signal;
    (void)seat;
    return "";
  }
  // The figures the game is judged by, seen from `seat`'s side (State::Metrics
  // keys): the progress line, the end-of-run table, session summaries and
  // troupe-view show these. Empty: every metric is shown.
  virtual std::vector<std::string> HeadlineMetrics(int seat) const {
    (void)seat;
    return {};
  }
};

// Games are made by name with their typed parameters.
using GameFactory = Registry<Game, const Params&>;

// Every registered game's parameter specs, for validation before construction.
using GameParamRegistry = ParamSpecRegistry<Game>;

// Makes a game by name; the params are checked against the game's specs.
std::unique_ptr<Game> MakeGame(const std::string& name, const std::map<std::string, ParamValue>& values);

// A scripted seat: a fixed strategy that answers decisions without a model.
class ScriptedStrategy {
 public:
  virtual ~ScriptedStrategy() = default;
  virtual std::string GameName() const = 0;
  virtual std::vector<std::string> Act(const State& state, const Decision& decision, Rng& rng) const = 0;
  // Deterministic strategies allow exact best-response search.
  virtual bool Deterministic() const { return true; }
};
using StrategyFactory = Registry<ScriptedStrategy>;

}  // namespace troupe

#define TROUPE_REGISTER_GAME(name, specs, Type)                                                                      \
  TROUPE_REGISTER(::troupe::GameFactory, name, [](const ::troupe::Params& p) { return std::make_unique<Type>(p); }); \
  static const bool TROUPE_CONCAT(troupe_game_specs_, __LINE__) =                                                    \
      ::troupe::GameParamRegistry::Get().Register(name, specs)

#define TROUPE_REGISTER_STRATEGY(name, Type) \
  TROUPE_REGISTER(::troupe::StrategyFactory, name, []() { return std::make_unique<Type>(); })
