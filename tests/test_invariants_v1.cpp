// Invariants of vllm-v1 and its prefix cache on large random workloads with shared prefixes,
// checked after every scheduling decision: no block leaked or double-held, the cache never over
// capacity, hits never more than the prompt, nothing lost, the same seed the same steps; with
// speculative decoding, a CPU KV tier (never over its blocks either) and LoRA adapters (no
// admission past max_loras) too.
#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "sim/simulation.hpp"
#include "traces/datasets.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

struct DriveResult {
  std::string failure;
  int64_t preemptions = 0, hits = 0, evictions = 0;
  uint64_t fingerprint = 0;  // of every step's batch
};

// AHEAD: driven as vLLM's async engine loop drives AsyncScheduler (c.async_scheduling), each
// schedule() before the previous step's output, which is applied once two batches are in flight or
// nothing was scheduled; otherwise schedule and apply alternate. KV copies to and from a CPU tier
// (c.offload) are done when the step that asked for them is applied, or at once when nothing runs.
DriveResult drive_v1(const SchedulerConfig& c, int64_t num_blocks, uint64_t seed, bool ahead) {
  const size_t n = 1500;
  boost::random::mt19937_64 rng(seed);
  boost::random::uniform_int_distribution<int> input(1, 700), output(1, 300), arrivals(0, 4),
      group(0, 7), shared_blocks(0, 40), priority(0, 3);
  GroupHasher h;
  V1Scheduler s(c, num_blocks, n, &h);
  const KvCacheManager& kv = *s.kv_cache_manager();
  size_t next = 0;
  int64_t rejected = 0, finished = 0, idle = 0, step = 0;
  std::vector<std::pair<size_t, size_t>> copies;  // per schedule() not yet applied: loads, stores
  auto copies_done = [&](size_t n) {
    size_t loads = 0, stores = 0;
    for (size_t i = 0; i < n && i < copies.size(); ++i) {
      loads += copies[i].first;
      stores += copies[i].second;
    }
    copies.erase(copies.begin(), copies.begin() + std::ptrdiff_t(std::min(n, copies.size())));
    s.kv_transfers_done(loads, stores);
  };
  const int k = c.spec.enabled() ? c.spec.num_speculative_tokens : 0;
  std::vector<int32_t> lengths_out(n);
  DriveResult out;
  std::string& failure = out.failure;
  auto check = [&](bool ok, const char* what) {
    if (!ok && failure.empty()) failure = "step " + std::to_string(step) + ": " + what;
  };
  while (finished + rejected < int64_t(n) && failure.empty()) {
    ++step;
    for (int k = arrivals(rng); k > 0 && next < n; --k, ++next) {
      const int32_t in = input(rng);
      lengths_out[next] = output(rng);
      h.shared[uint32_t(next)] = {uint64_t(group(rng)), shared_blocks(rng)};
      const uint16_t lora = c.max_loras > 0 ? uint16_t(group(rng) % 6) : 0;
      if (s.add_request(uint32_t(next), in, lengths_out[next], priority(rng), -1, 0, lora) !=
          RejectReason::kNone) {
        ++rejected;
      }
    }
    const Batch& b = s.schedule();
    std::pair<size_t, size_t> asked{0, 0};
    for (const KvTransfer& t : s.kv_transfers())
      ++(t.load ? asked.first : asked.second);
    copies.push_back(asked);
    out.fingerprint = hash_combine(out.fingerprint, b.size());
    for (size_t i = 0; i < b.size(); ++i) {
      out.fingerprint = hash_combine(hash_combine(out.fingerprint, b.ids()[i]),
                                     uint64_t(b.shapes()[i].new_tokens));
    }
    if (const KvOffloadConnector* o = s.kv_offload()) {
      check(o->tier().used() <= o->tier().capacity(), "CPU tier over capacity");
    }
    if (b.empty() && s.batches_in_flight() == 0) {
      if (s.kv_offload() != nullptr && s.kv_offload()->transfers_in_flight() > 0) {
        copies_done(copies.size());  // nothing runs: the copies finish
        continue;
      }
      check(s.num_waiting() == 0 && s.running().empty(), "empty batch with work queued");
      check(++idle < 100000, "no progress: requests lost");
      continue;
    }
    // KV: never over capacity; references are exactly the running requests' block tables.
    check(kv.used_blocks() <= kv.usable_blocks() && kv.free_blocks() >= 0, "KV over capacity");
    int64_t held = 0, refs = 0, in_use = 0;
    for (size_t i = 0; i < s.running().size(); ++i) {
      const uint32_t id = s.running()[i];
      check(s.seq(id).status == SeqStatus::kRunning, "a request in running is not running");
      held += kv.blocks_held(id);
    }
    // Requests whose KV loads from the CPU tier hold blocks too, and keep them once loaded
    // until they are admitted.
    for (const WaitingQueue* q : {&s.skipped_waiting(), &s.waiting_queue()}) {
      q->for_each([&](uint32_t id) {
        const SeqState& w = s.seq(id);
        check(kv.blocks_held(id) == 0 || w.num_computed_tokens > 0,
              "a waiting request holds "
              "blocks it did not load");
        held += kv.blocks_held(id);
      });
    }
    for (int32_t blk = 1; blk <= kv.usable_blocks(); ++blk) {
      refs += kv.ref_count(blk);
      in_use += kv.ref_count(blk) > 0;
    }
    check(refs == held, "references != blocks in running requests' tables");
    check(in_use == kv.used_blocks(), "blocks in use != usable - free");
    if (step % 64 == 0) {
      check(int64_t(kv.free_queue().size()) == kv.free_blocks(), "free queue size");
    }
    check(int64_t(s.running().size()) <= c.max_num_seqs, "running > max_num_seqs");
    if (c.max_loras > 0) {
      // vLLM's max_loras: admissions add adapters only while the step holds fewer than max_loras.
      std::vector<uint16_t> all, running;
      const auto fresh = s.new_prefills();
      for (const uint32_t id : b.ids()) {
        const uint16_t l = s.seq(id).lora;
        if (l == 0) continue;
        if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
        const bool admitted = std::find(fresh.begin(), fresh.end(), id) != fresh.end();
        if (!admitted && std::find(running.begin(), running.end(), l) == running.end()) {
          running.push_back(l);
        }
      }
      check(all.size() <= std::max(running.size(), size_t(c.max_loras)), "max_loras");
    }
    check(b.num_tokens() <= c.token_budget(), "batch over the token budget");
    for (size_t i = 0; i < b.size(); ++i) {
      const uint32_t id = b.ids()[i];
      const SeqState& q = s.seq(id);
      const SeqShape& sh = b.shapes()[i];
      check(sh.new_tokens >= 1, "empty entry");
      // V1 counts the scheduled tokens as computed at once (_update_after_schedule).
      check(sh.context_tokens + sh.new_tokens == q.num_computed_tokens, "context != computed");
      check(q.num_computed_tokens <= q.num_tokens() + q.placeholders + k,
            "computes unknown tokens");
      check(sh.draft_tokens <= k && sh.draft_tokens < sh.new_tokens + (k == 0), "drafts");
      check(q.placeholders >= 0 && q.placeholders <= (ahead ? 2 : 1) * (1 + k), "placeholders");
      check(kv.blocks_for(q.num_computed_tokens) <= kv.blocks_held(id), "computes without a slot");
      check(q.cached_tokens <= q.input_tokens - 1, "hit more than the prompt less one token");
      if (c.long_prefill_token_threshold > 0) {
        check(sh.new_tokens <= c.long_prefill_token_threshold, "over the threshold");
      }
    }
    // Scheduling ahead, the output waits until two batches are in flight.
    if (ahead && !b.empty() && s.batches_in_flight() < 2) continue;
    s.update_from_output([&](uint32_t id, int32_t tokens, bool first, bool done) {
      check(tokens >= 1 && tokens <= 1 + k, "tokens per step");
      check(first == (s.seq(id).generated == tokens), "first token flag");
      if (!done) return;
      ++finished;
      check(s.seq(id).generated == lengths_out[id], "output length");
      check(kv.blocks_held(id) == 0, "a finished request holds blocks");
    });
    copies_done(1);
  }
  check(kv.free_blocks() == kv.usable_blocks(), "blocks not returned");
  check(s.num_waiting() == 0 && s.running().empty(), "requests left behind");
  check(kv.stats().hits <= kv.stats().queries, "hits > queries");
  out.preemptions = s.num_preemptions();
  out.hits = kv.stats().hits + kv.stats().preempted_hits;
  out.evictions = kv.stats().evictions;
  return out;
}

}  // namespace

TEST_CASE("vllm-v1 invariants hold at every step of random shared-prefix workloads",
          "[invariants][vllm-v1][slow]") {
  for (const bool priority : {false, true}) {
    for (const int64_t threshold : {int64_t(0), int64_t(96)}) {
      for (const int64_t blocks : {int64_t(120), int64_t(400)}) {
        for (const uint64_t seed : {1, 2}) {
          // Seed 2 schedules ahead, as vLLM's async engine loop does.
          const bool ahead = seed == 2;
          INFO((priority ? "priority" : "fcfs") << ", threshold " << threshold << ", " << blocks
                                                << " blocks, seed " << seed << ", ahead " << ahead);
          SchedulerConfig c = config("vllm-v1", 512, /*max_num_seqs=*/64, /*max_model_len=*/2048);
          c.enable_prefix_caching = true;
          c.reserve_full_isl = seed == 1;
          c.long_prefill_token_threshold = threshold;
          c.scheduling_policy = priority ? WaitingOrder::kPriority : WaitingOrder::kFcfs;
          c.async_scheduling = ahead;
          const DriveResult r = drive_v1(c, blocks, seed, ahead);
          CHECK(r.failure == "");
          CHECK(r.hits > 0);  // shared prefixes and preemptions are hit
          if (blocks == 120) {
            CHECK(r.preemptions > 0);  // small enough to preempt
            CHECK(r.evictions > 0);    // and to evict cached blocks
          }
          // The same seed gives the same steps.
          CHECK(drive_v1(c, blocks, seed, ahead).fingerprint == r.fingerprint);
        }
      }
    }
  }
}

TEST_CASE("vllm-v1 invariants hold with speculative decoding, a CPU KV tier and LoRA",
          "[invariants][vllm-v1][spec][offload][slow]") {
  for (const bool ahead : {false, true}) {
    for (const OffloadBackend backend : {OffloadBackend::kNative, OffloadBackend::kLmcache}) {
      for (const SpecMethod method : {SpecMethod::kNone, SpecMethod::kEagle, SpecMethod::kNgram}) {
        INFO("ahead " << ahead << ", " << offload_backend_name(backend) << ", "
                      << spec_method_name(method));
        SchedulerConfig c = config("vllm-v1", 512, /*max_num_seqs=*/64, /*max_model_len=*/2048);
        c.enable_prefix_caching = true;
        c.async_scheduling = ahead;
        c.offload.backend = backend;
        c.offload.num_cpu_blocks = 300;
        c.offload.block_size_factor = backend == OffloadBackend::kLmcache ? 16 : 1;
        c.offload.bytes_per_block = 1000;
        c.max_loras = method == SpecMethod::kNgram ? 2 : 0;  // LoRA adapters with n-gram drafts
        if (method != SpecMethod::kNone) {
          c.spec.method = method;
          c.spec.num_speculative_tokens = 3;
          c.spec.acceptance_rates = {0.8, 0.5, 0.3};
        }
        const DriveResult r = drive_v1(c, 160, 3, ahead);
        CHECK(r.failure == "");
        CHECK(r.preemptions > 0);
        CHECK(drive_v1(c, 160, 3, ahead).fingerprint == r.fingerprint);
      }
    }
  }
}

TEST_CASE("vllm-v1 whole runs are deterministic and caching only removes work",
          "[invariants][vllm-v1]") {
  PrefixRepetitionOptions o;
  o.num_requests = 400;
  o.request_rate = 20;
  o.prefix_len = 512;
  o.suffix_len = 64;
  o.num_prefixes = 4;
  o.output_len = 32;
  const Workload w = generate_prefix_repetition(o);
  auto run = [&](bool caching) {
    SimConfig c;
    c.model = find_model("llama-3.1-8b");
    c.gpu = find_gpu("h100-sxm");
    c.scheduler.policy = Policy::kVllmV1;
    c.scheduler.enable_prefix_caching = caching;
    return simulate(resolve(c), w);
  };
  const RunResult on = run(true), again = run(true), off = run(false);
  REQUIRE(on.requests.size() == again.requests.size());
  for (size_t i = 0; i < on.requests.size(); ++i) {
    CHECK(on.requests[i].last_token_s == again.requests[i].last_token_s);
    CHECK(on.requests[i].cached_tokens == again.requests[i].cached_tokens);
  }
  // Every request but the first of each prefix finds the 512-token prefix: 32 blocks of 16.
  int64_t hit = 0;
  for (const RequestRecord& q : on.requests)
    hit += q.cached_tokens == 512;
  CHECK(hit >= int64_t(w.size()) - 4 - 8);  // a few may arrive while their prefix is computed
  CHECK(on.summary.prefix_cache.hit_rate() > 0.8);
  CHECK(on.summary.prefill_tokens < off.summary.prefill_tokens);
  CHECK(on.summary.ttft_ms.p50 < off.summary.ttft_ms.p50);
  CHECK(off.summary.prefix_cache.enabled == false);
}
