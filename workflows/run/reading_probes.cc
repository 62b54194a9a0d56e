// The reading probes: fixed items drawn from a seed, scored by greedy answers.
#include "workflows/run/reading_probes.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/base/errors.h"
#include "core/models/language_model.h"
#include "core/rng.h"
#include "core/text/invented_names.h"
#include "core/text/tokenizer.h"

namespace troupe {

namespace {

constexpr int kExamples = 3;  // items each probe keeps to show

std::string Pick(const std::vector<std::string>& options, Rng& rng) {
  return options[rng.Below(static_cast<int>(options.size()))];
}

// The text a greedy continuation of `prompt` gives, `max_new` tokens at most.
std::string Continue(const LanguageModel& model, const Tokenizer& tokenizer, const std::string& prompt, int max_new) {
  const std::vector<int> ids = tokenizer.Encode(prompt, false);
  if (static_cast<int>(ids.size()) + max_new > model.max_len()) {
    throw ModelError("a reading probe's prompt (" + std::to_string(ids.size()) + " tokens) does not fit max_len " +
                     std::to_string(model.max_len()));
  }
  return tokenizer.Decode(model.Generate(ids, max_new, true, 1.0, 0, {}));
}

// Whether `got` starts with `expected` as a whole word (nothing alphanumeric right after it).
bool StartsWithWord(const std::string& got, const std::string& expected) {
  if (got.compare(0, expected.size(), expected) != 0) return false;
  return got.size() == expected.size() || !std::isalnum(static_cast<unsigned char>(got[expected.size()]));
}

// One item of the copy or needle probe: right when the greedy continuation of
// `prompt` is " answer", a whole word; a few wrong ones are kept to show.
bool ScoreItem(const LanguageModel& model, const Tokenizer& tokenizer, const std::string& prompt,
               const std::string& answer, ProbeScore* probe) {
  const int max_new = static_cast<int>(tokenizer.Encode(" " + answer, false).size()) + 1;
  const std::string got = Continue(model, tokenizer, prompt, max_new);
  const bool right = StartsWithWord(got, " " + answer);
  ++probe->count;
  if (!right && static_cast<int>(probe->examples.size()) < kExamples) {
    const std::string tail = prompt.size() > 160 ? "..." + prompt.substr(prompt.size() - 160) : prompt;
    probe->examples.push_back(tail + " | expected: " + answer + " | got: " + got);
  }
  return right;
}

// Mean log-probability per token of " answer" right after `prompt`, teacher-forced.
double AnswerLogProb(const LanguageModel& model, const Tokenizer& tokenizer, const std::string& prompt,
                     const std::string& answer) {
  std::vector<int> ids = tokenizer.Encode(prompt, false);
  const std::vector<int> tail = tokenizer.Encode(" " + answer, false);
  ids.insert(ids.end(), tail.begin(), tail.end());
  const std::vector<float> scores = model.Score(ids);  // scores[i - 1] = log p(ids[i] | ids[0..i-1])
  double sum = 0.0;
  for (size_t k = 0; k < tail.size(); ++k) sum += scores[scores.size() - 1 - k];
  return sum / static_cast<double>(tail.size());
}

// `text` with every whole-word `word` replaced by `by` (names are letters only, so a word
// is bounded by anything that is not a letter).
std::string ReplaceWord(std::string text, const std::string& word, const std::string& by) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at)) {
    const bool starts = at == 0 || !std::isalpha(static_cast<unsigned char>(text[at - 1]));
    const size_t end = at + word.size();
    const bool ends = end == text.size() || !std::isalpha(static_cast<unsigned char>(text[end]));
    if (starts && ends) {
      text.replace(at, word.size(), by);
      at += by.size();
    } else {
      at = end;
    }
  }
  return text;
}

// The evidence gain of one copy or needle item: log p(answer | prompt) - log p(answer | the prompt's
// `evidence_part` with the answer replaced by `other`), per token. `evidence_part` is the prompt's
// first characters (the question after them is kept as it is).
double EvidenceGain(const LanguageModel& model, const Tokenizer& tokenizer, const std::string& prompt,
                    size_t evidence_part, const std::string& answer, const std::string& other) {
  const std::string without =
      ReplaceWord(prompt.substr(0, evidence_part), answer, other) + prompt.substr(evidence_part);
  return AnswerLogProb(model, tokenizer, prompt, answer) - AnswerLogProb(model, tokenizer, without, answer);
}

// An invented name unlike `answer`, for the evidence-gain controls (its own stream, so the items stay as they were).
std::string OtherName(Rng& rng, const std::string& answer) {
  std::string name;
  do name = InventedName(rng.Next());
  while (name == answer || name.find(answer) != std::string::npos || answer.find(name) != std::string::npos);
  return name;
}

// Names for one item, all different.
std::vector<std::string> DistinctNames(Rng& rng, int n) {
  std::set<std::string> seen;
  std::vector<std::string> names;
  while (static_cast<int>(names.size()) < n) {
    std::string name = InventedName(rng.Next());
    if (seen.insert(name).second) names.push_back(std::move(name));
  }
  return names;
}

ProbeScore Induction(const LanguageModel& model, const Tokenizer& tokenizer, const ProbeOptions& o) {
  // Ordinary tokens: not the bytes alone, not added (special) tokens.
  std::set<int> added;
  for (const AddedToken& t : tokenizer.model().added) added.insert(t.id);
  std::vector<int> ordinary;
  const int vocab = std::min(tokenizer.vocab_size(), model.vocab_size());
  for (int id = vocab > 512 ? 256 : 0; id < vocab; ++id) {
    if (!added.count(id)) ordinary.push_back(id);
  }
  if (ordinary.size() < 2) throw ModelError("the induction probe needs a vocabulary of ordinary tokens");
  ProbeScore probe{"induction"};
  Rng rng(Rng::Mix(o.seed, 1));
  const int L = o.induction_length;
  int right = 0;
  double gain = 0.0;
  for (int s = 0; s < o.induction_sequences; ++s) {
    std::vector<int> ids;
    for (int i = 0; i < L; ++i) ids.push_back(ordinary[rng.Below(static_cast<int>(ordinary.size()))]);
    ids.insert(ids.end(), ids.begin(), ids.end());
    if (static_cast<int>(ids.size()) > model.max_len()) {
      throw ModelError("the induction probe's sequences (" + std::to_string(ids.size()) +
                       " tokens) do not fit max_len " + std::to_string(model.max_len()));
    }
    // predicted[i] follows ids[0..i]: the second copy's tokens 1..L-1 are predicted at L..2L-2.
    const std::vector<int> predicted = model.Predict(ids);
    const std::vector<float> scores = model.Score(ids);  // scores[i - 1] = log p(ids[i] | ids[0..i-1])
    int seq_right = 0;
    for (int k = 1; k < L; ++k) {
      seq_right += predicted[L + k - 1] == ids[L + k];
      gain += scores[L + k - 1] - scores[k - 1];
    }
    right += seq_right;
    probe.count += L - 1;
    if (s < kExamples) {
      probe.examples.push_back("sequence " + std::to_string(s + 1) + ": " + std::to_string(seq_right) + " of " +
                               std::to_string(L - 1) + " tokens of the second copy predicted");
    }
  }
  probe.score = probe.count > 0 ? double(right) / probe.count : 0.0;
  probe.evidence_gain = probe.count > 0 ? gain / probe.count : 0.0;
  return probe;
}

ProbeScore Copy(const LanguageModel& model, const Tokenizer& tokenizer, const ProbeOptions& o) {
  static const std::vector<std::string> cues = {
      "The ship was named",           "Her oldest friend was called", "The new town on the river is called",
      "The password for the gate is", "The prize that year went to",  "Everyone in the village knew the miller as"};
  static const std::vector<std::string> fillers = {"It rained for most of the week.",
                                                   "The roads were closed until spring.",
                                                   "Nobody expected the harvest to be so large.",
                                                   "The council met again in the autumn.",
                                                   "Trade with the coast grew slowly.",
                                                   "Many of the old houses were rebuilt in stone."};
  ProbeScore probe{"copy"};
  Rng rng(Rng::Mix(o.seed, 2)), others(Rng::Mix(o.seed, 12));
  int right = 0;
  double gain = 0.0;
  for (int i = 0; i < o.copy_items; ++i) {
    // A name of 1-4 tokens, as the tokenizer cuts it after a space.
    std::string name;
    std::vector<int> name_ids;
    do {
      name = InventedName(rng.Next());
      name_ids = tokenizer.Encode(" " + name, false);
    } while (name_ids.size() > 4);
    const std::string cue = Pick(cues, rng);
    std::string prompt = cue + " " + name + ".";
    for (int f = 0, n = 1 + rng.Below(3); f < n; ++f) prompt += " " + Pick(fillers, rng);
    const size_t evidence_part = prompt.size();  // the name said once, and the fillers
    prompt += " " + cue;
    right += ScoreItem(model, tokenizer, prompt, name, &probe);
    gain += EvidenceGain(model, tokenizer, prompt, evidence_part, name, OtherName(others, name));
  }
  probe.score = probe.count > 0 ? double(right) / probe.count : 0.0;
  probe.evidence_gain = probe.count > 0 ? gain / probe.count : 0.0;
  return probe;
}

// One invented country's passages in the Factbook's form ("Title: text", as the retriever shows them).
struct Country {
  std::string name, capital, language;
};

std::vector<std::string> Passages(const Country& c, Rng& rng) {
  const int lat = rng.Below(70), lon = rng.Below(170), utc = rng.Below(12) + 1;
  const int official = 50 + rng.Below(45);
  return {c.name + " - Government - Capital: geographic coordinates: " + std::to_string(lat) + " " +
              std::to_string(rng.Below(60)) + " N, " + std::to_string(lon) + " " + std::to_string(rng.Below(60)) +
              " E; name: " + c.capital + "; time difference: UTC+" + std::to_string(utc),
          c.name + " - People and Society - Languages: " + c.language + " (official) " + std::to_string(official) +
              "%, English " + std::to_string(100 - official) + "%"};
}

ProbeScore Needle(const LanguageModel& model, const Tokenizer& tokenizer, const ProbeOptions& o) {
  ProbeScore probe{"needle"};
  Rng rng(Rng::Mix(o.seed, 3)), others(Rng::Mix(o.seed, 13));
  int right = 0;
  double gain = 0.0;
  for (int i = 0; i < o.needle_items; ++i) {
    const std::vector<std::string> names = DistinctNames(rng, 3 * o.needle_countries);
    std::vector<Country> countries;
    std::vector<std::string> passages;
    for (int c = 0; c < o.needle_countries; ++c) {
      // Languages are named after their country, as many are ("Zorvish").
      countries.push_back({names[3 * c], names[3 * c + 1], names[3 * c + 2] + "ish"});
      for (std::string& p : Passages(countries.back(), rng)) passages.push_back(std::move(p));
    }
    for (size_t k = passages.size(); k > 1; --k) std::swap(passages[k - 1], passages[rng.Below(static_cast<int>(k))]);
    const Country& asked = countries[rng.Below(o.needle_countries)];
    const bool capital = rng.Below(2) == 0;
    std::string prompt;
    for (const std::string& p : passages) prompt += p + "\n";
    const size_t evidence_part = prompt.size();  // the passages
    prompt +=
        "\nQuestion: " +
        (capital ? "What is the capital of " + asked.name + "?" : "What language is spoken in " + asked.name + "?") +
        "\nAnswer:";
    const std::string& answer = capital ? asked.capital : asked.language;
    right += ScoreItem(model, tokenizer, prompt, answer, &probe);
    gain += EvidenceGain(model, tokenizer, prompt, evidence_part, answer, OtherName(others, answer));
  }
  probe.score = probe.count > 0 ? double(right) / probe.count : 0.0;
  probe.evidence_gain = probe.count > 0 ? gain / probe.count : 0.0;
  return probe;
}

}  // namespace

std::vector<ProbeScore> ProbeReading(const LanguageModel& model, const Tokenizer& tokenizer, const ProbeOptions& o) {
  return {Induction(model, tokenizer, o), Copy(model, tokenizer, o), Needle(model, tokenizer, o)};
}

}  // namespace troupe
