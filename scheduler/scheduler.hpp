// Scheduler: the interface a Host drives, one replica's scheduler, and what vLLM's two engines'
// schedulers share: the requests' states, `running`, the batch being built, and applying a
// finished step. Each engine's rules live in its own class, where vLLM keeps them:
//  - V0Scheduler (scheduler/v0_scheduler.hpp): vLLM V0's Scheduler, policies vllm-v0
//    (_schedule_default) and chunked (_schedule_chunked_prefill), with V0's block manager;
//  - V1Scheduler (scheduler/v1_scheduler.hpp): vLLM V1's Scheduler.schedule(), policy vllm-v1,
//    with V1's KV cache manager and prefix cache.
// The revision of vLLM each transcribes: scheduler/vllm_revision.hpp. A Scheduler never reads the
// clock: the host asks for a batch, runs it, and reports its completion. With vLLM V1's async
// scheduling the host asks for the next batch before the running one's output is applied
// (EngineCore.step_with_batch_queue): a scheduler that schedules_ahead() keeps two batches in
// flight, and update_from_output() applies the older.
// Promises: every request added is, at every moment, in exactly one of pending, waiting, running,
// finished or rejected; KV blocks never exceed the cache; schedule() and update_from_output()
// allocate nothing once warm.
#pragma once

#include <boost/align/aligned_allocator.hpp>
#include <cassert>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "scheduler/batch.hpp"
#include "scheduler/block_hasher.hpp"
#include "scheduler/kv_offload.hpp"
#include "scheduler/policy.hpp"
#include "scheduler/request_queue.hpp"
#include "scheduler/scheduling_hooks.hpp"
#include "scheduler/sequence.hpp"
#include "scheduler/spec_decode.hpp"

namespace servesim {

class KvCacheManager;
class KvEventSink;

// The order of V1's `waiting`, vLLM V1's --scheduling-policy (fcfs or priority). Not a Policy
// (policy.hpp), which is the scheduling algorithm.
enum class WaitingOrder : uint8_t { kFcfs, kPriority };

// The most batches a scheduler keeps in flight: a pipeline of up to this many stages.
inline constexpr int kMaxBatchesInFlight = 32;

// The largest KV block servesim takes, in tokens (check_scheduler_values).
inline constexpr int kMaxBlockSize = 1 << 16;

struct SchedulerConfig {
  Policy policy = Policy::kChunked;
  int64_t max_num_batched_tokens = 0;  // 0 = the policy's vLLM default
  int64_t max_num_seqs = 0;            // 0 = the policy's vLLM default
  int64_t max_model_len = 0;           // must be set (the model's max_position by default)
  int block_size = 16;                 // tokens, in [1, kMaxBlockSize]
  double watermark = 0.01;             // vLLM CacheConfig default; not a CLI flag in vLLM
  bool enable_prefix_caching = false;
  // vLLM V1 only.
  WaitingOrder scheduling_policy = WaitingOrder::kFcfs;
  int64_t long_prefill_token_threshold = 0;  // 0 = no cap
  // vLLM V1 --async-scheduling: the engine loop (sim/host.cpp) schedules a step ahead, and
  // V1Scheduler counts the tokens in flight as AsyncScheduler does (SeqState::placeholders).
  bool async_scheduling = true;
  bool reserve_full_isl = true;  // vLLM scheduler_reserve_full_isl
  // The model's sliding window in tokens when some layers have one (ModelSpec::sliding_window):
  // V1 keeps their KV in a second group of blocks of the same pool (kv_cache_manager.hpp); 0: none.
  int sliding_window = 0;
  // A hybrid model's groups of linear-attention layers (ModelSpec::kv_cache_state_groups): each
  // request holds a block of each for its state (kv_cache_manager.hpp set_state_groups); 0: none.
  int state_groups = 0;
  // Batches that may be in flight at once beyond async scheduling's two: a pipeline's stages
  // (EngineCore's batch queue of max_concurrent_batches); 0: 2 when async, else 1.
  int batch_queue_size = 0;
  // REQUIRES: batch_queue_size <= kMaxBatchesInFlight (scheduler.hpp).
  int max_batches_in_flight() const {
    return batch_queue_size > 0 ? batch_queue_size : (async_scheduling ? 2 : 1);
  }
  // vLLM V1's speculative decoding (--speculative-config; scheduler/spec_decode.hpp).
  SpecDecodeConfig spec;
  // vLLM V1's KV offload to CPU memory (--kv-offloading-size; scheduler/kv_offload.hpp).
  KvOffloadConfig offload;
  // vLLM --enable-lora's --max-loras: distinct LoRA adapters one step may hold (0: LoRA off).
  int max_loras = 0;
  // vllm-v1: a policy's admission order and preemption victim chosen outside (null: vLLM's);
  // it outlives the scheduler.
  const SchedulingHooks* hooks = nullptr;
  // The tokens one step may schedule: vLLM's max_num_scheduled_tokens, max_num_batched_tokens
  // less the slots a draft model drafts in (VllmConfig: max_num_batched_tokens -
  // max_num_new_slots_for_drafting x max_num_seqs). 0: max_num_batched_tokens.
  int64_t max_num_scheduled_tokens = 0;
  int64_t token_budget() const {
    return max_num_scheduled_tokens > 0 ? max_num_scheduled_tokens : max_num_batched_tokens;
  }
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  // Room for NUM_REQUESTS requests in all, for a scheduler that grows (built with none).
  virtual void reserve(size_t num_requests);

  // The front end's checks, then `waiting` (vLLM add_seq_group / add_request). Returns why the
  // request was rejected, or kNone.
  // ARRIVAL_S orders requests of equal priority under the priority policy (vLLM compares
  // (priority, arrival_time)); a negative value stands for the id, i.e. distinct times in id order.
  // REQUIRES: ID < num_requests (or == it: the scheduler grows, for a fleet's replica, which
  // numbers its requests as they come), not added before; input_tokens >= 1, output_tokens >= 1.
  // EXTERNAL_TOKENS (V1 only, < input_tokens): leading prompt tokens whose KV arrived from a
  // prefill instance: allocated at the first scheduling but not computed, as vLLM V1 does with a
  // KV connector's matched tokens (the first hit of the local prefix cache counts first).
  // LORA: its LoRA adapter (0: the base model).
  RejectReason add_request(uint32_t id, int32_t input_tokens, int32_t output_tokens,
                           int32_t priority = 0, double arrival_s = -1, int32_t external_tokens = 0,
                           uint16_t lora = 0);

  // Decides the next step (vLLM Scheduler.schedule()). An empty batch is not in flight.
  // REQUIRES: fewer batches in flight than config().max_batches_in_flight() (or none).
  const Batch& schedule();
  // Whether schedule() may be called with a batch in flight (vLLM V1's AsyncScheduler).
  virtual bool schedules_ahead() const { return false; }

  // Applies the oldest batch in flight once it has run: its entries' tokens are computed; an
  // entry that completes its known tokens samples one token (with speculative decoding, 1 to k +
  // 1: the accepted drafts and one), calling ON_TOKEN(id, tokens, first_token, finished) once
  // for them; finished requests free their blocks and leave `running`
  // (vLLM free_finished_seq_groups). The one way a finished batch is applied (vLLM V0's
  // LLMEngine._process_model_outputs, V1's Scheduler.update_from_output). Nothing in flight (the
  // last schedule() was empty): nothing to apply.
  template <class OnToken>
  void update_from_output(OnToken&& on_token);

  // What one entry of a batch that has run sampled: TOKENS (0: none), whether they include the
  // request's first token and whether it finished.
  struct Applied {
    int32_t tokens = 0;
    int16_t accepted = -1;  // the drafts its verification accepted (-1: no drafts verified)
    bool first = false, finished = false;
  };
  // What each entry of the batch the last update_from_output() applied sampled, in the batch's
  // order (ON_TOKEN was called for those with tokens, in this order).
  std::span<const Applied> last_applied() const { return {applied_.data(), last_applied_}; }
  // The batch the last schedule() returned.
  const Batch& batch() const { return bufs_[cur_]; }
  // Batches scheduled and not yet applied (up to config().max_batches_in_flight()), and the
  // oldest.
  int batches_in_flight() const { return in_flight_; }
  const Batch& oldest_in_flight() const { return bufs_[oldest_]; }
  // The requests this step admitted from `waiting` (first scheduled, or re-admitted after a
  // preemption).
  std::span<const uint32_t> new_prefills() const { return out_.new_prefills; }
  const SeqState& seq(uint32_t id) const { return seqs_[id]; }
  // Every request's state, indexed by id.
  std::span<const SeqState> seqs() const { return seqs_; }
  const RequestQueue& running() const { return running_; }
  virtual size_t num_waiting() const = 0;
  // KV blocks in use, and usable, in this engine's manager.
  virtual int64_t used_blocks() const = 0;
  virtual int64_t usable_blocks() const = 0;
  // Empties the prefix cache: false while requests hold blocks.
  virtual bool reset_prefix_cache() = 0;
  // V1's KV cache manager (its prefix cache); null on V0.
  virtual const KvCacheManager* kv_cache_manager() const { return nullptr; }
  // Where V1's prefix cache reports its KV events; nothing on V0 (no prefix cache).
  virtual void set_kv_event_sink(KvEventSink* /*sink*/) {}
  // KV offload to the CPU tier (vLLM V1's OffloadingConnector, scheduler/kv_offload.hpp; null
  // without it): the connector, the copies the last schedule() asked for (to run from the start
  // of its step), and their completion, oldest first in each direction.
  virtual const KvOffloadConnector* kv_offload() const { return nullptr; }
  virtual std::span<const KvTransfer> kv_transfers() const { return {}; }
  virtual void kv_transfers_done(size_t /*loads*/, size_t /*stores*/) {}
  // Waiting requests V1 passed over in a step because their LoRA adapter would have been one more
  // than max_loras.
  virtual int64_t lora_skips() const { return 0; }
  // The LoRA adapters of the requests added and not yet finished (running or waiting: vLLM's
  // lora_requests_info running_lora_adapters and waiting_lora_adapters): whether ID is among
  // them, and how many there are.
  bool has_lora(uint16_t id) const { return id < lora_requests_.size() && lora_requests_[id] > 0; }
  int num_loras() const { return num_loras_; }
  // Speculative decoding's counters (vLLM V1's SpecDecodingStats); null without it.
  virtual const SpecDecodeStats* spec_decode_stats() const { return nullptr; }
  // Tokens this step found in the prefix cache (new requests' hits).
  int64_t step_cached_tokens() const { return step_cached_tokens_; }
  const SchedulerConfig& config() const { return config_; }
  int64_t num_preemptions() const { return num_preemptions_; }
  // Computed tokens thrown away by preemption (they are computed again on re-admission).
  int64_t discarded_tokens() const { return discarded_tokens_; }

 protected:
  // REQUIRES: config.max_num_batched_tokens > 0, max_num_seqs > 0 and max_model_len > 0.
  Scheduler(const SchedulerConfig& config, size_t num_requests);

  // vLLM's SchedulerRunningOutputs / SchedulerPrefillOutputs, reused every step.
  struct StepOutputs {
    std::vector<uint32_t> decodes, prefills, new_prefills, preempted;
    void clear() {
      decodes.clear();
      prefills.clear();
      new_prefills.clear();
      preempted.clear();
    }
  };

  // The engine's step rules: fills building() (vLLM Scheduler.schedule()).
  virtual void schedule_step() = 0;
  // Applies every entry of batch B that has run, in order, into OUT[i] (B.size() entries): each
  // engine's apply(id, shape), whose tokens are counted and a request that finishes set kFinished
  // and passed to finished(). One call a batch, the per-entry apply inlined in the engine's loop
  // (apply_each), where a virtual call an entry took a fifth of a decode step's instructions.
  virtual void apply_batch(const Batch& b, Applied* out) = 0;
  template <class Engine>
  static void apply_each(Engine& engine, const Batch& b, Applied* out) {
    const auto ids = b.ids();
    const auto shapes = b.shapes();
    for (size_t i = 0; i < ids.size(); ++i) {
      const int32_t tokens = engine.apply(ids[i], shapes[i]);
      const SeqState& s = engine.seqs_[ids[i]];
      out[i] = {tokens, tokens > 0 ? engine.accepted_by(shapes[i]) : int16_t(-1),
                tokens > 0 && s.generated == tokens, s.status == SeqStatus::kFinished};
    }
  }

  // The engine's own admission rule beyond the context length, applied to the request's worst
  // case, LIFETIME tokens (kNone: admitted).
  virtual RejectReason engine_reject(const SeqState& s, int64_t lifetime) const = 0;
  // Puts an admitted request into this engine's `waiting`.
  virtual void enqueue(uint32_t id) = 0;
  // A request's slot was added (the scheduler grew by one).
  virtual void add_request_slot() {}
  // Frees the blocks request ID holds (finished or preempted).
  virtual void free_request(uint32_t id) = 0;

  // The batch being built.
  Batch& building() { return bufs_[cur_]; }
  // The start of a step: an empty batch and outputs.
  void begin_step();
  // Request ID enters the batch with NEW_TOKENS to compute, DRAFTS of them speculative; returns
  // whether it then samples a token (its shape's emits_token).
  // Inline: once per scheduled request and step.
  [[gnu::always_inline]] bool add_to_batch(uint32_t id, int64_t new_tokens, int drafts = 0) {
    const SeqState& s = seqs_[id];
    SeqShape shape;
    shape.new_tokens = static_cast<int32_t>(new_tokens);
    shape.context_tokens = s.num_computed_tokens;
    shape.prefill = s.prefill_stage;
    shape.draft_tokens = static_cast<uint16_t>(drafts);
    // Not a partial prefill: it computes every known token (V1's is_prefill_chunk is false: the
    // computed tokens reach num_tokens + num_output_placeholders; drafts cut by the budget still
    // sample).
    shape.emits_token = s.num_computed_tokens + new_tokens >= s.num_tokens() + s.placeholders;
    building().add(id, shape);
    return shape.emits_token;
  }
  // Preemption by recompute, the engine's blocks already freed: its computed tokens are thrown
  // away, it is waiting again and recorded as preempted this step.
  void mark_preempted(uint32_t id);
  // Request ID reached max_tokens and left (its blocks freed by the engine): removed from
  // `running` after the batch is applied.
  void finished(uint32_t id);

  SchedulerConfig config_;
  std::vector<SeqState, boost::alignment::aligned_allocator<SeqState, 64>> seqs_;
  RequestQueue running_;
  StepOutputs out_;
  int64_t step_cached_tokens_ = 0;

 private:
  void free_finished_seq_groups();

  // A ring of NUM_BUFS_ batches, one for each that may be in flight (two at least); CUR_ the last
  // built. An array, not a vector: the step's loops reach the batch being built at a fixed offset.
  Batch bufs_[kMaxBatchesInFlight];
  int num_bufs_ = 2;
  int next_buffer(int i) const { return i + 1 == num_bufs_ ? 0 : i + 1; }
  std::vector<Applied> applied_;  // update_from_output's, grown to the largest batch
  size_t last_applied_ = 0;
  int cur_ = 0, oldest_ = 0, in_flight_ = 0;

  bool any_finished_ = false;
  std::vector<int32_t> lora_requests_;  // by adapter id: requests added, not finished
  int num_loras_ = 0;                   // adapters with such requests
  int64_t num_preemptions_ = 0;
  int64_t discarded_tokens_ = 0;
};

// The scheduler of CONFIG's policy: a V0Scheduler or a V1Scheduler. NUM_GPU_BLOCKS > 0 (>= 2 for
// vllm-v1, whose count includes the null block). Requests have ids 0..num_requests-1. HASHER
// names block contents for the prefix cache (when on); it must outlive the scheduler.
std::unique_ptr<Scheduler> make_scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks,
                                          size_t num_requests, const BlockHasher* hasher = nullptr);

template <class OnToken>
void Scheduler::update_from_output(OnToken&& on_token) {
  if (in_flight_ == 0) return;
  const Batch& b = bufs_[oldest_];
  // Every entry applied before any is reported: ON_TOKEN reaches the listeners, which may add
  // requests (a client's next) but touch no running request's state.
  if (applied_.size() < b.size()) applied_.resize(b.size());
  apply_batch(b, applied_.data());
  last_applied_ = b.size();
  const auto ids = b.ids();
  for (size_t i = 0; i < ids.size(); ++i) {
    const Applied& a = applied_[i];
    if (a.tokens > 0) on_token(ids[i], a.tokens, a.first, a.finished);
  }
  free_finished_seq_groups();
  --in_flight_;
  oldest_ = next_buffer(oldest_);
}

}  // namespace servesim
