// Speculative decoding (vLLM V1, scheduler/spec_decode.hpp): hand-worked steps of the scheduler
// (drafts in the budget, lookahead KV slots, rejected drafts rolled back), the drafter's cost and
// memory, the acceptance draws, the --speculative-config parser, and whole runs.
#include <catch2/catch.hpp>

#include "analysis/engine_options.hpp"
#include "cli_helpers.hpp"
#include "cost_fixtures.hpp"
#include "helpers.hpp"
#include "models/memory_plan.hpp"
#include "models/spec_decode_cost.hpp"
#include "sim/simulation.hpp"
#include "traces/synthetic.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

// vllm-v1 with blocks of 4 tokens and speculative decoding: METHOD, K drafts, acceptance RATES.
SchedulerConfig spec_config(int64_t budget, SpecMethod method, int k, std::vector<double> rates,
                            bool async = false) {
  SchedulerConfig c = config("vllm-v1", budget, 8, 1000, 4);
  c.reserve_full_isl = false;
  c.async_scheduling = async;
  c.spec.method = method;
  c.spec.num_speculative_tokens = k;
  std::copy(rates.begin(), rates.end(), c.spec.acceptance_rates.begin());
  return c;
}

struct Emitted {
  uint32_t id;
  int32_t tokens;
  bool first, finished;
  bool operator==(const Emitted&) const = default;
};

std::vector<Emitted> apply(Scheduler& s) {
  std::vector<Emitted> out;
  s.update_from_output([&](uint32_t id, int32_t tokens, bool first, bool finished) {
    out.push_back({id, tokens, first, finished});
  });
  return out;
}

}  // namespace

TEST_CASE("spec decode: k=3 drafts verified with the token before them, 2 accepted each step",
          "[spec][vllm-v1]") {
  // EAGLE: 3 lookahead slots. Rates (1, 1, 0): the first two drafts are always accepted, the
  // third never.
  V1Scheduler s(spec_config(64, SpecMethod::kEagle, 3, {1, 1, 0}), 100, 1);
  s.add_request(0, 8, 10);
  // The prompt: no drafts yet, no lookahead for a waiting request (computed 0).
  CHECK(entries(s.schedule()) == Entries{{0, 8}});
  CHECK(s.batch().shapes()[0].draft_tokens == 0);
  CHECK(s.used_blocks() == 2);
  CHECK(apply(s) == std::vector<Emitted>{{0, 1, true, false}});
  CHECK(s.seq(0).spec_tokens == 3);  // update_draft_token_ids: the drafter's proposals
  // The token sampled and 3 drafts: 9 + 3 - 8 = 4 tokens; slots for 8 + 4 + 3 lookahead = 15.
  CHECK(entries(s.schedule()) == Entries{{0, 4}});
  CHECK(s.batch().shapes()[0].draft_tokens == 3);
  CHECK(s.batch().shapes()[0].context_tokens == 8);
  CHECK(s.batch().shapes()[0].emits_token);
  CHECK(s.used_blocks() == 4);
  CHECK(s.seq(0).spec_tokens == 0);
  // 2 of 3 accepted: 3 tokens; the rejected draft's token is rolled back (12 - 1 = 11 computed);
  // its slot stays with the request (no block is freed).
  CHECK(apply(s) == std::vector<Emitted>{{0, 3, false, false}});
  CHECK(s.seq(0).generated == 4);
  CHECK(s.seq(0).num_computed_tokens == 11);
  CHECK(s.used_blocks() == 4);
  CHECK(entries(s.schedule()) == Entries{{0, 4}});  // 12 + 3 - 11
  CHECK(s.batch().shapes()[0].context_tokens == 11);
  CHECK(s.used_blocks() == 5);  // 11 + 4 + 3 = 18 slots
  CHECK(apply(s) == std::vector<Emitted>{{0, 3, false, false}});
  CHECK(entries(s.schedule()) == Entries{{0, 4}});
  CHECK(s.used_blocks() == 6);  // 14 + 4 + 3 = 21 slots
  // 7 generated + 3 = max_tokens: it finishes and frees every block.
  CHECK(apply(s) == std::vector<Emitted>{{0, 3, false, true}});
  CHECK(s.seq(0).status == SeqStatus::kFinished);
  CHECK(s.used_blocks() == 0);
  const SpecDecodeStats& st = *s.spec_decode_stats();
  CHECK(st.num_drafts == 3);
  CHECK(st.num_draft_tokens == 9);
  CHECK(st.num_accepted_tokens == 6);
  CHECK(st.accepted_per_pos[0] == 3);
  CHECK(st.accepted_per_pos[1] == 3);
  CHECK(st.accepted_per_pos[2] == 0);
}

TEST_CASE("spec decode: the token budget counts drafts and cuts them", "[spec][vllm-v1]") {
  // n-gram: no lookahead slots. Nothing accepted.
  V1Scheduler s(spec_config(6, SpecMethod::kNgram, 3, {0, 0, 0}), 100, 2);
  s.add_request(0, 4, 20);
  s.add_request(1, 4, 20);
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 2}});
  CHECK(apply(s) == std::vector<Emitted>{{0, 1, true, false}});
  // 0: its token and 3 drafts (4 of the 6); 1: the rest of its prompt.
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 2}});
  CHECK(s.batch().shapes()[0].draft_tokens == 3);
  CHECK(s.batch().shapes()[1].draft_tokens == 0);
  CHECK(s.used_blocks() == 3);  // 0: 4 + 4 = 8 slots; 1: 4
  CHECK(apply(s) == std::vector<Emitted>{{0, 1, false, false}, {1, 1, true, false}});
  CHECK(s.seq(0).num_computed_tokens == 5);  // 8 - 3 rejected
  // 1 has 3 drafts too, but 2 tokens of budget are left: its token and one draft, which still
  // samples (not a prefill chunk).
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 2}});
  CHECK(s.batch().shapes()[1].draft_tokens == 1);
  CHECK(s.batch().shapes()[1].emits_token);
  CHECK(apply(s) == std::vector<Emitted>{{0, 1, false, false}, {1, 1, false, false}});
  CHECK(s.seq(1).num_computed_tokens == 5);  // 4 + 2 - 1 rejected
  CHECK(s.spec_decode_stats()->num_draft_tokens == 7);
}

TEST_CASE("spec decode: async scheduling holds placeholders for the token and its drafts",
          "[spec][vllm-v1]") {
  for (const bool accept : {true, false}) {
    V1Scheduler s(spec_config(64, SpecMethod::kEagle, 2,
                              accept ? std::vector<double>{1, 1} : std::vector<double>{0, 0},
                              /*async=*/true),
                  100, 1);
    s.add_request(0, 4, 10);
    CHECK(entries(s.schedule()) == Entries{{0, 4}});  // A
    CHECK(s.seq(0).placeholders == 1);
    CHECK(s.seq(0).spec_tokens == 2);  // AsyncScheduler: placeholder drafts at once
    // B, before A's token is known: 4 + 2 drafts + 1 placeholder - 4 = 3.
    CHECK(entries(s.schedule()) == Entries{{0, 3}});
    CHECK(s.batch().shapes()[0].draft_tokens == 2);
    CHECK(s.seq(0).placeholders == 4);
    CHECK(apply(s) == std::vector<Emitted>{{0, 1, true, false}});  // A
    CHECK(s.seq(0).placeholders == 3);
    CHECK(entries(s.schedule()) == Entries{{0, 3}});  // C: 5 + 2 + 3 - 7
    CHECK(s.seq(0).num_computed_tokens == 10);
    const int32_t tokens = accept ? 3 : 1;
    CHECK(apply(s) == std::vector<Emitted>{{0, tokens, false, false}});  // B
    // Computed = known tokens + the placeholders of C - 1, whatever was accepted.
    CHECK(s.seq(0).generated == 1 + tokens);
    CHECK(s.seq(0).placeholders == 3);
    CHECK(s.seq(0).num_computed_tokens == s.seq(0).num_tokens() + 3 - 1);
  }
}

TEST_CASE("spec decode: a request's lifetime with its last drafts and lookahead must fit",
          "[spec][vllm-v1]") {
  // 4 usable blocks of 4 tokens: 16 slots. 8 + 6 - 1 = 13 tokens fit without drafts; with 2
  // drafts and 2 lookahead slots the last step needs 17.
  V1Scheduler plain(spec_config(64, SpecMethod::kNone, 0, {}), 5, 1);
  CHECK(plain.add_request(0, 8, 6) == RejectReason::kNone);
  V1Scheduler spec(spec_config(64, SpecMethod::kEagle, 2, {1, 1}), 5, 1);
  CHECK(spec.add_request(0, 8, 6) == RejectReason::kKvCapacity);
}

TEST_CASE("spec decode: acceptance draws follow the per-position rates", "[spec]") {
  SpecDecodeConfig c;
  c.method = SpecMethod::kEagle;
  c.num_speculative_tokens = 3;
  c.acceptance_rates = {0.8, 0.64, 0.512};
  c.seed = 7;
  const int n = 200000;
  int64_t at_least[4] = {};
  for (int i = 0; i < n; ++i) {
    const int a = c.accepted(uint32_t(i % 1000), i / 1000, 3);
    for (int j = 0; j <= a; ++j)
      ++at_least[j];
  }
  for (int j = 1; j <= 3; ++j)
    CHECK(double(at_least[j]) / n == Approx(c.acceptance_rates[size_t(j - 1)]).margin(0.005));
  // The same (seed, request, position) draws the same; another seed differs somewhere.
  CHECK(c.accepted(5, 17, 3) == c.accepted(5, 17, 3));
  SpecDecodeConfig d = c;
  d.seed = 8;
  int differ = 0;
  for (uint32_t i = 0; i < 100; ++i)
    differ += c.accepted(i, 0, 3) != d.accepted(i, 0, 3);
  CHECK(differ > 10);
}

TEST_CASE("spec decode: --speculative-config as vLLM spells it", "[spec][cli]") {
  const SpeculativeOptions e = parse_speculative_config(
      R"({"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
          "num_speculative_tokens": 3})",
      "0.5");
  CHECK(e.method == SpecMethod::kEagle3);
  CHECK(e.num_speculative_tokens == 3);
  CHECK(e.acceptance_rates == std::vector<double>{0.5, 0.25, 0.125});
  // vLLM's synthetic rejection sampler: a mean acceptance length of 2.5 is position 1 always,
  // position 2 half the time.
  const SpeculativeOptions l = parse_speculative_config(
      R"({"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic",
          "synthetic_acceptance_length": 2.5})",
      "");
  CHECK(l.acceptance_rates == std::vector<double>{1, 0.5, 0});
  // No method: the model's name says it.
  CHECK(parse_speculative_config(R"({"model": "llama-3.2-1b", "num_speculative_tokens": 2})",
                                 "0.7,0.5")
            .method == SpecMethod::kDraftModel);
  CHECK(
      parse_speculative_config(R"({"method": "deepseek_mtp", "num_speculative_tokens": 1})", "0.9")
          .method == SpecMethod::kMtp);
  CHECK(parse_speculative_config("", "").method == SpecMethod::kNone);
  auto field = [](const std::string& json, const std::string& acceptance) {
    return error_field([&] { parse_speculative_config(json, acceptance); });
  };
  CHECK(field("{", "0.5") == "speculative-config");
  CHECK(field("[1]", "0.5") == "speculative-config");
  CHECK(field(R"({"method": "medusa", "num_speculative_tokens": 2})", "0.5") ==
        "speculative-config.method");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 0})", "0.5") ==
        "speculative-config.num_speculative_tokens");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": "3"})", "0.5") ==
        "speculative-config.num_speculative_tokens");
  CHECK(field(R"({"method": "eagle"})", "0.5") == "speculative-config.num_speculative_tokens");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2, "colour": 1})", "0.5") ==
        "speculative-config.colour");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2, "tensor_parallel_size": 2})",
              "0.5") == "speculative-config.tensor_parallel_size");
  CHECK(field(R"({"method": "draft_model", "num_speculative_tokens": 2})", "0.5") ==
        "speculative-config.model");
  // The acceptance must be said, once, and make sense.
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2})", "") == "spec-acceptance-rate");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2})", "0.5,0.6") ==
        "spec-acceptance-rate");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2})", "0.5,0.4,0.3") ==
        "spec-acceptance-rate");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2})", "1.5") ==
        "spec-acceptance-rate");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2})", "x") ==
        "spec-acceptance-rate");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2,
                  "synthetic_acceptance_rates": [0.9, 0.8]})",
              "0.5") == "spec-acceptance-rate");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2,
                  "synthetic_acceptance_length": 3.5})",
              "") == "speculative-config.synthetic_acceptance_length");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2,
                  "synthetic_acceptance_rates": [0.9]})",
              "") == "speculative-config.synthetic_acceptance_rates");
  CHECK(field(R"({"method": "eagle", "num_speculative_tokens": 2,
                  "rejection_sample_method": "synthetic"})",
              "") == "speculative-config.rejection_sample_method");
  CHECK(field("", "0.5") == "spec-acceptance-rate");
}

TEST_CASE("spec decode: the verification's LM head and the drafter's passes by hand",
          "[spec][cost]") {
  const ModelSpec target = tiny_model();
  const RooflineParams p = ideal_params();
  RooflineCostModel roof(slow_gpu(), target, 1, p);
  // A decode verifying 3 drafts scores 4 positions: 3 more LM-head rows than a plain decode.
  SeqShape plain{4, 100, false, true, 0};
  SeqShape verify{4, 100, false, true, 3};
  const StepCost a = roof.cost(std::span(&plain, 1)), b = roof.cost(std::span(&verify, 1));
  const double lm_row_flops = 2.0 * target.lm_head_params();
  CHECK(b.flops - a.flops == Approx(3 * lm_row_flops));
  // The drafter: one pass over the step's tokens, then k - 1 passes of one token per sequence.
  const Drafter eagle = make_drafter(SpecMethod::kEagle, target);
  CHECK(eagle.model.num_layers == 1);
  EngineParams passes{Engine::kV1, 0, 0, 0, 0, 1};
  auto draft = std::make_unique<RooflineCostModel>(slow_gpu(), eagle.model, 1, p.hw, passes);
  const RooflineCostModel draft_copy(slow_gpu(), eagle.model, 1, p.hw, passes);
  SpeculativeCostModel spec(std::make_unique<RooflineCostModel>(slow_gpu(), target, 1, p),
                            std::move(draft), 3);
  const StepCost s = spec.cost(std::span(&verify, 1));
  SeqShape first{4, 100, false, true, 0}, second{1, 104, false, true, 0},
      third{1, 105, false, true, 0};
  const double expected = draft_copy.cost(std::span(&first, 1)).seconds +
                          draft_copy.cost(std::span(&second, 1)).seconds +
                          draft_copy.cost(std::span(&third, 1)).seconds;
  CHECK(s.draft_s == Approx(expected));
  CHECK(s.seconds == Approx(b.seconds + expected));
  CHECK(s.draft_s > 0);
  // n-gram drafts on the CPU: no drafter on the GPU.
  CHECK_FALSE(make_drafter(SpecMethod::kNgram, target).on_gpu());
  CHECK(make_drafter(SpecMethod::kNgram, target).kv_bytes_per_token_per_gpu(1) == 0);
}

TEST_CASE("spec decode: the drafter's weights and KV in the memory plan", "[spec][memory]") {
  const ModelSpec m = find_model("llama-3.1-8b");
  const GpuSpec g = find_gpu("h100-sxm");
  ServerShape shape;
  shape.engine = Engine::kV1;
  shape.max_num_batched_tokens = 8192;
  shape.max_num_seqs = 1024;
  const MemoryPlan plain = plan_memory(g, m, MemoryPlanOptions{}, shape);
  const Drafter d = make_drafter(SpecMethod::kEagle3, m);
  // One decoder layer, the 3h -> h projection and a 32,000-token LM head, in bf16.
  const int64_t h = m.hidden_size;
  const int64_t layer = m.attention_params_per_layer() + m.expert_params() + 2 * h;
  CHECK(d.weight_bytes == 2 * (layer + 2 * h * h + h * h + 32000 * h));
  CHECK(d.model.vocab_size == 32000);
  shape.drafter_weight_bytes = double(d.weight_bytes);
  shape.drafter_kv_bytes_per_token = d.kv_bytes_per_token_per_gpu(1);
  const MemoryPlan with = plan_memory(g, m, MemoryPlanOptions{}, shape);
  CHECK(with.weight_bytes - plain.weight_bytes == Approx(double(d.weight_bytes)));
  // One more layer's K and V per token: 33/32 of the bytes per block.
  CHECK(with.kv_bytes_per_block * 32 == plain.kv_bytes_per_block * 33);
  CHECK(with.num_gpu_blocks < plain.num_gpu_blocks);
  // A draft model must share the target's vocabulary.
  const ModelSpec other = find_model("llama-2-7b");
  CHECK(error_field([&] { make_drafter(SpecMethod::kDraftModel, m, &other); }) ==
        "speculative-config.model");
}

TEST_CASE("spec decode: whole runs emit every token, faster per token, the same twice",
          "[spec][sim]") {
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu("h100-sxm");
  c.scheduler.policy = Policy::kVllmV1;
  SimConfig plain = resolve(c);
  c.scheduler.spec.method = SpecMethod::kEagle3;
  c.scheduler.spec.num_speculative_tokens = 3;
  c.scheduler.spec.acceptance_rates = {0.8, 0.64, 0.512};
  c.drafter = make_drafter(SpecMethod::kEagle3, c.model);
  const SimConfig spec = resolve(c);
  SyntheticOptions o;
  o.num_requests = 200;
  o.request_rate = 2;
  o.input_len = LengthDist::parse("uniform:100:400", "input-len");
  o.output_len = LengthDist::parse("uniform:50:200", "output-len");
  const Workload w = generate_synthetic(o);
  const RunResult a = simulate(plain, w), b = simulate(spec, w), b2 = simulate(spec, w);
  CHECK(b.summary.completed == 200);
  CHECK(b.summary.output_tokens == a.summary.output_tokens);
  CHECK(b.summary.tpot_ms.p50 < 0.6 * a.summary.tpot_ms.p50);
  CHECK(b.summary.spec_decode.enabled);
  CHECK(b.summary.spec_decode.mean_acceptance_length() == Approx(2.95).margin(0.05));
  CHECK(b.summary.tpot_ms.mean == b2.summary.tpot_ms.mean);
  CHECK(b.summary.spec_decode.counts.num_accepted_tokens ==
        b2.summary.spec_decode.counts.num_accepted_tokens);
  CHECK_FALSE(a.summary.spec_decode.enabled);
  // V0's policies have no drafter.
  c.scheduler.policy = Policy::kChunked;
  CHECK(error_field([&] { resolve(c); }) == "speculative-config");
}

TEST_CASE("spec decode: an EAGLE drafter's prefix-cache hit loses its last block",
          "[spec][vllm-v1]") {
  // FullAttentionManager.find_longest_cache_hit with use_eagle pops the last hit block: its
  // tokens' hidden states feed the drafter. n-gram keeps the whole hit.
  for (const SpecMethod m : {SpecMethod::kNgram, SpecMethod::kEagle, SpecMethod::kMtp}) {
    SchedulerConfig c = spec_config(64, m, 2, {0.5, 0.2});
    c.enable_prefix_caching = true;
    GroupHasher h;
    h.shared = {{0, {7, 3}}, {1, {7, 3}}};  // the first 3 blocks (12 tokens) are the same
    V1Scheduler s(c, 100, 2, &h);
    s.add_request(0, 13, 2);
    CHECK(entries(s.schedule()) == Entries{{0, 13}});
    apply(s);
    s.add_request(1, 13, 2);
    s.schedule();
    const int32_t hit = m == SpecMethod::kNgram ? 12 : 8;
    CHECK(s.seq(1).cached_tokens == hit);
    CHECK(s.batch().shapes()[1].new_tokens == 13 - hit);
  }
}

TEST_CASE("spec decode: hostile configurations are refused, not silently off or ignored",
          "[spec_decode][hostile]") {
  using servesim::test::call_cli;
  auto run = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "--num-requests", "10"};
    args.insert(args.end(), extra.begin(), extra.end());
    return call_cli(args);
  };
  // Issue 44 (13): an empty or blank JSON value meant "off", silently.
  for (const char* blank : {"", "  "}) {
    const auto s = run({"--speculative-config", blank});
    CHECK(s.code == 2);
    CHECK_THAT(s.err, Catch::Contains("speculative-config") && Catch::Contains("empty"));
    const auto k = run({"--kv-transfer-config", blank});
    CHECK(k.code == 2);
    CHECK_THAT(k.err, Catch::Contains("kv-transfer-config") && Catch::Contains("empty"));
  }
  // (14) draft_tensor_parallel_size was checked, then ignored: 1, 2 and 8 gave the same bytes.
  const std::string eagle3 = R"({"method":"eagle3","num_speculative_tokens":3,)";
  const auto tp2 = run({"--speculative-config", eagle3 + R"("draft_tensor_parallel_size":2})",
                        "--spec-acceptance-rate", "0.5"});
  CHECK(tp2.code == 2);
  CHECK_THAT(tp2.err, Catch::Contains("draft_tensor_parallel_size") && Catch::Contains("TP 1"));
  CHECK(run({"--tp", "2", "--speculative-config", eagle3 + R"("draft_tensor_parallel_size":2})",
             "--spec-acceptance-rate", "0.5"})
            .code == 0);
  // prompt_lookup_min > prompt_lookup_max, as vLLM refuses it.
  CHECK(
      error_field([] {
        parse_speculative_config(
            R"({"method":"ngram","num_speculative_tokens":3,"prompt_lookup_min":5,"prompt_lookup_max":2})",
            "0.5");
      }) == "speculative-config.prompt_lookup_min");
  // (15) A draft that does not fit is the draft's fault, not the target's.
  const auto big =
      run({"--model", "llama-3.2-1b", "--speculative-config",
           R"({"method":"draft_model","model":"llama-3.1-70b","num_speculative_tokens":3})",
           "--spec-acceptance-rate", "0.5"});
  CHECK(big.code == 2);
  CHECK_THAT(big.err, Catch::Contains("field 'speculative-config.model'") &&
                          Catch::Contains("llama-3.2-1b fits"));
}
