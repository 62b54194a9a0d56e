// The tokenizer's and the language model's commands.
#include "workflows/cli/text_commands.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include "core/base/errors.h"
#include "core/base/registry.h"
#include "core/text/bpe_trainer.h"
#include "core/text/corpora.h"
#include "core/text/tokenizer_folder.h"
#include "workflows/cli/lm_commands.h"

namespace troupe::cli {

std::string ReadTextInput(const std::string& file) {
  std::ostringstream buf;
  if (file.empty() || file == "-") {
    buf << std::cin.rdbuf();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(file + ": cannot open");
    buf << in.rdbuf();
  }
  return buf.str();
}

namespace {

int Encode(const TextArgs& a) {
  const Tokenizer t = LoadTokenizer(a.tokenizer);
  const std::vector<int> ids = t.Encode(ReadTextInput(a.file), !a.no_special);
  if (a.json) {
    std::cout << nlohmann::json(ids).dump() << "\n";
    return 0;
  }
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
  return 0;
}

int Decode(const TextArgs& a) {
  const Tokenizer t = LoadTokenizer(a.tokenizer);
  const std::string text = ReadTextInput(a.file);
  std::vector<int> ids;
  if (!text.empty() && text.find('[') != std::string::npos) {
    try {
      ids = nlohmann::json::parse(text).get<std::vector<int>>();
    } catch (const nlohmann::json::exception& e) {
      throw Error("ids are neither a JSON list nor whitespace-separated numbers: " + std::string(e.what()));
    }
  } else {
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
      try {
        size_t used = 0;
        ids.push_back(std::stoi(word, &used));
        if (used != word.size()) throw std::invalid_argument(word);
      } catch (const std::exception&) {
        throw Error("'" + word + "' is not a token id");
      }
    }
  }
  std::cout << t.Decode(ids);
  if (isatty(STDOUT_FILENO)) std::cout << "\n";
  return 0;
}

int Train(const TextArgs& a) {
  if (a.corpora.empty() && a.text_files.empty()) throw Error("tokenizer train: give --corpus NAME or --text FILE");
  BpeTrainerOptions options;
  options.vocab_size = a.vocab_size;
  BpeTrainer trainer(options);
  const auto t0 = std::chrono::steady_clock::now();
  size_t bytes = 0, documents = 0;
  for (const std::string& name : a.corpora) {
    for (const Document& d : ReadCorpus(name)) {
      if (IsHeldOut(d, a.heldout_every)) continue;  // the held-out split stays unseen
      trainer.Add(d.text);
      bytes += d.text.size();
      ++documents;
    }
    std::cerr << "read " << name << ": " << documents << " documents, " << bytes / 1000000.0 << " MB so far\n";
  }
  for (const std::string& f : a.text_files) {
    const std::string text = ReadTextInput(f);
    trainer.Add(text);
    bytes += text.size();
    ++documents;
  }
  std::cerr << trainer.distinct_pieces() << " distinct pieces; learning " << a.vocab_size << " tokens\n";
  const bool tty = isatty(STDERR_FILENO);
  TokenizerModel model = trainer.Train([&](int done, int wanted) {
    if (tty) std::cerr << "\rmerges " << done << "/" << wanted << std::flush;
  });
  if (tty) std::cerr << "\n";
  const Tokenizer tokenizer(std::move(model));
  WriteTokenizerFolder(tokenizer, a.out);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "wrote " << a.out << "/tokenizer.json: " << tokenizer.vocab_size() << " tokens ("
            << tokenizer.model().merges.size() << " merges) from " << documents << " documents, " << bytes
            << " bytes, in " << static_cast<int>(s) << " s\n";
  return 0;
}

}  // namespace

void AddTextCommands(CLI::App& app, TextArgs& a) {
  CLI::App* tok = app.add_subcommand("tokenizer", "encode, decode with a tokenizer.json, or train one");
  tok->require_subcommand(1);
  CLI::App* encode = tok->add_subcommand("encode", "print the token ids of a text (standard input by default)");
  encode->add_option("--tokenizer", a.tokenizer, "a tokenizer.json, or a model folder holding one")->required();
  encode->add_option("--file", a.file, "read the text from this file");
  encode->add_flag("--json", a.json, "print a JSON list");
  encode->add_flag("--no-special", a.no_special, "read special tokens (<|im_start|>, ...) as plain text");
  CLI::App* decode = tok->add_subcommand("decode", "print the text of token ids (a JSON list or numbers)");
  decode->add_option("--tokenizer", a.tokenizer, "a tokenizer.json, or a model folder holding one")->required();
  decode->add_option("--file", a.file, "read the ids from this file");
  CLI::App* train = tok->add_subcommand("train", "learn a byte-level BPE vocabulary; writes tokenizer.json");
  train->add_option("--corpus", a.corpora, "a corpus to learn from: " + JoinNames(CorpusNames()) + " (repeatable)")
      ->delimiter(',');
  train->add_option("--text", a.text_files, "a text file to learn from (repeatable)");
  train->add_option("--vocab-size", a.vocab_size, "tokens in all, special tokens included (default 8192)");
  train->add_option("--heldout-every", a.heldout_every,
                    "leave one document in N out, as pretraining's held-out split does (default 50)");
  train->add_option("--out", a.out, "folder for tokenizer.json and tokenizer_config.json")->required();
  AddLmCommands(app, a);
}

int RunTextCommand(CLI::App& app, const TextArgs& a) {
  CLI::App* command = app.get_subcommands().front();
  if (command->get_name() == "tokenizer") {
    const std::string sub = command->get_subcommands().front()->get_name();
    if (sub == "encode") return Encode(a);
    if (sub == "decode") return Decode(a);
    return Train(a);
  }
  if (command->get_name() == "lm") return RunLmCommand(*command->get_subcommands().front(), a);
  return -1;
}

}  // namespace troupe::cli
