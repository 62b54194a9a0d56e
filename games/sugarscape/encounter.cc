// The encounter protocol: stages, strict parsing, execution.
#include "games/sugarscape/encounter.h"

#include <algorithm>
#include <cmath>

namespace troupe::sugarscape {

const char* GoodWord(Good g) { return g == Good::kSugar ? "sugar" : "spice"; }

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kOpen: return "open";
    case Outcome::kCompleted: return "completed";
    case Outcome::kBothDeclined: return "both_declined";
    case Outcome::kReject: return "reject";
    case Outcome::kWalkAway: return "walk_away";
    case Outcome::kTimeout: return "timeout";
    case Outcome::kError: return "error";
  }
  return "?";
}

const char* StagePhase(Stage s) {
  switch (s) {
    case Stage::kChat: return "chat";
    case Stage::kIntent: return "intent";
    case Stage::kNegotiate: return "negotiate";
    case Stage::kSend: return "send";
    case Stage::kDone: return "done";
  }
  return "?";
}

namespace {

// A whole number 0..max written in digits; -1 otherwise.
int Amount(const std::string& word, int max) {
  if (word.empty() || word.size() > 4 || !std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  const int v = std::stoi(word);
  return v <= max ? v : -1;
}

std::optional<Good> GoodOf(const std::string& word) {
  if (word == "sugar") return Good::kSugar;
  if (word == "spice") return Good::kSpice;
  return std::nullopt;
}

Good Other(Good g) { return g == Good::kSugar ? Good::kSpice : Good::kSugar; }

}  // namespace

std::optional<Move> ParseMove(const std::vector<std::string>& w, int max_amount) {
  if (w.empty()) return std::nullopt;
  if (w[0] == "accept") return Move{Move::kAccept, {}};
  if (w[0] == "reject") return Move{Move::kReject, {}};
  if (w[0] == "walk") return Move{Move::kWalk, {}};
  if (w[0] != "offer" || w.size() < 6) return std::nullopt;
  const int give = Amount(w[1], max_amount), receive = Amount(w[4], max_amount);
  const auto good = GoodOf(w[2]), other = GoodOf(w[5]);
  if (give < 0 || receive < 0 || !good || !other || *good == *other || w[3] != "for") return std::nullopt;
  if (give == 0 && receive == 0) return std::nullopt;
  Move m{Move::kOffer, {}};
  m.offer.give = give;
  m.offer.receive = receive;
  m.offer.good = *good;
  return m;
}

std::vector<std::string> OfferWords(const Offer& o) {
  return {"offer", std::to_string(o.give), GoodWord(o.good), "for", std::to_string(o.receive), GoodWord(Other(o.good))};
}

Encounter::Encounter(int a, int b, const World& world, const NegotiationRules& rules)
    : rules_(&rules), trader_{a, b} {
  for (int s = 0; s < 2; ++s) welfare_before_[s] = welfare_after_[s] = world.Welfare(trader_[s]);
  if (rules.chat_rounds == 0) stage_ = Stage::kIntent;
}

std::vector<int> Encounter::Sides() const {
  if (stage_ == Stage::kDone) return {};
  if (stage_ == Stage::kNegotiate) return {mover_};
  return {0, 1};
}

std::vector<std::string> Encounter::Options(int side) const {
  switch (stage_) {
    case Stage::kIntent: return {"trade", "decline"};
    case Stage::kNegotiate:
      if (pending_) return {"offer", "accept", "reject", "walk"};
      return {"offer", "walk"};
    case Stage::kSend: {
      std::vector<std::string> numbers;
      for (int k = 0; k <= Owed(side); ++k) numbers.push_back(std::to_string(k));
      return numbers;
    }
    default: return {};
  }
}

int Encounter::Owed(int side) const {
  if (!deal_) return 0;
  return deal_->by == side ? deal_->give : deal_->receive;
}

Good Encounter::OwedGood(int side) const {
  if (!deal_) return Good::kSugar;
  return deal_->by == side ? deal_->good : Other(deal_->good);
}

double Encounter::Price() const {
  if (!deal_) return 0.0;
  const double sugar = deal_->good == Good::kSugar ? deal_->give : deal_->receive;
  const double spice = deal_->good == Good::kSugar ? deal_->receive : deal_->give;
  return sugar > 0 && spice > 0 ? spice / sugar : 0.0;
}

double WelfareIfAccepted(const World& world, int trader, const Offer& offer) {
  double sugar = world.sugar(trader), spice = world.spice(trader);
  // The offerer gives `give` of offer.good and receives `receive` of the other good.
  if (offer.good == Good::kSugar) sugar += offer.give, spice -= offer.receive;
  else spice += offer.give, sugar -= offer.receive;
  return sugar > 0 && spice > 0 ? world.Welfare(trader, sugar, spice) : 0.0;
}

void Encounter::End(Outcome o) {
  outcome_ = o;
  stage_ = Stage::kDone;
}

bool Encounter::Answer(int side, const std::vector<std::string>& words) {
  if (stage_ == Stage::kDone) return true;  // the other side's answer already ended it
  switch (stage_) {
    case Stage::kChat: {
      std::vector<std::string> said(words.begin(), words.begin() + std::min<size_t>(words.size(), rules_->chat_words));
      dialogue_.push_back({side, stage_, std::move(said)});
      return true;
    }
    case Stage::kIntent: {
      if (words.empty() || (words[0] != "trade" && words[0] != "decline")) break;
      wants_trade_[side] = words[0] == "trade";
      dialogue_.push_back({side, stage_, {words[0]}});
      return true;
    }
    case Stage::kNegotiate: {
      const std::optional<Move> move = ParseMove(words, rules_->max_amount);
      if (!move) break;
      ++turns_used_;
      switch (move->kind) {
        case Move::kOffer:
          pending_ = move->offer;
          pending_->by = side;
          dialogue_.push_back({side, stage_, OfferWords(*pending_)});
          return true;
        case Move::kAccept:
        case Move::kReject:
          if (!pending_) break;  // nothing to accept or reject
          dialogue_.push_back({side, stage_, {move->kind == Move::kAccept ? "accept" : "reject"}});
          if (move->kind == Move::kAccept) deal_ = pending_;
          else End(Outcome::kReject);
          return true;
        case Move::kWalk:
          dialogue_.push_back({side, stage_, {"walk"}});
          End(Outcome::kWalkAway);
          return true;
      }
      break;
    }
    case Stage::kSend: {
      const int k = words.empty() ? -1 : Amount(words[0], rules_->max_amount);
      if (k < 0) break;
      commit_[side] = std::min(k, Owed(side));
      return true;
    }
    case Stage::kDone: return true;
  }
  End(Outcome::kError);
  return false;
}

void Encounter::Close(World* world) {
  switch (stage_) {
    case Stage::kChat:
      if (++chat_round_ >= rules_->chat_rounds) stage_ = Stage::kIntent;
      return;
    case Stage::kIntent:
      if (!wants_trade_[0] && !wants_trade_[1]) return End(Outcome::kBothDeclined);
      stage_ = Stage::kNegotiate;
      mover_ = wants_trade_[0] ? 0 : 1;  // the picker opens, unless only its partner wants to trade
      return;
    case Stage::kNegotiate:
      if (deal_) {
        if (rules_->fraud) {
          stage_ = Stage::kSend;
          return;
        }
        commit_[0] = Owed(0), commit_[1] = Owed(1);
        return Execute(world);
      }
      if (turns_used_ >= rules_->turns) return End(Outcome::kTimeout);
      mover_ = 1 - mover_;
      return;
    case Stage::kSend: return Execute(world);
    case Stage::kDone: return;
  }
}

// Each side sends what it committed, clamped to what it holds.
void Encounter::Execute(World* world) {
  double h[2][2];  // side -> sugar, spice
  for (int s = 0; s < 2; ++s) h[s][0] = world->sugar(trader_[s]), h[s][1] = world->spice(trader_[s]);
  for (int s = 0; s < 2; ++s) {
    const int g = OwedGood(s) == Good::kSugar ? 0 : 1;
    sent_[s] = static_cast<int>(std::min<double>(commit_[s], std::max(0.0, std::floor(h[s][g]))));
  }
  for (int s = 0; s < 2; ++s) {
    const int g = OwedGood(s) == Good::kSugar ? 0 : 1;
    h[s][g] -= sent_[s];
    h[1 - s][g] += sent_[s];
  }
  world->Exchange(trader_[0], trader_[1], h[0][0], h[0][1], h[1][0], h[1][1]);
  for (int s = 0; s < 2; ++s) welfare_after_[s] = world->Welfare(trader_[s]);
  End(Outcome::kCompleted);
}

}  // namespace troupe::sugarscape
