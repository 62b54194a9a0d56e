// Negotiated trade in Sugarscape (the seed study's encounter protocol,
// ../shared/specs/sugarscape.md): two neighbours meet, make small talk, say
// whether they want to trade, then take turns to OFFER, ACCEPT, REJECT or
// WALK AWAY; an accepted offer is executed (honestly, or with fraud when the
// rules allow it), amounts clamped to holdings.
//
// An Encounter is the protocol's state for one pair; the world's state owns
// a tick's encounters and asks each which side must answer now (Sides) and
// hands it the answers (Answer). Answers are words, read strictly: an
// unparseable one ends the encounter as `error`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "games/sugarscape/world.h"

namespace troupe::sugarscape {

struct NegotiationRules {
  int chat_rounds = 2;   // small-talk messages each (both speak in a round)
  int chat_words = 4;    // longest small-talk message
  int turns = 4;         // negotiation turns, alternating, before a timeout
  bool fraud = false;    // accepted deals are sent as each side commits (else enforced)
  int max_amount = 20;   // the largest amount an offer may name
  bool offer_value = false;  // a pending offer shows what accepting it does to the answerer's welfare
};

enum class Good { kSugar, kSpice };
const char* GoodWord(Good g);

// "offer GIVE GOOD for RECEIVE OTHER": the offerer gives `give` of `good` and receives `receive` of the other.
struct Offer {
  int by = 0;  // side 0 or 1
  int give = 0, receive = 0;
  Good good = Good::kSugar;
};

enum class Outcome { kOpen, kCompleted, kBothDeclined, kReject, kWalkAway, kTimeout, kError };
constexpr int kOutcomes = 7;
const char* OutcomeName(Outcome o);  // "completed", "both_declined", ...

enum class Stage { kChat, kIntent, kNegotiate, kSend, kDone };
const char* StagePhase(Stage s);  // the Decision phase: chat, intent, negotiate, send

// One thing said, as both sides later see it.
struct Line {
  int side = 0;
  Stage stage = Stage::kChat;
  std::vector<std::string> words;
};

class Encounter {
 public:
  // `a` (who picked the partner) and `b` are trader slots of `world`.
  Encounter(int a, int b, const World& world, const NegotiationRules& rules);

  // The sides that must answer now (both in chat, intent and send; the mover in negotiation).
  std::vector<int> Sides() const;
  // Applies one side's answer; false when it could not be parsed (the encounter then ends as `error`).
  // Call once per side of Sides(), then Close() after every side answered.
  bool Answer(int side, const std::vector<std::string>& words);
  // Moves to the next stage once every side of the round answered; executes an accepted deal on `world`.
  void Close(World* world);

  // The legal first words of `side`'s answer now (guided decoding): trade/decline,
  // offer/accept/reject/walk (accept and reject only with an offer pending), the numbers 0..owed.
  std::vector<std::string> Options(int side) const;
  // What `side` owes under the accepted deal (fraud: its send phase), and of which good.
  int Owed(int side) const;
  Good OwedGood(int side) const;

  int trader(int side) const { return trader_[side]; }
  Stage stage() const { return stage_; }
  Outcome outcome() const { return outcome_; }
  bool done() const { return stage_ == Stage::kDone; }
  int turns_used() const { return turns_used_; }
  const std::vector<Line>& dialogue() const { return dialogue_; }
  const std::optional<Offer>& pending() const { return pending_; }
  const std::optional<Offer>& deal() const { return deal_; }
  // After execution: units each side sent, and whether it sent less than it owed.
  int sent(int side) const { return sent_[side]; }
  bool defrauded_by(int side) const { return sent_[side] < Owed(side); }
  double welfare_before(int side) const { return welfare_before_[side]; }
  double welfare_after(int side) const { return welfare_after_[side]; }
  double WelfareGain(int side) const { return welfare_after_[side] - welfare_before_[side]; }
  // Spice per sugar of the executed deal (0 when none).
  double Price() const;
  int Volume() const { return sent_[0] + sent_[1]; }

 private:
  void End(Outcome o);
  void Execute(World* world);

  const NegotiationRules* rules_;
  int trader_[2];
  Stage stage_ = Stage::kChat;
  int chat_round_ = 0;
  bool wants_trade_[2] = {false, false};
  int mover_ = 0;
  int turns_used_ = 0;
  std::optional<Offer> pending_, deal_;
  int commit_[2] = {0, 0};  // fraud: what each side says it sends
  int sent_[2] = {0, 0};
  Outcome outcome_ = Outcome::kOpen;
  double welfare_before_[2], welfare_after_[2];
  std::vector<Line> dialogue_;
};

// `trader`'s welfare if it accepted `offer` (made by its partner) and both sides
// paid in full; 0 when it cannot pay (a good would run out).
double WelfareIfAccepted(const World& world, int trader, const Offer& offer);

// A parsed negotiation answer.
struct Move {
  enum Kind { kOffer, kAccept, kReject, kWalk } kind;
  Offer offer;  // kOffer
};
// "offer N sugar for M spice" (or spice for sugar), "accept", "reject", "walk" (away); nullopt otherwise.
std::optional<Move> ParseMove(const std::vector<std::string>& words, int max_amount);
// The words of an offer, as said and as shown.
std::vector<std::string> OfferWords(const Offer& offer);

}  // namespace troupe::sugarscape
