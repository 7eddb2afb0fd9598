// The front end: vLLM's OpenAI-compatible API server in front of every engine. Its latency is the
// time a request spends outside the engine, in and out (HTTP, tokenization, the IPC hop to the
// engine core and back, detokenization and the stream to the client); servesim delays the
// request's arrival at the engine by all of it, so every TTFT and end-to-end latency a client
// measures holds it once. It is the server's, not the
// GPU's or the engine's: the same for every cost model, every policy and every replica of a fleet
// (sim/gateway.cpp adds it once per request, when the request is sent).
#pragma once

namespace servesim {

// Fitted on the TTFT of real vLLM 0.15.1 runs (../shared/groundtruth; README, "Validation against
// real vLLM"): no published figure gives it per request.
inline constexpr double kDefaultFrontendLatencyS = 8.35e-3;

}  // namespace servesim
