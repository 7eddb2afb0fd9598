// The timeline: a run's steps, requests and KV transfers in a window of simulated time, as a
// Chrome/Perfetto trace (the JSON "Trace Event Format": open it in ui.perfetto.dev or
// chrome://tracing). One process per replica (named by its pool and GPU), with a track of steps
// ("X" events named prefill, decode or mixed, their tokens and KV blocks in args), a track of
// incoming KV transfers, and each request as an async span in three phases: queued (arrival to
// first scheduling), prefill (to its first token) and decode (to its last). Times are
// microseconds from the start of the workload.
// Promises: only what overlaps [from_s, to_s] is written; the output depends only on the run.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/simulation.hpp"

namespace servesim {

// REQUIRES: R was simulated with its steps kept (SimulateOptions::keep_steps).
nlohmann::ordered_json timeline_json(const RunResult& r, double from_s, double to_s);

// "START:END" in seconds, END > START >= 0: Error naming --timeline-window otherwise.
std::pair<double, double> parse_timeline_window(const std::string& text);

}  // namespace servesim
