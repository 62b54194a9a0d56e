// The Red-Black game: parameters, vocabulary, signals and best-response search.
#include "games/red_black/red_black.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>

#include "games/red_black/red_black_state.h"

namespace troupe::red_black {

const char* ChoiceWord(Choice c) { return c == Choice::kBlack ? "black" : "red"; }

int BasePayoff(Choice own, Choice other) {
  if (own == Choice::kBlack && other == Choice::kBlack) return 3;
  if (own == Choice::kRed && other == Choice::kRed) return -3;
  if (own == Choice::kRed) return 6;
  return -6;
}

std::vector<ParamSpec> RedBlackParamSpecs() {
  return {
      {"team_size", ParamType::kInt, int64_t{5}, "agents per team", 1, 15},
      {"rounds", ParamType::kInt, int64_t{10}, "rounds per game", 1, 30},
      {"multipliers", ParamType::kText, std::string(""),
       "round:multiplier pairs (1-based rounds), other rounds x1; empty: the spec's 5:3,8:5,10:10 "
       "(the pairs that fit the number of rounds)"},
      {"invalid_choice", ParamType::kText, std::string("black"),
       "what an unparseable recommendation or vote counts as (black|red); also breaks vote ties"},
      {"reason_words", ParamType::kInt, int64_t{3}, "longest reasoning message, in words", 0, 16},
      {"discussion_rounds", ParamType::kInt, int64_t{0}, "extra speaking cycles before the vote", 0, 3},
      {"topology", ParamType::kText, std::string("broadcast"),
       "who hears whom in a team's deliberation: broadcast (every teammate), ring (the two neighbours), pairs "
       "(fixed pairs: seats 0-1, 2-3, ...; an odd last seat joins the pair before it), rotating_pairs (a new pairing "
       "each round, round-robin; with an odd team one seat a round hears nobody)"},
      {"silent", ParamType::kFlag, false,
       "a control for experiments, not the spec's game: seats speak but no seat sees the messages"},
      {"scenario", ParamType::kText, std::string(""),
       "the words agents see, never the rules: built-in scenarios by name (climate, ai_safety, pandemic_vaccines, "
       "election_crisis, standards, trade_war, gpu_contention, plain), \"training\" or \"held_out\" for a split, "
       "or paths of .json scenario files, comma-separated (one drawn per episode); empty: the plain game"},
  };
}

namespace {

std::vector<int> ParseMultipliers(const std::string& text, int rounds) {
  std::vector<int> m(rounds, 1);
  if (text.empty()) {
    for (auto [round, mult] : {std::pair{5, 3}, std::pair{8, 5}, std::pair{10, 10}}) {
      if (round <= rounds) m[round - 1] = mult;
    }
    return m;
  }
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    auto colon = item.find(':');
    int round = 0, mult = 0;
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      round = std::stoi(item.substr(0, colon));
      mult = std::stoi(item.substr(colon + 1));
    } catch (const std::exception&) {
      throw GameError("multipliers: '" + item + "' is not round:multiplier");
    }
    if (round < 1 || round > rounds) {
      throw GameError("multipliers: round " + std::to_string(round) + " is outside 1.." + std::to_string(rounds));
    }
    if (mult < 1 || mult > 100) throw GameError("multipliers: multiplier must be in 1..100");
    m[round - 1] = mult;
  }
  return m;
}

Choice ParseChoiceParam(const std::string& text) {
  if (text == "black") return Choice::kBlack;
  if (text == "red") return Choice::kRed;
  throw GameError("invalid_choice must be \"black\" or \"red\", got \"" + text + "\"");
}

RedBlackGame::Topology ParseTopology(const std::string& text) {
  if (text == "broadcast") return RedBlackGame::Topology::kBroadcast;
  if (text == "ring") return RedBlackGame::Topology::kRing;
  if (text == "pairs") return RedBlackGame::Topology::kPairs;
  if (text == "rotating_pairs") return RedBlackGame::Topology::kRotatingPairs;
  throw GameError("red_black: topology '" + text + "' is none of broadcast, ring, pairs, rotating_pairs");
}

// The round-robin (circle) pairing of n seats (n even) in round r: seat 0 stays, the others turn.
int CirclePartner(int i, int n, int r) {
  if (n < 2) return -1;
  auto position = [&](int seat) { return seat == 0 ? 0 : 1 + ((seat - 1 + r) % (n - 1)); };
  auto seat_at = [&](int pos) { return pos == 0 ? 0 : 1 + ((pos - 1 - r % (n - 1) + (n - 1)) % (n - 1)); };
  return seat_at(n - 1 - position(i));
}

}  // namespace

bool RedBlackGame::Hears(int listener, int speaker, int round) const {
  if (listener == speaker) return true;
  const int n = team_size_;
  switch (topology_) {
    case Topology::kBroadcast: return true;
    case Topology::kRing: return (listener + 1) % n == speaker || (speaker + 1) % n == listener;
    case Topology::kPairs: {
      auto pair = [&](int i) { return std::min(i / 2, n / 2 - 1); };  // an odd last seat joins the pair before it
      return n >= 2 && pair(listener) == pair(speaker);
    }
    case Topology::kRotatingPairs: {
      const int m = n % 2 == 0 ? n : n + 1;  // odd: a ghost seat; its partner hears nobody that round
      return CirclePartner(listener, m, round) == speaker;
    }
  }
  return true;
}

RedBlackGame::RedBlackGame(const Params& params)
    : team_size_(static_cast<int>(params.Int("team_size"))),
      rounds_(static_cast<int>(params.Int("rounds"))),
      multipliers_(ParseMultipliers(params.Text("multipliers"), rounds_)),
      invalid_choice_(ParseChoiceParam(params.Text("invalid_choice"))),
      reason_words_(static_cast<int>(params.Int("reason_words"))),
      discussion_rounds_(static_cast<int>(params.Int("discussion_rounds"))),
      silent_(params.Flag("silent")),
      topology_(ParseTopology(params.Text("topology"))),
      scenarios_(ResolveScenarios(params.Text("scenario"))) {}

std::vector<std::string> RedBlackGame::SeatNames() const {
  std::vector<std::string> names;
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < team_size_; ++i) names.push_back(std::string(t == 0 ? "a" : "b") + std::to_string(i));
  }
  return names;
}

// Words of the reasoning messages; agents may use any of them.
static const std::vector<std::string>& ReasoningWords() {
  static const std::vector<std::string> words = {
      "we",       "they",    "should", "must",   "trust",  "cooperate", "defect", "betray", "punish",     "forgive",
      "risk",     "safe",    "win",    "lose",   "points", "big",       "last",   "now",    "later",      "again",
      "together", "because", "copy",   "signal", "greedy", "fair",      "not",    "agree",  "multiplier", "end"};
  return words;
}

std::vector<std::string> RedBlackGame::Vocabulary() const {
  std::vector<std::string> v = {"round", "of",   "left",  "x",    "us",  "them",  "history", "now",
                                "says",  "will", "speak", "vote", "red", "black", "-"};
  for (int d = 0; d <= 9; ++d) v.push_back(std::to_string(d));
  int counts = rounds_;
  for (int m : multipliers_) counts = std::max(counts, m);
  for (int n = 0; n <= counts; ++n) v.push_back("#" + std::to_string(n));
  std::set<int> points;
  for (int m : multipliers_) {
    for (int p : {3, -3, 6, -6}) points.insert(p * m);
  }
  for (int p : points) v.push_back((p > 0 ? "+" : "") + std::to_string(p));
  for (const auto& w : ReasoningWords()) v.push_back(w);
  // With scenarios, the labels and the words of what the options mean, once: those of every built-in
  // scenario (so a model trained on some can be evaluated on the others, word for word) and of the game's.
  // The plain game alone keeps its own words.
  if (scenarios_.size() == 1 && scenarios_[0].plain()) return v;
  std::set<std::string> seen(v.begin(), v.end());
  for (const std::vector<Scenario>* list : {&BuiltInScenarios(), &scenarios_}) {
    for (const Scenario& s : *list) {
      for (const std::string& w : s.Preamble()) {
        if (seen.insert(w).second) v.push_back(w);
      }
    }
  }
  return v;
}

std::vector<std::string> RedBlackGame::SignalNames() const {
  return {"team_score", "opponent_score", "combined_score", "team_cooperation"};
}

std::vector<std::string> RedBlackGame::TurnSignalNames() const { return {"round_payoff", "round_combined"}; }

std::unique_ptr<State> RedBlackGame::NewInitialState(uint64_t seed) const {
  return std::make_unique<RedBlackState>(*this, seed);
}

std::unique_ptr<State> RedBlackGame::Deserialize(const std::string& text) const {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) throw GameError("red_black: empty serialized state");
  uint64_t seed = 0;
  try {
    seed = std::stoull(line);
  } catch (const std::exception&) {
    throw GameError("red_black: bad seed line '" + line + "'");
  }
  auto state = std::make_unique<RedBlackState>(*this, seed);
  while (std::getline(in, line)) {
    std::vector<SeatOutput> outputs;
    std::stringstream items(line);
    std::string item;
    while (std::getline(items, item, '|')) {
      auto colon = item.find(':');
      if (colon == std::string::npos) throw GameError("red_black: bad action '" + item + "'");
      SeatOutput out;
      out.seat = std::stoi(item.substr(0, colon));
      std::istringstream words(item.substr(colon + 1));
      std::string w;
      while (words >> w) {
        if (w != "=") {
          out.words.push_back(w);
          continue;
        }
        if (!(words >> out.latent_message)) throw GameError("red_black: bad latent message handle in '" + item + "'");
      }
      outputs.push_back(out);
    }
    state->Apply(outputs);
  }
  return state;
}

int RedBlackGame::BestCombined() const {
  int total = 0;
  for (int m : multipliers_) total += 6 * m;
  return total;
}

std::optional<double> RedBlackGame::BestAchievable(const std::string& signal, int seat,
                                                   const std::map<int, std::string>& scripted) const {
  // Per-turn payoffs summed over the game are the episode scores.
  const bool own = signal == "team_score" || signal == "round_payoff";
  const bool combined = signal == "combined_score" || signal == "round_combined";
  if (!own && !combined) return std::nullopt;
  if (rounds_ > 20) return std::nullopt;
  const int team = TeamOf(seat);
  const int other = 1 - team;
  // Every seat of the other team must follow one deterministic strategy.
  std::string name;
  for (int i = 0; i < team_size_; ++i) {
    auto it = scripted.find(other * team_size_ + i);
    if (it == scripted.end()) return std::nullopt;
    if (!name.empty() && it->second != name) return std::nullopt;
    name = it->second;
  }
  if (!StrategyFactory::Get().Has(name)) return std::nullopt;
  auto strategy = StrategyFactory::Get().Create(name);
  auto* rb = dynamic_cast<const RedBlackStrategy*>(strategy.get());
  if (rb == nullptr || !rb->Deterministic()) return std::nullopt;

  Rng unused(0);
  double best = -1e18;
  for (uint32_t mask = 0; mask < (1u << rounds_); ++mask) {
    RoundView view;  // the opponent's view: own = opponent's choices
    view.rounds = rounds_;
    int own_score = 0, other_score = 0;
    for (int r = 0; r < rounds_; ++r) {
      view.round = r;
      view.multiplier = multipliers_[r];
      Choice mine = (mask >> r) & 1u ? Choice::kRed : Choice::kBlack;
      Choice theirs = rb->Choose(view, unused);
      own_score += BasePayoff(mine, theirs) * multipliers_[r];
      other_score += BasePayoff(theirs, mine) * multipliers_[r];
      view.own.push_back(theirs);
      view.other.push_back(mine);
    }
    double value = own ? own_score : own_score + other_score;
    best = std::max(best, value);
  }
  return best;
}

std::string RedBlackGame::MetricOfSignal(const std::string& signal, int seat) const {
  const std::string own = TeamOf(seat) == 0 ? "a" : "b", other = TeamOf(seat) == 0 ? "b" : "a";
  if (signal == "team_score" || signal == "round_payoff") return "team_" + own + "_score";
  if (signal == "opponent_score") return "team_" + other + "_score";
  if (signal == "combined_score" || signal == "round_combined") return "combined_score";
  if (signal == "team_cooperation") return "team_" + own + "_cooperation";
  return "";
}

std::vector<std::string> RedBlackGame::HeadlineMetrics(int seat) const {
  const std::string own = TeamOf(seat) == 0 ? "a" : "b";
  return {"team_" + own + "_score", "team_" + own + "_cooperation", "combined_score", "efficiency"};
}

std::vector<Decision> RedBlackGame::LongestDecisions(int message_words) const {
  return RedBlackState::Longest(*this, message_words);
}

namespace {
TROUPE_REGISTER_GAME("red_black", RedBlackParamSpecs(), RedBlackGame);
}  // namespace

}  // namespace troupe::red_black
