// RequestSpec: one request as a workload states it, before any simulation: when it arrives, how
// many tokens it brings and asks for, its priority, and where its prompt's tokens come from (for
// the prefix cache). Workloads (generators, trace importers) produce them sorted by arrival time
// with ids 0..N-1 in that order; the simulator never modifies them.
//
// Token content. servesim never sees token ids; it sees where tokens come from. A token is named
// by (stream, position): two tokens are the same exactly when both are equal. A request's prompt
// is covered, from position 0, by its TokenSpans (consecutive, in order); prompt tokens past the
// last span, and every output token, are the request's own, shared with nobody, unless
// `output_continues` says the output carries on the last span's stream (a multi-turn session,
// whose next turn's prompt holds this turn's answer). A request with no span shares nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace servesim {

// Arrivals, and every simulated time, stay below this many seconds (31.7 years): a double still
// resolves 0.12 us there, so step times of a few us keep their precision.
inline constexpr double kMaxSimTime_s = 1e9;

// Prompt positions [prompt_pos, prompt_pos + tokens) hold positions [stream_pos, stream_pos +
// tokens) of STREAM.
struct TokenSpan {
  uint64_t stream = 0;
  int32_t stream_pos = 0;
  int32_t prompt_pos = 0;
  int32_t tokens = 0;
};

struct RequestSpec {
  uint32_t id = 0;
  double arrival_s = 0;       // seconds from the start of the workload
  int32_t input_tokens = 0;   // prompt length, >= 1
  int32_t output_tokens = 0;  // tokens to generate (vLLM max_tokens with ignore_eos), >= 1
  // vLLM's request priority (--scheduling-policy priority): lower runs first.
  int32_t priority = 0;
  // Workload::spans[first_span, first_span + num_spans) cover the prompt from position 0.
  uint32_t first_span = 0;
  uint32_t num_spans = 0;
  bool output_continues = false;  // output tokens continue the last span's stream
  // The LoRA adapter it asks for (vLLM's lora_int_id): 0 for the base model, 1..N.
  uint16_t lora = 0;
};

// The most LoRA adapters a workload names (ids 1..kMaxLoras).
inline constexpr int64_t kMaxLoras = 65535;

// A request's input by modality (ServeGen's multimodal clients: text_tokens, image_tokens, ...):
// the names, and for request I its counts at tokens[I * names.size() + k], which sum to its
// input_tokens before the clamp to [1, kMaxTokens]. Empty when the input is one modality. Kept
// for the results' columns only: the simulator sees input_tokens.
struct InputParts {
  std::vector<std::string> names;
  std::vector<int32_t> tokens;
  bool empty() const { return names.empty(); }
  int32_t at(size_t request, size_t k) const { return tokens[request * names.size() + k]; }
};

// The requests, in arrival order, and the spans their prompts share. A vector of RequestSpec with
// side tables, so that generators and importers fill it as a vector.
struct Workload : std::vector<RequestSpec> {
  using std::vector<RequestSpec>::vector;
  std::vector<TokenSpan> spans;
  InputParts input_parts;
  bool has_content() const { return !spans.empty(); }
};

// Stream ids for the kinds of shared content, distinct by construction (a 64-bit mix of a kind tag
// and a number), so that generators and importers never collide.
enum class StreamKind : uint64_t {
  kRequest = 1,
  kPrefix = 2,
  kSession = 3,
  kTraceBlock = 4,
  kPrompt = 5,  // a whole prompt that generated requests send again (shared_prefix)
};
uint64_t stream_id(StreamKind kind, uint64_t n);

}  // namespace servesim
