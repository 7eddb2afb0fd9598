#include "analysis/timeline.hpp"

#include <algorithm>

#include <cmath>
#include <cstdlib>
#include <string>

#include "util/error.hpp"

namespace servesim {

namespace {

using ordered_json = nlohmann::ordered_json;

constexpr int kStepsTrack = 0, kTransfersTrack = 1;

double us(double s) {
  return std::round(s * 1e9) / 1e3;  // microseconds, to the nanosecond
}

bool overlaps(double start, double end, double from, double to) {
  return start <= to && end >= from;
}

ordered_json metadata(const char* what, int pid, int tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

// A request's phase as an async span on replica PID.
void phase(ordered_json& events, uint32_t id, int pid, const char* name, double start, double end) {
  if (!(end >= start) || start < 0) return;
  const std::string key = std::to_string(id);
  events.push_back({{"name", name},
                    {"cat", "request"},
                    {"ph", "b"},
                    {"id", key},
                    {"pid", pid},
                    {"tid", 0},
                    {"ts", us(start)},
                    {"args", {{"request", id}}}});
  events.push_back({{"name", name},
                    {"cat", "request"},
                    {"ph", "e"},
                    {"id", key},
                    {"pid", pid},
                    {"tid", 0},
                    {"ts", us(end)}});
}

}  // namespace

std::pair<double, double> parse_timeline_window(const std::string& text) {
  const size_t colon = text.find(':');
  char* e1 = nullptr;
  char* e2 = nullptr;
  const double a = colon == std::string::npos ? NAN : std::strtod(text.c_str(), &e1);
  const double b = colon == std::string::npos ? NAN : std::strtod(text.c_str() + colon + 1, &e2);
  if (colon == std::string::npos || e1 != text.c_str() + colon || *e2 != '\0' ||
      !std::isfinite(a) || !std::isfinite(b) || a < 0 || b <= a) {
    throw Error(field::kTimelineWindow,
                "'" + text + "': expected START:END in seconds, END > START >= 0");
  }
  return {a, b};
}

ordered_json timeline_json(const RunResult& r, double from_s, double to_s) {
  const FleetSummary& f = r.fleet;
  const size_t replicas = f.replicas.empty() ? 1 : f.replicas.size();
  ordered_json events = ordered_json::array();
  for (size_t i = 0; i < replicas; ++i) {
    const int pid = int(i);
    std::string name = "replica " + std::to_string(i);
    if (i < f.pool.size()) name += " (" + f.pool[i] + ")";
    events.push_back(metadata("process_name", pid, 0, name));
    events.push_back(metadata("thread_name", pid, kStepsTrack, "steps"));
    if (f.kv_transfers > 0) {
      events.push_back(metadata("thread_name", pid, kTransfersTrack, "KV transfers in"));
    }
  }
  for (const StepRecord& s : r.steps) {
    if (!overlaps(s.start_s, s.start_s + s.duration_s, from_s, to_s)) continue;
    const char* kind = s.prefill_tokens > 0 && s.decode_tokens > 0 ? "mixed"
                       : s.prefill_tokens > 0                      ? "prefill"
                                                                   : "decode";
    events.push_back({{"name", kind},
                      {"cat", "step"},
                      {"ph", "X"},
                      {"pid", int(s.replica)},
                      {"tid", kStepsTrack},
                      {"ts", us(s.start_s)},
                      {"dur", us(s.duration_s)},
                      {"args",
                       {{"prefill_tokens", s.prefill_tokens},
                        {"decode_tokens", s.decode_tokens},
                        {"batch_size", s.batch_size},
                        {"kv_blocks_used", s.kv_blocks_used}}}});
  }
  const bool disaggregated = !f.decode_of.empty();
  for (size_t id = 0; id < r.requests.size(); ++id) {
    const RequestRecord& q = r.requests[id];
    const double end = q.last_token_s >= 0 ? q.last_token_s : q.arrival_s;
    if (!overlaps(q.arrival_s, end, from_s, to_s)) continue;
    const int first = f.replica_of.empty() ? 0 : int(f.replica_of[id]);
    const bool moved = disaggregated && f.decode_of[id] != UINT32_MAX;
    const int last = moved ? int(f.decode_of[id]) : first;
    const uint32_t rid = uint32_t(id);
    phase(events, rid, first, "queued", q.arrival_s,
          q.first_scheduled_s >= 0 ? q.first_scheduled_s : end);
    if (moved) {  // the prompt on the prefill replica, its KV on the way, the rest on the decode
      phase(events, rid, first, "prefill", q.first_scheduled_s, f.kv_sent_s[id]);
      events.push_back({{"name", "KV transfer"},
                        {"cat", "transfer"},
                        {"ph", "X"},
                        {"pid", last},
                        {"tid", kTransfersTrack},
                        {"ts", us(f.kv_sent_s[id])},
                        {"dur", us(f.kv_landed_s[id] - f.kv_sent_s[id])},
                        {"args", {{"request", rid}, {"from_replica", first}}}});
      phase(events, rid, last, "first token", f.kv_landed_s[id], q.first_token_s);
    } else {
      phase(events, rid, first, "prefill", q.first_scheduled_s, q.first_token_s);
    }
    phase(events, rid, last, "decode", q.first_token_s, q.last_token_s);
  }
  // An autoscaled fleet: its size as a counter track (ready, starting, draining replicas), from
  // the state at FROM_S to the last change before TO_S.
  const AutoscaleSummary& a = f.autoscale;
  if (a.enabled && !a.timeline.empty()) {
    const int pid = int(replicas);
    events.push_back(metadata("process_name", pid, 0, "autoscaler (" + a.metric + ")"));
    for (size_t k = 0; k < a.timeline.size(); ++k) {
      const ScaleEvent& e = a.timeline[k];
      const bool next_in = k + 1 < a.timeline.size() && a.timeline[k + 1].time_s > from_s;
      if (e.time_s > to_s || (e.time_s < from_s && !next_in)) continue;
      events.push_back(
          {{"name", "replicas"},
           {"ph", "C"},
           {"pid", pid},
           {"ts", us(std::max(e.time_s, from_s))},
           {"args", {{"ready", e.ready}, {"starting", e.starting}, {"draining", e.draining}}}});
    }
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"generator", "servesim"}, {"window_s", {from_s, to_s}}, {"replicas", replicas}}}};
}

}  // namespace servesim
