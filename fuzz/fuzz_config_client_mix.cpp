// Fuzz target: a client mix read from an INI file by --config (cli/config_file.hpp on top of
// util/ini.hpp), as `run --config` and check specs read it: comments, quotes and the mix's own
// ';' between classes. An accepted mix gives exactly the requests asked for.
#include <boost/program_options.hpp>

#include "cli/config_file.hpp"
#include "fuzz_common.hpp"
#include "traces/datasets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  namespace po = boost::program_options;
  const std::string path =
      fuzz::input_file(data, size, ".ini");  // e.g. "client-mix = rate=1;rate=2 ; note"
  fuzz::expect_errors([&] {
    std::string mix;
    int64_t n = 20;
    po::options_description desc;
    desc.add_options()("client-mix", po::value(&mix))("num-requests", po::value(&n));
    po::variables_map vm;
    cli::store_ini_file(path, desc, vm);
    po::notify(vm);
    if (mix.empty() || n < 1 || n > 500) return;
    const Workload w = generate_client_mixture(parse_client_mix(mix), n, 1, 3);
    fuzz::fuzz_assert(w.size() == size_t(n), "exactly --num-requests requests");
  });
  return 0;
}
