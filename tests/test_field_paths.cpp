// Field paths (util/field_path.hpp) and their spellings (cli/field_spellings.cpp): every path
// has a flag, errors made below cli/ carry the path and name the flag, references in a message
// are spelled, and an unknown text passes unchanged (issue 45).
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "analysis/run_spec.hpp"
#include "cli/field_spellings.hpp"
#include "cli/run_flag_table.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"
#include "util/field_path.hpp"

using namespace servesim;

TEST_CASE("every field path is declared once and has one flag", "[field_paths]") {
  std::set<std::string> paths, flags;
  for (const char* p : field::kAll) {
    INFO(p);
    CHECK(paths.insert(p).second);
    const std::string flag = cli::field_flag(p);
    CHECK_FALSE(flag.empty());
    CHECK(flags.insert(flag).second);
    CHECK(std::string(p).find('.') != std::string::npos);
  }
  CHECK(paths.size() > 100);
}

TEST_CASE("a run flag's path spells back to the flag", "[field_paths]") {
  // Each path whose flag is a run flag: parse_run_flag knows the flag by that name.
  const auto names = cli::run_flag_names();
  const std::set<std::string> run(names.begin(), names.end());
  int matched = 0;
  for (const char* p : field::kAll) {
    if (run.count(cli::field_flag(p))) ++matched;
  }
  CHECK(matched > 80);
  CHECK(cli::field_flag(field::kMaxNumBatchedTokens) == "max-num-batched-tokens");
  CHECK(cli::field_flag(field::kKvOffloadingSize) == "kv-offloading-size");
  CHECK(cli::field_flag(field::kRequestRate) == "request-rate");
}

TEST_CASE("each run flag's row carries its own path, which spells back to it", "[field_paths]") {
  // One table: a run flag's path is in its row (cli/run_flag_table.cpp); two rows sharing a path
  // would spell one of them as the other.
  std::set<std::string> declared(std::begin(field::kAll), std::end(field::kAll)), seen;
  for (const cli::run_flag_table::RunFlag& f : cli::run_flag_table::run_flags()) {
    INFO(f.name);
    CHECK(declared.count(f.path) == 1);
    CHECK(seen.insert(f.path).second);
    CHECK(cli::field_flag(f.path) == f.name);
  }
  CHECK(seen.size() == cli::run_flag_names().size());
}

TEST_CASE("an error below cli names its path, the speller names the flag", "[field_paths]") {
  // tests/main.cpp installs the speller, as every command does.
  const Error e(field::kMaxNumSeqs, "must be >= " + field::ref(field::kMaxNumBatchedTokens));
  CHECK(e.path() == "scheduler.max_num_seqs");
  CHECK(e.field() == "max-num-seqs");
  CHECK(e.reason() == "must be >= --max-num-batched-tokens");
  CHECK(std::string(e.what()) == "field 'max-num-seqs': must be >= --max-num-batched-tokens");
  // A reference names the flag of its own path: an alias is a path of its own (--tp).
  CHECK(spell_refs("raise {{parallel.tp}} or {{parallel.tensor_parallel_size}}") ==
        "raise --tp or --tensor-parallel-size");
  // A key inside a JSON-valued setting, and texts that are no path, pass as they are.
  CHECK(Error("speculative.config.method", "x").field() == "speculative-config.method");
  CHECK(Error("arch", "x").field() == "arch");
  CHECK(spell_refs("{{no.such_path}} and {\"a\": {\"b\": 1}}") ==
        "{{no.such_path}} and {\"a\": {\"b\": 1}}");
  // The user's own spelling replaces the field; the path stays.
  const Error named = e.named("max_num_seqs");
  CHECK(named.field() == "max_num_seqs");
  CHECK(named.path() == "scheduler.max_num_seqs");
}

TEST_CASE("a check below cli reports the path of the setting at fault", "[field_paths]") {
  RunSpec s;
  s.max_num_seqs = -1;
  try {
    check_flags(s);
    FAIL("a negative max_num_seqs passed");
  } catch (const Error& e) {
    CHECK(e.path() == field::kMaxNumSeqs);
    CHECK(e.field() == "max-num-seqs");
  }
}
