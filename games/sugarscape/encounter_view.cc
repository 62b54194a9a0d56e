// Encounter observations as words and as text.
#include "games/sugarscape/encounter_view.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

namespace troupe::sugarscape {

namespace {

// Holdings shown as whole numbers, capped at 99 (the vocabulary's numbers).
std::string Shown(double v) { return std::to_string(std::clamp(static_cast<int>(std::floor(v)), 0, 99)); }

// The small-talk words a word model can say (any vocabulary word may appear).
const char* const kChatWords[] = {"hello", "hi",   "i",    "we",   "need",  "want", "lots", "little", "plenty",
                                  "deal",  "fair", "help", "please", "thanks", "no", "yes",  "good",   "bad",
                                  "give",  "more", "less", "now",  "later", "ok",  "friend", "hungry"};

// The prompt core of the seed study's identities; others get a generic line.
std::string IdentityCore(const std::string& identity) {
  if (identity == "altruist") return "an altruist: you care about your partner's welfare as much as your own";
  if (identity == "exploiter") return "an exploiter: you try to get as much as you can out of every trade";
  if (identity == "survivor") return "a survivor: you trade only to stay alive";
  return "a trader (" + identity + ")";
}

// The change in `side`'s welfare, in whole percent (-100..99), if it accepted
// its partner's pending offer; nullopt when the rules do not show it or no
// partner's offer is pending.
std::optional<int> AcceptValuePercent(const Encounter& e, int side, const World& world, const NegotiationRules& rules) {
  if (!rules.offer_value || e.stage() != Stage::kNegotiate || !e.pending() || e.pending()->by == side) {
    return std::nullopt;
  }
  const int t = e.trader(side);
  const double now = world.Welfare(t);
  if (now <= 0) return std::nullopt;
  const double change = 100.0 * (WelfareIfAccepted(world, t, *e.pending()) - now) / now;
  return std::clamp(static_cast<int>(std::lround(change)), -100, 99);
}

std::string Said(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

}  // namespace

const char* StatusWord(double survival_ticks) {
  return survival_ticks < 3 ? "critical" : survival_ticks < 15 ? "stable" : "rich";
}

std::vector<std::string> NegotiationVocabulary(const std::vector<std::string>& identities,
                                               const NegotiationRules& rules) {
  std::vector<std::string> v;
  for (int k = 0; k <= 99; ++k) v.push_back(std::to_string(k));
  for (const char* w : {"you", "me", "them", "have", "need", "sugar", "spice", "offer", "for", "accept", "reject",
                        "walk", "trade", "decline", "chat", "intent", "negotiate", "send", "owe", "turn", "critical",
                        "stable", "rich"}) {
    v.push_back(w);
  }
  for (const char* w : kChatWords) v.push_back(w);
  if (rules.offer_value) {
    for (const char* w : {"worth", "gain", "loss"}) v.push_back(w);
  }
  for (const auto& id : identities) {
    if (std::find(v.begin(), v.end(), id) == v.end()) v.push_back(id);
  }
  return v;
}

std::vector<std::string> ObservationWords(const Encounter& e, int side, const World& world,
                                          const std::string& identity, const NegotiationRules& rules) {
  const int t = e.trader(side);
  std::vector<std::string> w = {"you", identity, StatusWord(world.SurvivalTicks(t))};
  if (e.stage() != Stage::kChat) {
    for (const std::string& x : {std::string("have"), Shown(world.sugar(t)), std::string("sugar"),
                                 Shown(world.spice(t)), std::string("spice"), std::string("need"),
                                 std::to_string(world.metabolism_sugar(t)), std::string("sugar"),
                                 std::to_string(world.metabolism_spice(t)), std::string("spice")}) {
      w.push_back(x);
    }
  }
  for (const Line& line : e.dialogue()) {
    w.push_back(line.side == side ? "me" : "them");
    w.insert(w.end(), line.words.begin(), line.words.end());
  }
  if (e.stage() == Stage::kNegotiate) {
    w.push_back("turn");
    w.push_back(std::to_string(e.turns_used() + 1));
    if (const auto value = AcceptValuePercent(e, side, world, rules)) {
      w.push_back("worth");
      w.push_back(*value >= 0 ? "gain" : "loss");
      w.push_back(std::to_string(std::min(std::abs(*value), 99)));
    }
  }
  if (e.stage() == Stage::kSend) {
    w.push_back("owe");
    w.push_back(std::to_string(e.Owed(side)));
    w.push_back(GoodWord(e.OwedGood(side)));
  }
  w.push_back(StagePhase(e.stage()));
  return w;
}

std::string ObservationText(const Encounter& e, int side, const World& world, const std::string& identity,
                            const NegotiationRules& rules) {
  const int t = e.trader(side);
  std::ostringstream s;
  s << "Sugarscape. You are " << IdentityCore(identity)
    << ". Traders live on sugar and spice and die when either runs out. ";
  if (e.stage() == Stage::kChat) {
    s << "Your situation is " << StatusWord(world.SurvivalTicks(t)) << ".\n";
  } else {
    s << "You hold " << Shown(world.sugar(t)) << " sugar and " << Shown(world.spice(t)) << " spice and use "
      << world.metabolism_sugar(t) << " sugar and " << world.metabolism_spice(t) << " spice per tick ("
      << StatusWord(world.SurvivalTicks(t)) << ").\n";
  }
  s << "You meet a neighbour.";
  if (!e.dialogue().empty()) s << " So far:\n";
  for (const Line& line : e.dialogue()) {
    s << (line.side == side ? "You: " : "Neighbour: ") << Said(line.words) << "\n";
  }
  if (e.dialogue().empty()) s << "\n";
  switch (e.stage()) {
    case Stage::kChat: s << "Say something short to your neighbour (at most " << rules.chat_words << " words)."; break;
    case Stage::kIntent: s << "Do you want to trade with them? Answer TRADE or DECLINE."; break;
    case Stage::kNegotiate:
      s << "Negotiation, turn " << e.turns_used() + 1 << " of " << rules.turns << ". ";
      if (e.pending()) {
        const Offer& o = *e.pending();
        s << "Their offer stands: they give " << o.give << " " << GoodWord(o.good) << " for " << o.receive << " "
          << GoodWord(o.good == Good::kSugar ? Good::kSpice : Good::kSugar) << ". ";
        if (const auto value = AcceptValuePercent(e, side, world, rules)) {
          s << (*value <= -100 ? std::string("Accepting it would leave you without one of the goods. ")
                               : std::string("Accepting it would ") + (*value >= 0 ? "raise" : "lower") +
                                     " your welfare by " + std::to_string(std::abs(*value)) + "%. ");
        }
      }
      s << "Answer OFFER <n> SUGAR FOR <m> SPICE (you give n sugar and get m spice; or spice for sugar), "
        << (e.pending() ? "ACCEPT, REJECT or WALK AWAY." : "or WALK AWAY.");
      break;
    case Stage::kSend:
      s << "The deal is made: you owe " << e.Owed(side) << " " << GoodWord(e.OwedGood(side))
        << ". How many do you send? Answer with a number.";
      break;
    case Stage::kDone: break;
  }
  return s.str();
}

}  // namespace troupe::sugarscape
