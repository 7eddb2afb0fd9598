// SeqState: what the scheduler knows of one request (a vLLM SequenceGroup with a single sequence):
// its lengths, how many tokens are known (prompt + generated) and how many of them have their KV
// computed, its KV block table size and its status. It is the one owner of a request's state: the
// run's per-request records (sim/metrics.hpp) extend it with timestamps.
// Promises: 0 <= num_computed_tokens <= num_tokens() + placeholders; generated <= output_tokens; a
// request holds blocks only while running, or once its KV loads from the CPU tier (until it
// finishes or is preempted).
#pragma once

#include <climits>
#include <cstdint>

namespace servesim {

enum class SeqStatus : uint8_t {
  kPending,  // not arrived yet
  kWaiting,  // in `waiting` (new, or preempted and waiting to recompute)
  kRunning,  // in `running`: holds KV blocks
  // vLLM V1's WAITING_FOR_REMOTE_KVS: in `skipped_waiting`, holding the KV blocks a transfer
  // from the CPU tier is filling (scheduler/kv_offload.hpp).
  kWaitingForRemoteKvs,
  kFinished,  // all output tokens emitted
  kRejected,  // will never run; see RejectReason
};

// Why a request can never finish. The front end (Scheduler::add_request) rejects such requests
// before they are queued, so none is dropped after it has started to stream tokens.
enum class RejectReason : uint8_t {
  kNone,
  // input + output > max_model_len: vLLM's OpenAI server refuses the request
  // (serving_engine._validate_input: "This model's maximum context length is ...").
  kContextLength,
  // Without chunked prefill, a prompt longer than vLLM's _get_prompt_limit() (min(max_model_len,
  // max_num_batched_tokens)) is ignored by vLLM's scheduler (FINISHED_IGNORED); a preempted
  // request recomputes prompt and generated tokens as one prompt, so input + output - 1 must fit.
  kPromptLimit,
  // Its KV for input + output - 1 tokens (the last sampled token is never fed back) needs more
  // blocks than the cache minus the watermark (vLLM's can_allocate NEVER on re-admission) minus
  // the one block vLLM's can_append_slots always asks for: it would be ignored or preempt itself
  // forever.
  kKvCapacity,
};
inline constexpr int kNumRejectReasons = 4;

// The machine-readable name used in JSON and CSV.
inline const char* reason_code(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "none";
    case RejectReason::kContextLength:
      return "context_length";
    case RejectReason::kPromptLimit:
      return "prompt_limit";
    case RejectReason::kKvCapacity:
      return "kv_capacity";
  }
  return "none";
}

struct SeqState {
  int32_t input_tokens = 0;   // vLLM get_prompt_len()
  int32_t output_tokens = 0;  // vLLM SamplingParams.max_tokens (with ignore_eos)
  int32_t generated = 0;      // vLLM get_output_len(): sampled so far, kept across preemption
  // Tokens whose KV is in the cache or being computed by a scheduled step (0 after preemption).
  // V0 counts a step's tokens when it has run (update_num_computed_tokens in
  // _process_model_outputs); V1 when it is scheduled (Scheduler._update_after_schedule).
  int32_t num_computed_tokens = 0;
  // vLLM V1 async scheduling (AsyncScheduler): tokens a scheduled step will sample that have not
  // come back yet (num_output_placeholders): one per step in flight, so at most 2 without
  // speculative decoding.
  int32_t placeholders = 0;
  int32_t table_tokens = 0;  // token slots in its block table
  int32_t blocks = 0;        // KV blocks it holds
  int32_t preemptions = 0;
  int32_t cached_tokens = -1;  // prompt tokens the prefix cache held at first scheduling
  int32_t priority = 0;        // vLLM's request priority: lower runs first
  // Prompt tokens whose KV another instance computed and sent (disaggregated prefill: vLLM's KV
  // connector, get_num_new_matched_tokens), taken at the first scheduling only.
  int32_t external_tokens = 0;
  // V1's KV cache manager (KvCacheManager, which keeps it with `blocks`): the computed tokens at
  // which the request's next full block is to be cached; INT32_MAX while it holds no block or
  // caching is off. Here so that a step's decode finds it on the state's one cache line.
  int32_t next_cached_block_end = INT32_MAX;
  // When the workload offers the request (s; vLLM's Request.arrival_time): orders equal
  // priorities. Not the time it reached the replica (RequestTimes::arrival_s, sim/metrics.hpp).
  double workload_arrival_s = 0;
  SeqStatus status = SeqStatus::kPending;
  RejectReason reject = RejectReason::kNone;
  bool prefill_stage = true;  // vLLM SequenceStage.PREFILL until every known token is computed
  // vLLM V1 speculative decoding (scheduler/spec_decode.hpp): the drafts proposed for the
  // request's next step, len(request.spec_token_ids).
  uint8_t spec_tokens = 0;
  uint16_t lora = 0;  // its LoRA adapter (vLLM's lora_int_id), 0 for none

  // Tokens known: the prompt and what has been generated (vLLM seq.get_len()).
  int32_t num_tokens() const { return input_tokens + generated; }
  // Tokens still to compute before the next token can be sampled: V0's
  // get_num_uncomputed_tokens(), V1's num_tokens_with_spec + num_output_placeholders -
  // num_computed_tokens (no placeholders or drafts on V0).
  int32_t num_new_tokens() const {
    return num_tokens() + spec_tokens + placeholders - num_computed_tokens;
  }
};
// One cache line: Scheduler keeps the states line-aligned, so that a step's pass over its running
// requests touches one line per request (with malloc's 16-byte alignment every state had its
// status and stage in the next line, and V1's passes missed on both).
static_assert(sizeof(SeqState) == 64);

}  // namespace servesim
