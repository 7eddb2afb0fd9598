// Outputs that never destroy data (issue 23): one writer for every file servesim writes, paths
// checked before any work, and the second round of hostile input's findings on outputs. Each
// case failed before its fix.
#include <catch2/catch.hpp>

#include <csignal>
#include <sstream>
#include <streambuf>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.hpp"
#include "cli_helpers.hpp"
#include "util/error.hpp"
#include "util/output_file.hpp"

namespace fs = std::filesystem;
using servesim::test::call_cli;
using servesim::test::refused;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::write;

namespace {

// The names in DIR, sorted.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// While alive, files this process writes may not grow past BYTES: a write beyond gets EFBIG, as
// a full disk gets ENOSPC (SIGXFSZ ignored, so the write fails instead of killing the process).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit r = old_;
    r.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &r);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

// A stream whose every write fails, as stdout on a full disk or a closed pipe.
struct FailingBuf : std::streambuf {
  int overflow(int) override { return traits_type::eof(); }
  std::streamsize xsputn(const char*, std::streamsize) override { return 0; }
};

const std::vector<std::string> kSmallRun = {"--num-requests", "30", "--request-rate", "10"};

std::vector<std::string> run_with(std::vector<std::string> extra) {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), kSmallRun.begin(), kSmallRun.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("outputs: a full disk is one error with its errno, no crash, nothing left behind",
          "[outputs][cli]") {
  // Item 1: the HDF5 writers crashed in H5Fclose (exit 139) on ENOSPC, leaving FILE.tmp.
  const fs::path dir = scratch("outputs_full_disk");
  write(dir / "old.h5", "the user's previous results");
  write(dir / "old.json", "{}");
  const std::vector<std::string> before = names_in(dir);
  {
    const FileSizeLimit limit(4096);
    for (const auto& args :
         {run_with({"--out", (dir / "old.h5").string()}),
          run_with({"--out", (dir / "new.h5").string(), "--no-steps"}),
          std::vector<std::string>{"compare", "--num-requests", "30", "--out",
                                   (dir / "new.h5").string()},
          std::vector<std::string>{"capacity", "--num-requests", "20", "--slo", "ttft_p50_ms=500",
                                   "--rate-max", "4", "--out", (dir / "cap.h5").string()},
          std::vector<std::string>{"trace", "synth", "--num-requests", "5000", "-o",
                                   (dir / "t.h5").string()},
          std::vector<std::string>{"run", "--num-requests", "400", "--requests-csv",
                                   (dir / "r.csv").string()}}) {
      const auto r = call_cli(args);
      INFO(r.err);
      CHECK(r.code == 2);
      CHECK_THAT(r.err, Catch::Contains("cannot write: File too large"));
      CHECK_THAT(r.err, !Catch::Contains("H5"));
    }
  }
  CHECK(names_in(dir) == before);  // no temp file, no half file
  CHECK(slurp(dir / "old.h5") == "the user's previous results");
}

TEST_CASE("outputs: only a regular file is replaced, links are written through, devices refused",
          "[outputs][cli]") {
  // Item 2: FILE.tmp was renamed over whatever sat at the path.
  const fs::path dir = scratch("outputs_targets");
  // A symlink is followed to the file it names, and stays a symlink.
  fs::create_directories(dir / "real");
  fs::create_symlink("real/summary.json", dir / "link.json");
  REQUIRE(call_cli(run_with({"--json", (dir / "link.json").string()})).code == 0);
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK_THAT(slurp(dir / "real" / "summary.json"), Catch::Contains("\"ttft_ms\""));
  // A user's own FILE.tmp is neither overwritten nor deleted.
  write(dir / "out.h5.tmp", "mine");
  write(dir / "out.csv.tmp", "mine too");
  REQUIRE(call_cli(run_with({"--out", (dir / "out.h5").string()})).code == 0);
  REQUIRE(call_cli({"trace", "synth", "--num-requests", "5", "-o", (dir / "s.h5").string()}).code ==
          0);
  REQUIRE(call_cli({"sweep", "--num-requests", "10", "--seed", "1,2", "--jobs", "1", "--out",
                    (dir / "sw.h5").string(), "--csv", (dir / "out.csv").string()})
              .code == 0);
  CHECK(slurp(dir / "out.h5.tmp") == "mine");
  CHECK(slurp(dir / "out.csv.tmp") == "mine too");
  // A FIFO and a folder are refused before anything runs, and stay what they were.
  REQUIRE(mkfifo((dir / "pipe").c_str(), 0600) == 0);
  refused(run_with({"--out", (dir / "pipe").string()}), "is a FIFO");
  refused(run_with({"--json", (dir / "pipe").string()}), "is a FIFO");
  refused({"trace", "synth", "-o", (dir / "pipe").string()}, "is a FIFO");
  CHECK(fs::is_fifo(dir / "pipe"));
  refused(run_with({"--requests-csv", (dir / "real").string()}), "is a directory");
  CHECK(fs::is_directory(dir / "real"));
  // A device node is refused (checked without writing: as root, /dev/null was replaced).
  CHECK_THROWS_WITH(servesim::output_target("/dev/null"), Catch::Contains("is a device node"));
  CHECK(fs::is_character_file("/dev/null"));
  // A missing folder, and a read-only file, are named.
  refused(run_with({"--json", (dir / "nowhere" / "x.json").string()}), "does not exist");
  // The permissions of a replaced file are kept.
  write(dir / "kept.json", "{}");
  fs::permissions(dir / "kept.json",
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  REQUIRE(call_cli(run_with({"--json", (dir / "kept.json").string()})).code == 0);
  CHECK((fs::status(dir / "kept.json").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
}

TEST_CASE("outputs: an output that is an input, or another output, is refused before any work",
          "[outputs][cli]") {
  // Item 4: the input was overwritten, exit 0.
  const fs::path dir = scratch("outputs_same_file");
  const std::string trace =
      "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,20\n0.5,300,40\n1,200,30\n";
  write(dir / "t.csv", trace);
  const std::string t = (dir / "t.csv").string();
  refused({"run", "--trace", t, "--requests-csv", t}, "is also the input --trace");
  // By inode, not by spelling: another path to the same file, and a hard link.
  refused({"run", "--trace", t, "--json", (dir / "." / "t.csv").string()}, "--trace");
  fs::create_hard_link(dir / "t.csv", dir / "hard.csv");
  refused({"run", "--trace", t, "--json", (dir / "hard.csv").string()}, "--trace");
  CHECK(slurp(dir / "t.csv") == trace);
  // An .h5 trace under --out.
  REQUIRE(call_cli({"trace", "import", t, "-o", (dir / "t.h5").string()}).code == 0);
  const std::string h5 = slurp(dir / "t.h5");
  refused({"run", "--trace", (dir / "t.h5").string(), "--out", (dir / "t.h5").string()},
          "is also the input --trace");
  refused({"trace", "import", (dir / "t.h5").string(), "-o", (dir / "t.h5").string()},
          "is also the input --input");
  CHECK(slurp(dir / "t.h5") == h5);
  // A config file, a GPU file.
  write(dir / "c.ini", "num-requests = 20\n");
  refused({"run", "--config", (dir / "c.ini").string(), "--json", (dir / "c.ini").string()},
          "is also the input --config");
  CHECK(slurp(dir / "c.ini") == "num-requests = 20\n");
  const std::string gpu =
      "name = g\narch = hopper\nbf16_tflops = 989\nhbm_gib = 80\nhbm_gb_per_s = 3350\n"
      "interconnect_gb_per_s = 450\n";
  write(dir / "g.ini", gpu);
  refused({"run", "--gpu-file", (dir / "g.ini").string(), "--num-requests", "10", "--json",
           (dir / "g.ini").string()},
          "is also the input --gpu-file");
  CHECK(slurp(dir / "g.ini") == gpu);
  // validate's ground truth, calibrate's step log, diagnose's baseline, a check spec's baseline.
  write(dir / "gt.csv", "experiment\n");
  refused({"validate", (dir / "gt.csv").string(), "--csv", (dir / "gt.csv").string()},
          "is also the input --file");
  write(dir / "steps.csv", "prefill_tokens\n");
  refused(
      {"calibrate", "--step-log", (dir / "steps.csv").string(), "-o", (dir / "steps.csv").string()},
      "is also the input --step-log");
  REQUIRE(call_cli(run_with({"--requests-csv", (dir / "base.csv").string()})).code == 0);
  const std::string base = slurp(dir / "base.csv");
  refused({"diagnose", (dir / "base.csv").string(), (dir / "base.csv").string(), "--json",
           (dir / "base.csv").string()},
          "is also the input --baseline");
  CHECK(slurp(dir / "base.csv") == base);
  const std::string spec =
      "baseline = spec.ini\n[tolerance]\nttft_ms.p50 = +10%\n[scenario.a]\n"
      "num-requests = 10\n";
  write(dir / "spec.ini", spec);
  refused({"check", (dir / "spec.ini").string(), "--update"}, "is also the input --spec");
  CHECK(slurp(dir / "spec.ini") == spec);
  // Two outputs on one path.
  refused(run_with({"--out", (dir / "x").string(), "--json", (dir / "x").string()}),
          "is the same file as --");
  refused({"capacity", "--num-requests", "20", "--slo", "ttft_p50_ms=500", "--csv",
           (dir / "z").string(), "--out", (dir / "z").string()},
          "is the same file as --");
  refused({"sweep", "--seed", "1,2", "--out", (dir / "w").string(), "--csv", (dir / "w").string()},
          "is the same file as --out");
  refused({"sweep", "--seed", "1,2", "--out", (dir / "w").string(), "--csv",
           (dir / "w.journal").string()},
          "is the same file as --csv");
  CHECK(!fs::exists(dir / "x"));
  CHECK(!fs::exists(dir / "z"));
  CHECK(!fs::exists(dir / "w"));
}

TEST_CASE("outputs: a report that cannot be written fails the command", "[outputs][cli]") {
  // Item 20: a failing stdout (closed pipe, full disk) was ignored: exit 0.
  FailingBuf buf;
  std::ostream out(&buf);
  std::ostringstream err;
  const char* argv[] = {"servesim", "run", "--num-requests", "10"};
  CHECK(servesim::run_cli(4, argv, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("cannot write the report"));
}

TEST_CASE("outputs: an input that is a folder or a device says so", "[outputs][cli]") {
  // Item 22: a directory given as an input file said "cannot open: no such file".
  const fs::path dir = scratch("outputs_input_kinds");
  fs::create_directories(dir / "d");
  const std::string d = (dir / "d").string();
  refused({"run", "--trace", d}, "is a directory");
  refused({"run", "--config", d}, "is a directory");
  refused({"diagnose", d, d}, "is a directory");
  refused({"run", "--gpu-file", d}, "is a directory");
  REQUIRE(mkfifo((dir / "p").c_str(), 0600) == 0);
  refused({"diagnose", (dir / "p").string(), (dir / "p").string()}, "is a FIFO");
  CHECK(servesim::input_file_problem((dir / "missing").string()) == "cannot open: no such file");
  CHECK(servesim::input_file_problem("/dev/null") ==
        "cannot read: is a device node (expected a regular file)");
  // An output's problem is found before the simulation, not after the earlier outputs.
  refused(run_with({"--json", (dir / "s.json").string(), "--out", d}), "is a directory");
  CHECK(!fs::exists(dir / "s.json"));
}

TEST_CASE("outputs: the writer replaces atomically and reports every errno with the path",
          "[outputs]") {
  const fs::path dir = scratch("outputs_writer");
  const std::string f = (dir / "a.txt").string();
  servesim::write_output_file(f, "one");
  servesim::write_output_file(f, "two");
  CHECK(slurp(f) == "two");
  CHECK(names_in(dir) == std::vector<std::string>{"a.txt"});
  {
    const FileSizeLimit limit(2);
    CHECK_THROWS_WITH(servesim::write_output_file(f, "three"),
                      Catch::Contains("a.txt: cannot write: File too large"));
  }
  CHECK(slurp(f) == "two");
  CHECK(names_in(dir) == std::vector<std::string>{"a.txt"});
  // A dangling symlink creates the file it names.
  fs::create_symlink("b.txt", dir / "to_b");
  servesim::write_output_file((dir / "to_b").string(), "b");
  CHECK(slurp(dir / "b.txt") == "b");
  CHECK(fs::is_symlink(dir / "to_b"));
  // A loop of links is an error, not a hang.
  fs::create_symlink("loop2", dir / "loop1");
  fs::create_symlink("loop1", dir / "loop2");
  CHECK_THROWS_WITH(servesim::write_output_file((dir / "loop1").string(), "x"),
                    Catch::Contains("Too many levels of symbolic links"));
  // A read-only folder (root may write anyway: checked only when the system refuses).
  fs::create_directories(dir / "ro");
  fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  if (access((dir / "ro").c_str(), W_OK) != 0) {
    CHECK_THROWS_WITH(servesim::write_output_file((dir / "ro" / "x").string(), "x"),
                      Catch::Contains("Permission denied"));
  }
  fs::permissions(dir / "ro", fs::perms::owner_all);
}
