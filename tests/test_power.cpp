// Energy and power (issue 48): a step's draw by hand (models/power.hpp), a run's energy as its
// steps' draw integrated with idle between them, a fleet's as its replicas', GPU files' power keys
// and their hostile values, capacity's --energy-cost-per-kwh and --pue columns, and the energy
// per output token against ML.ENERGY's published vLLM measurements.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capacity_fixtures.hpp"
#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "models/gpu.hpp"
#include "models/hardware.hpp"
#include "models/power.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::refused;
using servesim::test::run_with_flags;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::write;

TEST_CASE("power: a step's draw by hand", "[power]") {
  const GpuSpec h100 = find_gpu("h100-sxm");
  const HardwareParams hw = hardware_params(GpuArch::kHopper);
  const int gpus = 2;
  const PowerModel p(h100, hw, gpus);
  REQUIRE(p.known());
  const double idle = h100.idle_w, span = h100.tdp_w - h100.idle_w;
  const double share = default_hbm_power_share(GpuArch::kHopper);
  CHECK(p.idle_w() == Approx(gpus * idle));
  StepCost c;
  CHECK(p.step_w(c) == Approx(gpus * idle));  // no time: idle
  c.seconds = 0.010;
  CHECK(p.step_w(c) == Approx(gpus * idle));  // a step that does nothing
  // GEMMs at the fit's best compute rate on both GPUs draw the TDP; twice the FLOPs, no more.
  c.flops = gpus * h100.peak_flops() * hw.linear_compute_efficiency * c.seconds;
  CHECK(p.step_w(c) == Approx(gpus * h100.tdp_w));
  c.flops *= 2;
  CHECK(p.step_w(c) == Approx(gpus * h100.tdp_w));
  // HBM streamed at the fit's best rate: the share of the span; half the bytes, half of it.
  c.flops = 0;
  c.bytes = gpus * h100.hbm_bytes_per_s() * hw.linear_memory_efficiency * c.seconds;
  CHECK(p.step_w(c) == Approx(gpus * (idle + share * span)));
  c.bytes /= 2;
  CHECK(p.step_w(c) == Approx(gpus * (idle + share * span / 2)));
  CHECK(p.step_excess_j(c) == Approx(gpus * share * span / 2 * c.seconds));
  // FP8 FLOPs at BF16's rate (StepCost::bf16_flops) load the GPU as their time does: the GEMMs
  // above at the FP8 rate draw what half as many BF16 FLOPs would.
  StepCost fp8 = c;
  fp8.bytes = 0;
  fp8.flops = gpus * h100.fp8_peak_flops() * hw.linear_compute_efficiency * c.seconds / 2;
  fp8.bf16_flops = fp8.flops * h100.peak_flops() / h100.fp8_peak_flops();
  CHECK(p.step_w(fp8) == Approx(gpus * (idle + span / 2)));
  // Both: they add, up to the cap.
  c.flops = gpus * h100.peak_flops() * hw.linear_compute_efficiency * c.seconds / 4;
  CHECK(p.step_w(c) == Approx(gpus * (idle + span * (0.25 + share / 2))));
  // Physically bounded: each share in [0, 1], idle under the TDP, for every catalogue GPU.
  for (const GpuSpec& g : gpu_catalogue()) {
    INFO(g.name);
    CHECK(g.idle_w > 0);
    CHECK(g.idle_w < g.tdp_w);
    const double s = default_hbm_power_share(g.arch);
    CHECK(s >= 0);
    CHECK(s <= 1);
  }
  // A GPU without a TDP has no power model.
  GpuSpec unknown = h100;
  unknown.tdp_w = NAN;
  CHECK_FALSE(PowerModel(unknown, hw, 1).known());
}

TEST_CASE("power: a run's energy is its steps' draw integrated, idle between them", "[power]") {
  // 1 req/s of short answers leaves the GPU idle between steps part of the time.
  const PointRun p = run_with_flags({{"model", "llama-3.1-8b"},
                                     {"gpu", "h100-sxm"},
                                     {"num-prompts", "100"},
                                     {"request-rate", "1"},
                                     {"input-len", "lognormal:800:0.8:16:4000"},
                                     {"output-len", "lognormal:30:0.8:4:200"}});
  const RunResult& r = p.run;
  const RunSummary& s = r.summary;
  const EnergySummary& e = s.energy;
  REQUIRE(std::isfinite(e.energy_j));
  REQUIRE(!r.steps.empty());
  const double idle_w = r.config.gpu.idle_w;
  CHECK(e.idle_power_w == Approx(idle_w));
  double busy_s = 0, excess_j = 0, max_step_w = 0;
  for (const StepRecord& st : r.steps) {
    busy_s += st.duration_s;
    excess_j += (st.power_w - idle_w) * st.duration_s;
    max_step_w = std::max(max_step_w, st.power_w);
    CHECK(st.power_w >= idle_w);
    CHECK(st.power_w <= r.config.gpu.tdp_w * (1 + 1e-12));
  }
  REQUIRE(busy_s < 0.9 * s.makespan_s);  // idle time to count
  CHECK(e.energy_j == Approx(idle_w * s.makespan_s + excess_j).epsilon(1e-9));
  CHECK(e.mean_power_w == Approx(e.energy_j / s.makespan_s));
  CHECK(e.mean_power_w > idle_w);
  // The peak window, from the steps: 1-second windows from the first arrival, the last
  // part-window joined to the one before.
  double first_arrival_s = INFINITY;
  for (const RequestRecord& q : r.requests)
    first_arrival_s = std::min(first_arrival_s, q.arrival_s);
  const size_t windows = std::max<size_t>(1, size_t(s.makespan_s / kPowerWindowS));
  std::vector<double> joules(windows, 0.0);
  for (const StepRecord& st : r.steps) {
    // Split each step over the windows it spans, at 1 us.
    const int pieces = std::max(1, int(std::ceil(st.duration_s * 1e6)));
    for (int k = 0; k < pieces; ++k) {
      const double mid = st.start_s + (k + 0.5) * st.duration_s / pieces - first_arrival_s;
      const size_t w = std::min(windows - 1, size_t(std::max(0.0, mid) / kPowerWindowS));
      joules[w] += (st.power_w - idle_w) * st.duration_s / pieces;
    }
  }
  double peak_w = 0;
  for (size_t w = 0; w < windows; ++w) {
    const double seconds =
        w + 1 == windows ? s.makespan_s - double(w) * kPowerWindowS : kPowerWindowS;
    peak_w = std::max(peak_w, idle_w + joules[w] / seconds);
  }
  CHECK(e.peak_power_w == Approx(peak_w).epsilon(1e-4));
  CHECK(e.peak_power_w >= e.mean_power_w);
  CHECK(e.peak_power_w <= max_step_w);
  CHECK(e.j_per_output_token == Approx(e.energy_j / double(s.output_tokens)));
  CHECK(e.j_per_request == Approx(e.energy_j / double(s.completed)));
}

TEST_CASE("power: a fleet's energy is its replicas' steps with every GPU's idle", "[power]") {
  const PointRun p = run_with_flags({{"model", "llama-3.1-8b"},
                                     {"gpu", "h100-sxm"},
                                     {"tp", "2"},
                                     {"num-replicas", "3"},
                                     {"num-prompts", "300"},
                                     {"request-rate", "12"}},
                                    false);
  const RunResult& r = p.run;
  const EnergySummary& fleet = r.summary.energy;
  REQUIRE(r.fleet.replicas.size() == 3);
  CHECK(fleet.idle_power_w == Approx(3 * 2 * r.config.gpu.idle_w));
  // Each replica's GPUs draw until the fleet's run ends: the replicas' energies and mean powers
  // add up to the fleet's.
  double energy_j = 0, mean_w = 0;
  for (const RunSummary& q : r.fleet.replicas) {
    CHECK(q.energy.idle_power_w == Approx(2 * r.config.gpu.idle_w));
    CHECK(q.energy.peak_power_w <= 2 * r.config.gpu.tdp_w);
    CHECK(q.energy.mean_power_w == Approx(q.energy.energy_j / r.summary.makespan_s));
    energy_j += q.energy.energy_j;
    mean_w += q.energy.mean_power_w;
  }
  CHECK(fleet.energy_j == Approx(energy_j).epsilon(1e-9));
  CHECK(fleet.mean_power_w == Approx(mean_w).epsilon(1e-9));
  CHECK(fleet.peak_power_w <= 3 * 2 * r.config.gpu.tdp_w);

  // A replica that gets no request draws idle for the whole run all the same.
  const PointRun few = run_with_flags(
      {{"model", "llama-3.1-8b"}, {"num-replicas", "4"}, {"num-prompts", "2"}}, false);
  REQUIRE(few.run.fleet.replicas.size() == 4);
  double sum_j = 0;
  for (const RunSummary& q : few.run.fleet.replicas) {
    CHECK(std::isfinite(q.energy.energy_j));
    CHECK(q.energy.peak_power_w >= q.energy.idle_power_w);
    sum_j += q.energy.energy_j;
  }
  CHECK(few.run.fleet.replicas.back().energy.energy_j ==
        Approx(few.run.config.gpu.idle_w * few.run.summary.makespan_s));
  CHECK(few.run.summary.energy.energy_j == Approx(sum_j).epsilon(1e-9));

  // Autoscaled: the fleet's idle over its replica-hours; a slot's own span is not kept.
  const PointRun scaled = run_with_flags({{"model", "llama-3.1-8b"},
                                          {"num-prompts", "600"},
                                          {"request-rate", "20"},
                                          {"max-replicas", "4"},
                                          {"autoscale", "waiting"},
                                          {"autoscale-target", "2"}},
                                         false);
  const RunSummary& a = scaled.run.summary;
  const double hours = scaled.run.fleet.autoscale.replica_hours;
  REQUIRE(hours > 0);
  CHECK(a.energy.idle_power_w ==
        Approx(scaled.run.config.gpu.idle_w * hours * 3600 / a.makespan_s).epsilon(1e-9));
  CHECK(a.energy.energy_j > a.energy.idle_power_w * a.makespan_s);
  CHECK(a.energy.peak_power_w >= a.energy.mean_power_w);
  for (const RunSummary& q : scaled.run.fleet.replicas)
    CHECK(std::isnan(q.energy.energy_j));
}

TEST_CASE("power: the summary, JSON and a GPU file's power keys", "[power][cli]") {
  const auto dir = scratch("power_cli");
  const std::string json = (dir / "run.json").string();
  const auto r = call_cli({"run", "--num-prompts", "50", "--json", json});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("energy (GPUs only): "));
  const auto j = nlohmann::json::parse(slurp(json));
  REQUIRE(j.contains("energy"));
  CHECK(j["energy"]["energy_j"].get<double>() > 0);
  CHECK(
      j["energy"]["j_per_output_token"].get<double>() ==
      Approx(j["energy"]["energy_j"].get<double>() / j["requests"]["output_tokens"].get<double>()));

  const std::string base =
      "name = x1\narch = hopper\nbf16_tflops = 989\nhbm_gib = 80\nhbm_gb_per_s = 3350\n"
      "interconnect_gb_per_s = 450\n";
  write(dir / "none.ini", base);
  const std::string none_json = (dir / "none.json").string();
  const auto n = call_cli({"run", "--gpu-file", (dir / "none.ini").string(), "--num-prompts", "20",
                           "--json", none_json});
  INFO(n.err);
  REQUIRE(n.code == 0);
  CHECK_THAT(n.out, !Catch::Contains("energy (GPUs only)"));
  CHECK(nlohmann::json::parse(slurp(none_json))["energy"]["energy_j"].is_null());

  write(dir / "with.ini", base + "tdp_w = 500\nidle_w = 50\nhbm_power_share = 0.5\n");
  const GpuSpec g = load_gpu_file((dir / "with.ini").string());
  CHECK(g.tdp_w == 500);
  CHECK(g.idle_w == 50);
  CHECK(g.hbm_power_share == 0.5);

  const std::pair<std::string, std::string> hostile[] = {
      {"tdp_w = 500\n", "idle_w"},
      {"idle_w = 50\n", "tdp_w"},
      {"tdp_w = 500\nidle_w = 600\n", "idle_w"},
      {"tdp_w = 0\nidle_w = 0\n", "tdp_w"},
      {"tdp_w = nan\nidle_w = 1\n", "tdp_w"},
      {"tdp_w = 500\nidle_w = -1\n", "idle_w"},
      {"tdp_w = 500\nidle_w = 50\nhbm_power_share = 1.5\n", "hbm_power_share"},
      {"hbm_power_share = 0.5\n", "hbm_power_share"},
      {"tdp_w = five\nidle_w = 50\n", "tdp_w"}};
  for (const auto& [extra, field] : hostile) {
    INFO(extra);
    write(dir / "bad.ini", base + extra);
    CHECK(servesim::test::error_field([&] { load_gpu_file((dir / "bad.ini").string()); }) == field);
  }
}

TEST_CASE("capacity: --energy-cost-per-kwh and --pue price the energy at capacity",
          "[power][capacity][cli]") {
  const auto dir = scratch("power_capacity");
  const std::string csv = (dir / "c.csv").string();
  const auto r = call_cli({"capacity", "--num-requests", "200", "--slo", "ttft_p99_ms=1000",
                           "--energy-cost-per-kwh", "0.12", "--pue", "1.3", "--gpu-hour-cost", "3",
                           "--csv", csv});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("kWh_per_Mtok"));
  CHECK_THAT(r.out, Catch::Contains("energy_usd_per_Mtok"));
  const auto row = servesim::test::read_csv(csv).at(0);
  using servesim::test::num;
  REQUIRE(num(row, "capacity_req_s") > 0);
  CHECK(num(row, "pue") == 1.3);
  CHECK(num(row, "energy_usd_per_kwh") == 0.12);
  const double kw = num(row, "mean_power_w") * 1.3 / 1e3;
  CHECK(num(row, "facility_kw") == Approx(kw).epsilon(1e-5));
  CHECK(num(row, "energy_usd_per_h") == Approx(kw * 0.12).epsilon(1e-5));
  const double tokens_per_h = num(row, "output_tokens_per_s") * 3600;
  CHECK(num(row, "kwh_per_million_output_tokens") == Approx(kw / tokens_per_h * 1e6).epsilon(1e-5));
  CHECK(num(row, "energy_cost_per_million_output_tokens") ==
        Approx(kw * 0.12 / tokens_per_h * 1e6).epsilon(1e-5));
  // The GPUs' price stays the GPUs' alone.
  CHECK(num(row, "cost_per_million_output_tokens") ==
        Approx(3.0 / tokens_per_h * 1e6).epsilon(1e-5));

  for (const char* pue : {"0.9", "nan", "inf", "6"}) {
    refused({"capacity", "--num-requests", "20", "--slo", "ttft_p99_ms=1000", "--pue", pue},
            "'pue'");
  }
  refused({"capacity", "--num-requests", "20", "--slo", "ttft_p99_ms=1000", "--energy-cost-per-kwh",
           "1e4"},
          "'energy-cost-per-kwh'");
  // --pue 1 given: the energy columns, though the facility is the GPUs alone.
  const auto one =
      call_cli({"capacity", "--num-requests", "100", "--slo", "ttft_p99_ms=1000", "--pue", "1"});
  INFO(one.err);
  CHECK(one.code == 0);
  CHECK_THAT(one.out, Catch::Contains("kWh_per_Mtok"));
  CHECK_THAT(one.out, !Catch::Contains("energy_usd_per_Mtok"));
  refused({"capacity", "--num-requests", "20", "--slo", "ttft_p99_ms=1000", "--energy-cost-per-kwh",
           "-1"},
          "'energy-cost-per-kwh'");
  refused({"capacity", "--num-requests", "20", "--slo", "ttft_p99_ms=1000", "--energy-cost-per-kwh",
           "abc"},
          "'energy-cost-per-kwh'");
}
