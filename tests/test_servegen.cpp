// ServeGen clients: reading their two files (and refusing bad ones, naming file, line and field),
// generating their requests window by window as ServeGen's generator does, mixtures of clients,
// and the real Alibaba sample in ../shared.
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "analysis/results.hpp"
#include "cli_helpers.hpp"
#include "shared_data.hpp"
#include "traces/datasets.hpp"
#include "traces/servegen.hpp"
#include "util/error.hpp"
#include "util/h5_columns.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using servesim::test::write;

namespace {

// A client in DIR named NAME: windows of 600 s (busy, idle, busy) and one dataset window.
std::string client(const fs::path& dir, const std::string& name, const std::string& rows,
                   const std::string& dataset = R"({"0": {"input_tokens": "{100: 0.5, 200: 0.5}",)"
                                                R"( "output_tokens": "{10: 1.0}"}})") {
  const fs::path trace = dir / (name + "-trace.csv");
  write(trace, rows);
  write(dir / (name + "-dataset.json"), dataset);
  return trace.string();
}

const char* kRows = "0,1,1,Gamma,1,1\r\n600,0,0,,0,0\r\n1200,0.5,2,Weibull,0.5,1\r\n";

// The Error a load throws, as text ("" when none).
std::string load_error(const std::string& path) {
  try {
    load_servegen_client(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("servegen: windows become arrivals filling each busy window, lengths from its PMFs",
          "[servegen]") {
  const fs::path dir = servesim::test::scratch("servegen");
  const ServeGenClient c = load_servegen_client(client(dir, "chunk-0", kRows));
  REQUIRE(c.windows.size() == 3);
  CHECK(c.window_s == 600);
  CHECK(c.windows[1].dist.empty());
  ServeGenOptions o;
  o.duration_s = 1800;
  o.seed = 7;
  const Workload w = generate_servegen({c}, o);
  // ceil(1 x 600) and ceil(0.5 x 600) gaps, scaled to fill their windows: the last lands on the
  // window's end or just before it.
  CHECK(w.size() >= 898);
  CHECK(w.size() <= 900);
  size_t first = 0, second = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    CHECK(w[i].id == i);
    if (i > 0) CHECK(w[i].arrival_s >= w[i - 1].arrival_s);
    CHECK((w[i].arrival_s < 600 || (w[i].arrival_s >= 1200 && w[i].arrival_s < 1800)));
    (w[i].arrival_s < 600 ? first : second) += 1;
    CHECK((w[i].input_tokens == 100 || w[i].input_tokens == 200));
    CHECK(w[i].output_tokens == 10);
  }
  CHECK(first >= 599);
  CHECK(second >= 299);
  // The same seed, the same requests; another seed, others.
  const Workload again = generate_servegen({c}, o);
  REQUIRE(again.size() == w.size());
  CHECK(again[100].arrival_s == w[100].arrival_s);
  o.seed = 8;
  CHECK(generate_servegen({c}, o)[100].arrival_s != w[100].arrival_s);
  // A span: the busy second window only, shifted to start at 0; twice the rate, twice the count.
  o.start_s = 1200;
  o.duration_s = 600;
  const Workload later = generate_servegen({c}, o);
  CHECK(later.size() >= 299);
  CHECK(later.front().arrival_s >= 0);
  CHECK(later.back().arrival_s < 600);
  o.rate_scale = 2;
  CHECK(generate_servegen({c}, o).size() >= 599);
  // A mixture: both clients' requests, in time order.
  const ServeGenClient other = load_servegen_client(client(dir, "chunk-1", "0,0.1,1,Gamma,1,1\n"));
  o = ServeGenOptions{};
  o.duration_s = 600;
  const size_t alone = generate_servegen({c}, o).size(),
               mixed = generate_servegen({c, other}, o).size();
  CHECK(mixed >= alone + 59);  // ceil(0.1 x 600) more, the last maybe on the window's end
  CHECK(mixed <= alone + 60);
}

TEST_CASE("servegen: bad files are errors naming the file, line and field", "[servegen]") {
  const fs::path dir = servesim::test::scratch("servegen_bad");
  const std::pair<std::string, std::string> rows[] = {
      {"0,1,1,Gamma,1\n", "chunk-0-trace.csv:1: expected 6 fields"},
      {"0,-1,1,Gamma,1,1\n", "chunk-0-trace.csv:1: field 'rate'"},
      {"0,1,1,Lognormal,1,1\n", "chunk-0-trace.csv:1: field 'iat_dist'"},
      {"0,0,0,Gamma,1,1\n", "chunk-0-trace.csv:1: field 'iat_dist'"},
      {"0,1,1,Gamma,0,1\n", "chunk-0-trace.csv:1: field 'arg1'"},
      {"0,1,1,Gamma,1,x\n", "chunk-0-trace.csv:1: field 'arg2'"},
      {"600,1,1,Gamma,1,1\n0,1,1,Gamma,1,1\n", "chunk-0-trace.csv:2: field 'window_start_s'"},
      // Issue 44: windows 1e12 s apart were blamed on --servegen-rate-scale.
      {"0,1,1,Gamma,1,1\n1e12,1,1,Gamma,1,1\n", "chunk-0-trace.csv:2: field 'window_start_s'"},
      {"", "chunk-0-trace.csv: no windows"},
  };
  for (const auto& [text, expected] : rows) {
    INFO(text);
    CHECK_THAT(load_error(client(dir, "chunk-0", text)), Catch::Contains(expected));
  }
  const std::pair<std::string, std::string> datasets[] = {
      {"[1, 2]", "expected an object"},
      {"{\"x\": {}}", "field 'x'"},
      {R"({"0": {"input_tokens": "{a: 1.0}", "output_tokens": "{1: 1.0}"}})",
       "field '0.input_tokens'"},
      {R"({"0": {"input_tokens": "{1: 1.0}", "output_tokens": "{1: 2.0}"}})",
       "field '0.output_tokens'"},
      {R"({"0": {"input_tokens": "{1: 0.5", "output_tokens": "{1: 1.0}"}})", "unterminated"},
      {R"({"0": {"input_tokens": "{1: 0.1}", "output_tokens": "{1: 1.0}"}})", "sum to"},
      {R"({"0": {"input_tokens": 3, "output_tokens": "{1: 1.0}"}})", "a string"},
      {"{\"0\": ", "not JSON"},
  };
  for (const auto& [text, expected] : datasets) {
    INFO(text);
    const std::string e = load_error(client(dir, "chunk-0", "0,1,1,Gamma,1,1\n", text));
    CHECK_THAT(e, Catch::Contains("chunk-0-dataset.json"));
    CHECK_THAT(e, Catch::Contains(expected));
  }
  write(dir / "lonely-trace.csv", "0,1,1,Gamma,1,1\n");
  CHECK_THAT(load_error((dir / "lonely-trace.csv").string()), Catch::Contains("cannot read"));
  CHECK_THAT(load_error((dir / "x.csv").string()), Catch::Contains("chunk-N-trace.csv"));
  // A busy window before any dataset window cannot be generated.
  const ServeGenClient early = load_servegen_client(
      client(dir, "chunk-2", "0,1,1,Gamma,1,1\n",
             R"({"600": {"input_tokens": "{5: 1.0}", "output_tokens": "{5: 1.0}"}})"));
  CHECK_THROWS_WITH(generate_servegen({early}, {}), Catch::Contains("no dataset window"));
  ServeGenOptions bad;
  bad.duration_s = 0;
  CHECK_THROWS_WITH(generate_servegen({early}, bad), Catch::Contains("servegen-duration-s"));
}

TEST_CASE("servegen: the command line's --dataset-name servegen", "[servegen][cli]") {
  const fs::path dir = servesim::test::scratch("servegen_cli");
  const std::string a = client(dir, "chunk-0", kRows);
  const std::string b = client(dir, "chunk-1", "0,0.1,1,Gamma,1,1\n");
  const auto r = servesim::test::call_cli({"run", "--dataset-name", "servegen", "--servegen",
                                           a + "," + b, "--servegen-duration-s", "600"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("servegen, 2 clients"));
  // --request-rate sets the mean rate over the span: 2 req/s over 600 s.
  const auto q = servesim::test::call_cli({"run", "--dataset-name", "servegen", "--servegen", a,
                                           "--servegen-duration-s", "600", "--request-rate", "2"});
  CHECK(q.code == 0);
  CHECK_THAT(q.out, Catch::Contains("1200 requests"));
  const auto e = servesim::test::call_cli({"run", "--dataset-name", "servegen"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("field 'servegen'"));
  const auto f = servesim::test::call_cli(
      {"run", "--dataset-name", "servegen", "--servegen", a, "--input-len", "fixed:5"});
  CHECK(f.code == 2);
  CHECK_THAT(f.err, Catch::Contains("field 'input-len'"));
}

TEST_CASE("servegen [shared]: the Alibaba m-large client's first two hours", "[servegen][shared]") {
  const std::string sub = "traces/servegen/language/m-large/chunk-0-trace.csv";
  if (!servesim::test::have_shared(sub)) return;
  const ServeGenClient c = load_servegen_client(servesim::test::shared_path(sub).string());
  CHECK(c.windows.size() == 2016);  // 14 days of 600-s windows
  CHECK(c.window_s == 600);
  CHECK(c.input_cdf.size() == 56);  // a dataset window every 21,600 s
  ServeGenOptions o;
  o.duration_s = 7200;
  const Workload w = generate_servegen({c}, o);
  // The windows' rates over the two hours, each ceil(rate x 600), less the last of a window.
  double expected = 0;
  for (const ServeGenWindow& x : c.windows) {
    if (x.start_s < 7200) expected += std::ceil(x.rate * 600);
  }
  CHECK(double(w.size()) <= expected);
  CHECK(double(w.size()) >= expected - 12);
  std::set<int32_t> outputs;
  for (const RequestSpec& r : w)
    outputs.insert(r.output_tokens);
  CHECK(outputs.size() > 50);  // lengths drawn from the PMF, not one value
}

TEST_CASE("mixture: client classes each with their own rate, burstiness and lengths",
          "[servegen][mixture]") {
  const std::vector<ClientClass> classes = parse_client_mix(
      "rate=1,burstiness=0.5,input=fixed:1000,output=fixed:10;rate=3,input=fixed:50,output=fixed:"
      "200");
  REQUIRE(classes.size() == 2);
  CHECK(classes[0].burstiness == 0.5);
  CHECK(classes[1].burstiness == 1);
  const Workload w = generate_client_mixture(classes, 400, 1.0, 9);
  REQUIRE(w.size() == 400);  // 100 and 300, by their rates
  size_t long_prompts = 0;
  double last_long = 0, last_short = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    CHECK(w[i].id == i);
    if (i > 0) CHECK(w[i].arrival_s >= w[i - 1].arrival_s);
    const bool is_long = w[i].input_tokens == 1000;
    CHECK(w[i].output_tokens == (is_long ? 10 : 200));
    long_prompts += is_long;
    (is_long ? last_long : last_short) = w[i].arrival_s;
  }
  CHECK(long_prompts == 100);
  // Both classes span about the same time: 100 at 1 req/s and 300 at 3 req/s.
  CHECK(last_long == Approx(last_short).epsilon(0.4));
  // Doubling every rate halves the span.
  const Workload fast = generate_client_mixture(classes, 400, 2.0, 9);
  CHECK(fast.back().arrival_s == Approx(w.back().arrival_s / 2).epsilon(1e-9));
  for (const char* bad :
       {"", "burstiness=2", "rate=0", "rate=x", "rate=1,color=red", "rate=1,input=zipf:3"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_client_mix(bad), Catch::Contains("client-mix"));
  }
  const auto r =
      servesim::test::call_cli({"run", "--dataset-name", "mixture", "--client-mix", "rate=1;rate=2",
                                "--num-requests", "30", "--request-rate", "6"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("6 req/s in all"));
  const auto e = servesim::test::call_cli({"run", "--client-mix", "rate=1"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("--dataset-name mixture"));
}

TEST_CASE("servegen: a PMF entry near 2^24 tokens costs bytes, not a dense 128 MiB CDF",
          "[servegen]") {
  // Item 9: each window holding a 2^24-token PMF entry allocated 256 MB (a 968-byte file used
  // 3.16 GB).
  const TokenCdf one = parse_pmf_literal("{16777216: 1.0}", "f", "x");
  CHECK(one.tokens == std::vector<int32_t>{16777216});
  CHECK(one.cumulative == std::vector<double>{1.0});
  // Duplicate keys add up; zero-probability keys hold no mass; the draws are ServeGen's.
  const TokenCdf cdf =
      parse_pmf_literal("{300: 0.25, 0: 0.0, 100: 0.25, 300: 0.25, 7: 0.25}", "f", "x");
  CHECK(cdf.tokens == std::vector<int32_t>{0, 7, 100, 300});
  CHECK(cdf.cumulative == std::vector<double>{0.0, 0.25, 0.5, 1.0});
  std::string dataset = "{";
  for (int w = 0; w < 40; ++w) {
    dataset += (w ? ", " : "") + std::string("\"") + std::to_string(w * 600) +
               R"(": {"input_tokens": "{16777216: 1.0}", "output_tokens": "{16777215: 1.0}"})";
  }
  dataset += "}";
  const fs::path dir = servesim::test::scratch("servegen_huge_pmf");
  const ServeGenClient c = load_servegen_client(client(dir, "chunk-0", kRows, dataset));
  size_t entries = 0;
  for (const auto& [start, window] : c.input_cdf)
    entries += window.tokens.size() + window.cumulative.size();
  CHECK(entries == 80);  // was 40 x 2^24 doubles
  ServeGenOptions o;
  o.duration_s = 600;
  const Workload w = generate_servegen({c}, o);
  REQUIRE(!w.empty());
  CHECK(w.front().input_tokens == 16777216);
  CHECK(w.front().output_tokens == 16777215);
}

TEST_CASE("mixture: --num-requests is the number of requests, whatever the classes",
          "[servegen][mixture][errors]") {
  // Item 6: 2 instead of 1,000 when the rates' sum overflowed, 9 for 3 classes at n=10, 50 for
  // 50 classes at n=10, 101 for n=100.
  const auto classes = [](int n, const std::string& rate) {
    std::string text;
    for (int k = 0; k < n; ++k)
      text += (k ? ";" : "") + std::string("rate=") + rate;
    return parse_client_mix(text);
  };
  CHECK(generate_client_mixture(classes(3, "1"), 10, 1.0, 1).size() == 10);
  CHECK(generate_client_mixture(classes(50, "1"), 10, 1.0, 1).size() == 10);
  CHECK(generate_client_mixture(parse_client_mix("rate=1;rate=1;rate=2"), 100, 1.0, 1).size() ==
        100);
  CHECK(generate_client_mixture(parse_client_mix("rate=0.5;rate=0.5;rate=1;rate=1"), 7, 1, 2)
            .size() == 7);
  // Largest remainders: 7 requests at rates 1:2 are 2 and 5 (2.33 and 4.67).
  const Workload w = generate_client_mixture(
      parse_client_mix("rate=1,input=fixed:11;rate=2,input=fixed:22"), 7, 1.0, 3);
  REQUIRE(w.size() == 7);
  CHECK(std::count_if(w.begin(), w.end(),
                      [](const RequestSpec& r) { return r.input_tokens == 11; }) == 2);
  // Rates whose sum would overflow are refused; spaces around keys are layout.
  CHECK_THROWS_WITH(parse_client_mix("rate=1e308;rate=1e308"), Catch::Contains("at most 1e9"));
  CHECK(parse_client_mix(" rate = 2 , input = fixed:5 ").front().rate == 2);
  const auto r = servesim::test::call_cli({"run", "--dataset-name", "mixture", "--client-mix",
                                           "rate=1;rate=1;rate=1", "--num-requests", "10"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("10 requests"));
}

TEST_CASE("servegen: empty windows, multimodal chunks, and a client given to --trace",
          "[servegen]") {
  // Issue 25: the public release's reasoning and multimodal chunks failed: an empty "{}" window
  // after the last active one stopped the reader, and a multimodal chunk's per-modality fields
  // read as a missing input_tokens.
  const fs::path dir = servesim::test::scratch("servegen_release");
  CHECK(parse_pmf_literal("{}", "f", "x").empty());
  CHECK(parse_pmf_literal(" { } ", "f", "x").empty());
  const ServeGenClient tail = load_servegen_client(
      client(dir, "chunk-0", "0,1,1,Gamma,1,1\n600,1,1,Gamma,1,1\n",
             R"({"0": {"input_tokens": "{100: 1.0}", "output_tokens": "{10: 1.0}"},)"
             R"( "600": {"input_tokens": "{}", "output_tokens": "{}"}, "1200": {}})"));
  ServeGenOptions o;
  o.duration_s = 1200;
  const Workload w = generate_servegen({tail}, o);
  REQUIRE(w.size() > 1000);
  for (const RequestSpec& r : w)
    CHECK(r.input_tokens == 100);  // windows without data reuse the last with data
  // Multimodal: input = text + image tokens, one draw each (0 images is a draw too).
  const ServeGenClient mm = load_servegen_client(
      client(dir, "chunk-1", "0,1,1,Gamma,1,1\n",
             R"({"0": {"text_tokens": "{100: 1.0}", "image_tokens": "{0: 0.5, 256: 0.5}",)"
             R"( "output_tokens": "{10: 1.0}"}})"));
  CHECK(mm.input_fields == std::vector<std::string>{"image_tokens", "text_tokens"});
  o.duration_s = 600;
  std::set<int32_t> inputs;
  for (const RequestSpec& r : generate_servegen({mm}, o))
    inputs.insert(r.input_tokens);
  CHECK(inputs == std::set<int32_t>{100, 356});
  CHECK_THAT(load_error(client(dir, "chunk-2", "0,1,1,Gamma,1,1\n",
                               R"({"0": {"output_tokens": "{10: 1.0}"}})")),
             Catch::Contains("a *_tokens field per modality"));
  // --trace on a client points to the generator that reads it.
  const auto r = servesim::test::call_cli({"run", "--trace", client(dir, "chunk-3", kRows)});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--dataset-name servegen --servegen"));
}

TEST_CASE("servegen: a multimodal client's input is kept by modality in the requests' columns",
          "[servegen][cli]") {
  // Issue 25: the input is the sum of its modalities' tokens, each kept as a column.
  const fs::path dir = servesim::test::scratch("servegen_modalities");
  const std::string mm = client(
      dir, "chunk-0", "0,1,1,Gamma,1,1\n",
      R"({"0": {"text_tokens": "{100: 0.5, 120: 0.5}", "image_tokens": "{0: 0.5, 256: 0.5}",)"
      R"( "output_tokens": "{10: 1.0}"}})");
  const std::string lang = client(dir, "chunk-1", "0,0.5,1,Gamma,1,1\n");
  ServeGenOptions o;
  o.duration_s = 600;
  const Workload w = generate_servegen({load_servegen_client(mm), load_servegen_client(lang)}, o);
  REQUIRE(w.input_parts.names == std::vector<std::string>{"image_tokens", "text_tokens"});
  REQUIRE(w.input_parts.tokens.size() == 2 * w.size());
  std::set<int32_t> images, texts;
  for (size_t i = 0; i < w.size(); ++i) {
    const int32_t image = w.input_parts.at(i, 0), text = w.input_parts.at(i, 1);
    CHECK(image + text == w[i].input_tokens);  // the parts sum to the input
    images.insert(image);
    texts.insert(text);
  }
  CHECK(images == std::set<int32_t>{0, 256});  // the language client's rows have no image
  CHECK(texts == std::set<int32_t>{100, 120, 200});
  // A language-only workload has no parts.
  CHECK(generate_servegen({load_servegen_client(lang)}, o).input_parts.empty());
  // The CLI writes them as columns of --requests-csv and of --out's requests group.
  const std::string csv = (dir / "requests.csv").string(), h5 = (dir / "r.h5").string();
  const auto r = servesim::test::call_cli({"run", "--dataset-name", "servegen", "--servegen", mm,
                                           "--servegen-duration-s", "600", "--requests-csv", csv,
                                           "--out", h5, "--no-steps"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains(", input image_tokens "));  // means, in the workload line
  std::ifstream in(csv);
  std::string header, row;
  std::getline(in, header);
  CHECK_THAT(header, Catch::EndsWith(",status,input_image_tokens,input_text_tokens"));
  int rows = 0;
  while (std::getline(in, row)) {
    std::vector<std::string> f;
    std::stringstream cells(row);
    for (std::string c; std::getline(cells, c, ',');)
      f.push_back(c);
    REQUIRE(f.size() == 17);
    CHECK(std::stoi(f[15]) + std::stoi(f[16]) == std::stoi(f[2]));
    ++rows;
  }
  CHECK(rows > 100);
  H5::H5File file(h5, H5F_ACC_RDONLY);
  H5::Group g = file.openGroup("runs/" + servesim::results_runs(h5).front() + "/requests");
  const auto input = h5::read_column<int64_t>(g, "input_tokens", hsize_t(rows));
  const auto image = h5::read_column<int64_t>(g, "input_image_tokens", hsize_t(rows));
  const auto text = h5::read_column<int64_t>(g, "input_text_tokens", hsize_t(rows));
  for (int i = 0; i < rows; ++i)
    CHECK(image[size_t(i)] + text[size_t(i)] == input[size_t(i)]);
  // A modality's name becomes a column's: only letters, digits and '_'.
  CHECK_THAT(
      load_error(client(dir, "chunk-2", "0,1,1,Gamma,1,1\n",
                        R"({"0": {"te,xt_tokens": "{1: 1.0}", "output_tokens": "{10: 1.0}"}})")),
      Catch::Contains("only letters, digits and '_'"));
}
