// SeqState: what the scheduler knows of one request (a vLLM SequenceGroup with a single sequence):
// its lengths, how many tokens are known (prompt + generated) and how many of them have their KV
// computed, its KV block table size and its status. Promises: 0 <= computed <= num_tokens();
// generated <= output_tokens; a request holds blocks only while running.
#pragma once

#include <cstdint>

namespace servesim {

enum class SeqStatus : uint8_t {
  kPending,   // not arrived yet
  kWaiting,   // in `waiting` (new, or preempted and waiting to recompute)
  kRunning,   // in `running`: holds KV blocks
  kFinished,  // all output tokens emitted
  kRejected,  // will never run; see RejectReason
};

enum class RejectReason : uint8_t {
  kNone,
  // input + output > max_model_len: vLLM's OpenAI server refuses the request
  // (serving_engine._validate_input: "This model's maximum context length is ...").
  kContextLength,
  // Its whole lifetime (input + output - 1 tokens) needs more KV blocks than the cache holds:
  // it can never finish, even alone.
  kKvCapacity,
  // Scheduler: prompt (plus recomputed tokens) longer than the prompt limit,
  // min(max_model_len, max_num_batched_tokens) without chunked prefill (FINISHED_IGNORED).
  kPromptLimit,
  // Block manager answers NEVER: prompt blocks exceed total blocks minus the watermark
  // (FINISHED_IGNORED).
  kBlockManagerNever,
};

inline const char* to_string(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "";
    case RejectReason::kContextLength:
      return "input+output exceeds max_model_len";
    case RejectReason::kKvCapacity:
      return "needs more KV blocks than the cache holds";
    case RejectReason::kPromptLimit:
      return "prompt exceeds the scheduler's prompt limit";
    case RejectReason::kBlockManagerNever:
      return "prompt blocks exceed KV capacity minus watermark";
  }
  return "";
}

struct SeqState {
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
  int32_t generated = 0;     // output tokens sampled so far (kept across preemption)
  int32_t computed = 0;      // known tokens whose KV is in the cache (0 after preemption)
  int32_t table_tokens = 0;  // token slots in its block table
  int32_t blocks = 0;        // KV blocks it holds
  int32_t preemptions = 0;
  SeqStatus status = SeqStatus::kPending;
  RejectReason reject = RejectReason::kNone;
  bool prefill_stage = true;  // vLLM SequenceStage.PREFILL until every known token is computed

  // Tokens known: the prompt and what has been generated (vLLM seq.get_len()).
  int32_t num_tokens() const { return input_tokens + generated; }
  // Tokens still to compute before the next token can be sampled.
  int32_t num_new_tokens() const { return num_tokens() - computed; }
};

}  // namespace servesim
