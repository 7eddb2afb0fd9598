// Energy per output token and throughput against ML.ENERGY's leaderboard v3 (issue 48): vLLM
// 0.11.1 serving Llama-3.1-8B-Instruct, Qwen3-8B and Qwen3-32B (1 GPU), Llama-3.1-70B-Instruct
// (TP4 on H100, TP2 on B200) and Qwen3-32B (TP2 on H100), BF16, the lm-arena-chat task, every
// request sent at once, max_num_seqs swept, max_num_batched_tokens 8192, async scheduling,
// max_model_len 20480 (ml-energy/benchmark v3.0 configs/vllm/lm-arena-chat). Figures from
// ml-energy/leaderboard public/data/models/<model>__lm-arena-chat.json (avg_power_watts,
// energy_per_token_joules, output_throughput_tokens_per_sec), measured over ML.ENERGY's steady
// window: from the time max_num_seqs requests have their first token to the time all but
// max_num_seqs + 1 have finished (mlenergy/benchmark/llm/benchmark.py RequestTracker), energy
// per token = the window's GPU energy / its output tokens.
// The workload: outputs as the files' histograms, capped at 4096 (Llama: mean 388-409 tokens,
// lognormal median 245, sigma 1; Qwen3, which thinks first: mean 625-660, median 400); prompts
// multi-turn LMArena conversations, mean 634 tokens (the v3 blog post's draft; the data files give
// no input length): lognormal median 460, sigma 0.8.
// Fitted: each architecture's hbm_power_share on Llama-3.1-8B at max_num_seqs 8 (models/gpu.cpp);
// every other row is held out. docs/validation.md has the whole table.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "cli_helpers.hpp"
#include "models/power.hpp"

using namespace servesim;

namespace {

struct Measured {
  const char* model;
  const char* gpu;
  int tp, max_num_seqs;
  double watts, j_per_token, tokens_per_s;
};

struct Predicted {
  double watts = NAN, j_per_token = NAN, tokens_per_s = NAN;
};

// ML.ENERGY's steady window over R: its GPU energy (the steps' draw, idle between them) and the
// output tokens emitted in it (a step's tokens at its end: one per decode, a first token per
// finished prefill).
Predicted steady_window(const RunResult& r, int max_num_seqs) {
  std::vector<double> first, finish;
  for (const RequestRecord& q : r.requests) {
    first.push_back(q.first_token_s);
    finish.push_back(q.last_token_s);
  }
  std::sort(first.begin(), first.end());
  std::sort(finish.begin(), finish.end());
  const size_t n = first.size(), b = size_t(max_num_seqs);
  REQUIRE(n > 2 * b + 2);
  const double from = first[b - 1], to = finish[n - b - 2];
  REQUIRE(to > from);
  const double idle_w = r.summary.energy.idle_power_w;
  double joules = idle_w * (to - from), tokens = 0;
  for (const StepRecord& s : r.steps) {
    const double end = s.start_s + s.duration_s;
    const double overlap = std::min(end, to) - std::max(s.start_s, from);
    if (overlap > 0) joules += (s.power_w - idle_w) * overlap;
    if (end > from && end <= to) tokens += double(s.decode_tokens);
  }
  tokens += double(
      std::count_if(first.begin(), first.end(), [&](double t) { return t > from && t <= to; }));
  return {joules / (to - from), joules / tokens, tokens / (to - from)};
}

// ML.ENERGY repeats its 1024 requests as the batch grows (sweeps.yaml), so that the steady
// window is long: 1024 up to max_num_seqs 192, 2048 up to 512, 4096 beyond.
int requests(int max_num_seqs) {
  return max_num_seqs < 256 ? 1024 : max_num_seqs <= 512 ? 2048 : 4096;
}

Predicted predict(const Measured& m) {
  const PointRun p = servesim::test::run_with_flags(
      {{"model", m.model},
       {"gpu", m.gpu},
       {"tp", std::to_string(m.tp)},
       {"request-rate", "inf"},
       {"num-prompts", std::to_string(requests(m.max_num_seqs))},
       {"max-num-seqs", std::to_string(m.max_num_seqs)},
       {"max-num-batched-tokens", "8192"},
       {"max-model-len", "20480"},
       {"async-scheduling", ""},
       {"input-len", "lognormal:460:0.8:16:16000"},
       {"output-len", std::string(m.model).rfind("qwen3", 0) == 0 ? "lognormal:400:1.0:2:4096"
                                                                  : "lognormal:245:1.0:2:4096"}});
  return steady_window(p.run, m.max_num_seqs);
}

double error(double predicted, double measured) {
  return predicted / measured - 1;
}

}  // namespace

TEST_CASE("energy: J per output token against ML.ENERGY's vLLM measurements",
          "[power][validation]") {
  // model, GPU, TP, max_num_seqs; measured W, J per output token, output tok/s.
  const Measured fit[] = {{"llama-3.1-8b", "h100-sxm", 1, 8, 486.4, 0.4548, 1070},
                          {"llama-3.1-8b", "b200", 1, 8, 639.4, 0.3905, 1637}};
  const Measured held_out[] = {{"llama-3.1-8b", "h100-sxm", 1, 32, 559.7, 0.1651, 3391},
                               {"llama-3.1-8b", "h100-sxm", 1, 64, 610.3, 0.1186, 5147},
                               {"llama-3.1-8b", "h100-sxm", 1, 128, 669.2, 0.0951, 7037},
                               {"llama-3.1-8b", "h100-sxm", 1, 256, 690.5, 0.0766, 9010},
                               {"llama-3.1-8b", "h100-sxm", 1, 512, 688.3, 0.0702, 9806},
                               {"qwen3-8b", "h100-sxm", 1, 8, 427.0, 0.4440, 962},
                               {"qwen3-8b", "h100-sxm", 1, 32, 478.1, 0.1633, 2928},
                               {"qwen3-8b", "h100-sxm", 1, 64, 514.4, 0.1192, 4315},
                               {"qwen3-8b", "h100-sxm", 1, 128, 573.0, 0.0966, 5930},
                               {"qwen3-8b", "h100-sxm", 1, 256, 632.8, 0.0820, 7719},
                               {"llama-3.1-70b", "h100-sxm", 4, 16, 1803.8, 2.091, 863},
                               {"llama-3.1-70b", "h100-sxm", 4, 64, 2001.5, 0.7972, 2511},
                               {"llama-3.1-70b", "h100-sxm", 4, 256, 2354.3, 0.479, 4915},
                               {"qwen3-32b", "h100-sxm", 2, 16, 882.8, 0.9099, 970},
                               {"qwen3-32b", "h100-sxm", 2, 64, 974.1, 0.3671, 2654},
                               {"qwen3-32b", "h100-sxm", 2, 256, 1177.9, 0.2285, 5155},
                               {"llama-3.1-8b", "b200", 1, 64, 616.5, 0.1103, 5589},
                               {"llama-3.1-8b", "b200", 1, 256, 540.2, 0.0705, 7664},
                               {"llama-3.1-8b", "b200", 1, 1024, 599.9, 0.0549, 10922},
                               {"qwen3-8b", "b200", 1, 64, 543.0, 0.1225, 4432},
                               {"qwen3-8b", "b200", 1, 256, 830.6, 0.0725, 11463},
                               {"qwen3-32b", "b200", 1, 8, 859.6, 1.5451, 556},
                               {"qwen3-32b", "b200", 1, 64, 945.4, 0.3126, 3024},
                               {"qwen3-32b", "b200", 1, 256, 971.3, 0.1507, 6444},
                               {"llama-3.1-70b", "b200", 2, 16, 1732.8, 1.9027, 911},
                               {"llama-3.1-70b", "b200", 2, 64, 1810.8, 0.6971, 2598},
                               {"llama-3.1-70b", "b200", 2, 256, 1941.7, 0.3614, 5372}};
  // The fitted rows: the share was set to meet them (B200's held at its bound of 1, short).
  for (const Measured& m : fit) {
    const Predicted p = predict(m);
    INFO(m.model << " on " << m.gpu << " max_num_seqs " << m.max_num_seqs << ": " << p.j_per_token
                 << " J/token against " << m.j_per_token);
    CHECK(std::abs(error(p.j_per_token, m.j_per_token)) <
          (std::string(m.gpu) == "b200" ? 0.12 : 0.01));
  }
  std::vector<double> errors;
  int within = 0;
  for (const Measured& m : held_out) {
    const Predicted p = predict(m);
    const double e = error(p.j_per_token, m.j_per_token);
    errors.push_back(std::abs(e));
    within += std::abs(e) <= 0.20;
    INFO(m.model << " on " << m.tp << " x " << m.gpu << " max_num_seqs " << m.max_num_seqs << ": "
                 << p.j_per_token << " J/token against " << m.j_per_token << " (" << e * 100
                 << "%), " << p.watts << " W against " << m.watts << ", " << p.tokens_per_s
                 << " tok/s against " << m.tokens_per_s);
    // Issue 48's target is 20%. The rows that miss it (docs/validation.md: the 8B models on one
    // B200, where vLLM's steps are slower than its kernels explain, and the 70B and 32B on H100
    // at 256) are held within 35%, so that a change that moves them further fails here; the
    // 8B models on H100, where the share was fitted, within 20%.
    CHECK(std::abs(e) <= 0.35);
    if (std::string(m.model).find("8b") != std::string::npos && std::string(m.gpu) == "h100-sxm") {
      CHECK(std::abs(e) <= 0.20);
    }
  }
  std::sort(errors.begin(), errors.end());
  const double median = (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
  INFO("median |error| " << median * 100 << "%, " << within << " of " << errors.size()
                         << " within 20%");
  CHECK(median <= 0.12);
  CHECK(within >= 21);
}

TEST_CASE("throughput: 32B and 70B models on B200 against ML.ENERGY's vLLM measurements",
          "[power][validation]") {
  // The same runs' steady-window output throughput (vLLM 0.11.1, BF16); issue 48's target is
  // 15%, which 5 of the 6 meet (Qwen3-32B at 256: -18%). (The 8B models on one B200 are not a
  // check: vLLM's ITL there is nearly the H100's, and triples from max_num_seqs 64 to 128 for
  // Llama-3.1-8B, a change of kernels or a CPU bound servesim does not model.)
  const Measured rows[] = {{"llama-3.1-70b", "b200", 2, 16, 1732.8, 1.9027, 911},
                           {"llama-3.1-70b", "b200", 2, 64, 1810.8, 0.6971, 2598},
                           {"llama-3.1-70b", "b200", 2, 256, 1941.7, 0.3614, 5372},
                           {"qwen3-32b", "b200", 1, 8, 859.6, 1.5451, 556},
                           {"qwen3-32b", "b200", 1, 64, 945.4, 0.3126, 3024},
                           {"qwen3-32b", "b200", 1, 256, 971.3, 0.1507, 6444}};
  int within = 0;
  for (const Measured& m : rows) {
    const Predicted p = predict(m);
    const double e = error(p.tokens_per_s, m.tokens_per_s);
    INFO(m.model << " max_num_seqs " << m.max_num_seqs << ": " << p.tokens_per_s
                 << " tok/s against " << m.tokens_per_s << " (" << e * 100 << "%)");
    CHECK(std::abs(e) <= 0.20);
    within += std::abs(e) <= 0.15;
  }
  CHECK(within >= 5);
}
