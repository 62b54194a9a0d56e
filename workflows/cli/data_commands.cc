// `troupe data qa`, `troupe data reading` and `troupe data renamed` (see data_commands.h).
#include "workflows/cli/data_commands.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <iostream>

#include "core/rng.h"
#include "core/text/corpora.h"
#include "core/text/renamed_prose.h"
#include "games/qa/factbook_qa.h"
#include "games/qa/passage_index.h"
#include "games/qa/reading_documents.h"

namespace troupe::cli {

namespace {

constexpr const char* kQaUsage = R"(
Builds the Factbook QA dataset exactly as ../specs describe it: one passage per
(country, section, field) of the CIA World Factbook, and single-hop, bridge and
comparison questions from world-countries' facts, kept only when an answer
alias appears in a supporting passage, split by country. Writes
passages.jsonl, train.jsonl, test.jsonl and counts.json.

Examples:
  troupe data qa                          # into the data cache (what QA workflows read by default)
  troupe data qa --out data/qa --index    # elsewhere, and build its search index
  troupe data qa --regions europe,africa  # a slice
)";

}  // namespace

void AddDataCommands(CLI::App& app, DataArgs& args) {
  CLI::App* data = app.add_subcommand("data", "build datasets from the cached sources (`troupe data qa`)");
  data->require_subcommand(1);
  CLI::App* qa = data->add_subcommand("qa", "build the Factbook QA dataset");
  qa->footer(kQaUsage);
  qa->add_option("--out", args.out, "folder to write (default: the data cache's qa/factbook)");
  qa->add_option("--regions", args.regions, "Factbook region folders to read (default: all)")->delimiter(',');
  qa->add_option("--test-share", args.test_share, "share of countries in the test split")->check(CLI::Range(0.0, 1.0));
  qa->add_option("--comparisons", args.comparisons, "comparison questions per country")->check(CLI::Range(0, 100));
  qa->add_option("--seed", args.seed, "seed of the split and of comparison pairs");
  qa->add_flag("--index", args.index, "also build (or open) the passages' search index and time it");
  CLI::App* reading =
      data->add_subcommand("reading", "print reading documents, as pretraining with pretrain.reading_share reads them");
  reading->add_option("--count", args.count, "documents to print (default 3)")->check(CLI::Range(1, 100000));
  reading->add_option("--seed", args.seed, "their seed (pretraining derives its own from the workflow's)");
  reading->add_option("--seq-len", args.seq_len, "the training sequence they must fit, in tokens (default 256)")
      ->check(CLI::Range(32, 1 << 16));
  reading->add_option("--facts", args.facts, "the share that are fact lists, as pretrain.reading_fact_share (default 0)")
      ->check(CLI::Range(0.0, 0.8));
  reading->add_option("--countries", args.countries, "countries per passage document, as pretrain.reading_countries (default 3)")
      ->check(CLI::Range(1, 6));
  reading->add_flag("--short", args.short_passages,
                    "each passage its title and its answer's clause, as pretrain.reading_short_passages");
  CLI::App* renamed = data->add_subcommand(
      "renamed", "print windows of a corpus's prose with recurring words renamed, as pretrain.renamed_share mixes in");
  renamed->add_option("--corpus", args.corpus, "the corpus (default moby_dick)")->check(CLI::IsMember(CorpusNames()));
  renamed->add_option("--count", args.count, "windows to print (default 3)")->check(CLI::Range(1, 100000));
  renamed->add_option("--seed", args.seed, "their seed (pretraining derives its own from the workflow's)");
  renamed
      ->add_option("--echo", args.echo,
                   "share of windows followed by one of their sentences again, as pretrain.renamed_echo (default 0)")
      ->check(CLI::Range(0.0, 1.0));
}

int RunDataCommand(CLI::App& app, const DataArgs& args) {
  CLI::App* data = app.get_subcommands().front();
  if (data->get_name() != "data") return -1;
  if (data->get_subcommands().front()->get_name() == "reading") {
    const auto reading = qa::FactbookReadingDocuments({qa::SequenceReadingOptions(
        args.seed, args.seq_len, args.countries, args.short_passages, args.facts)})[0];
    for (int i = 0; i < args.count; ++i) std::cout << reading(static_cast<uint64_t>(i)) << "\n";
    return 0;
  }
  if (data->get_subcommands().front()->get_name() == "renamed") {
    const std::vector<Document> documents = ReadCorpus(args.corpus);
    RenamedProseOptions options;
    options.echo = args.echo;
    RenamedProseWindows windows(documents, args.seed, options);
    for (int i = 0; i < args.count; ++i) std::cout << windows.Next() << "\n\n";
    return 0;
  }
  qa::FactbookQaOptions options = qa::CachedFactbookQaOptions();
  options.regions = args.regions;
  options.test_share = args.test_share;
  options.comparisons_per_country = args.comparisons;
  options.seed = args.seed;
  const std::string out = args.out.empty() ? qa::DefaultQaDataDir() : args.out;
  const auto start = std::chrono::steady_clock::now();
  const qa::FactbookQa dataset = qa::BuildFactbookQa(options);
  qa::WriteFactbookQa(dataset, out);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "troupe data qa: " << out << " (" << seconds << " s)\n" << qa::FactbookQaSummary(dataset);
  if (args.index) {
    auto index = qa::PassageIndex::Open(out + "/passages.jsonl");
    std::cout << "search index: " << index->path() << (index->built_now() ? " built in " : " opened from the cache")
              << (index->built_now() ? std::to_string(index->build_seconds()) + " s" : "") << "\n";
  }
  return 0;
}

}  // namespace troupe::cli
