#include "traces/trace_info.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_set>

#include "util/field_path.hpp"

namespace servesim {

TraceInfo trace_info(const Trace& t) {
  TraceInfo s;
  const size_t n = t.size();
  s.requests = n;
  if (n == 0) return s;
  if (t.timed) {
    s.span_s = t.arrival_s.back() - t.arrival_s.front();
    if (s.span_s > 0) s.mean_rate = double(n - 1) / s.span_s;
    // The busiest 5 minutes: the most arrivals in any [t, t + 300 s) window (two pointers).
    size_t best = 0;
    for (size_t lo = 0, hi = 0; hi < n; ++hi) {
      while (t.arrival_s[hi] - t.arrival_s[lo] >= 300.0)
        ++lo;
      best = std::max(best, hi - lo + 1);
    }
    // A trace shorter than 5 minutes has no 5-minute peak (its count over 300 s would read as a
    // rate below the mean).
    s.peak_rate_5min = s.span_s >= 300.0 ? double(best) / 300.0 : NAN;
    if (n > 2) {
      double sum = 0, sq = 0;
      for (size_t i = 1; i < n; ++i) {
        const double g = t.arrival_s[i] - t.arrival_s[i - 1];
        sum += g;
        sq += g * g;
      }
      const double m = sum / double(n - 1);
      const double var = std::max(0.0, sq / double(n - 1) - m * m);
      s.burstiness_cv = m > 0 ? std::sqrt(var) / m : 0;
    }
  }
  std::vector<double> in(t.input_tokens.begin(), t.input_tokens.end());
  std::vector<double> out(t.output_tokens.begin(), t.output_tokens.end());
  for (int32_t v : t.input_tokens)
    s.total_input_tokens += v;
  for (int32_t v : t.output_tokens)
    s.total_output_tokens += v;
  s.input_tokens = summarize(in);
  s.output_tokens = summarize(out);
  if (t.has_hash_ids()) {
    s.has_hash_ids = true;
    std::unordered_set<uint64_t> seen;
    seen.reserve(t.hash_ids.size());
    int64_t repeated = 0;
    const int64_t bs = t.hash_block_size;
    for (size_t i = 0; i < n; ++i) {
      const int64_t input = t.input_tokens[i];
      for (uint64_t k = t.hash_offsets[i]; k < t.hash_offsets[i + 1]; ++k) {
        const int64_t j = int64_t(k - t.hash_offsets[i]);
        const int64_t block_tokens = std::clamp<int64_t>(input - j * bs, 0, bs);
        if (!seen.insert(t.hash_ids[k]).second) repeated += block_tokens;
      }
    }
    s.distinct_blocks = seen.size();
    s.repeated_prompt_share =
        s.total_input_tokens ? double(repeated) / double(s.total_input_tokens) : 0;
  }
  return s;
}

void print_trace_info(std::ostream& out, const Trace& t, const TraceInfo& s) {
  char buf[512];
  const std::string& file = t.file.empty() ? t.source : t.file;
  out << "trace: " << (file.empty() ? "(generated)" : file) << " (" << t.format;
  if (!t.source.empty() && t.source != file) out << ", from " << t.source;
  out << ")\n";
  if (!t.options.empty()) out << "options: " << t.options << "\n";
  const TraceCounts& c = t.counts;
  std::snprintf(buf, sizeof buf,
                "rows: %lld read, %llu kept; skipped: %lld bad, %lld failed (0 response tokens), "
                "%lld filtered, %lld outside window, %lld beyond %s\n",
                (long long)c.rows_read, (unsigned long long)s.requests, (long long)c.skipped_bad,
                (long long)c.skipped_failed, (long long)c.filtered, (long long)c.outside_window,
                (long long)c.beyond_max, spell_field(field::kMaxRequests, true).c_str());
  out << buf;
  if (c.kept_failed || c.clipped_input || c.clipped_output) {
    std::snprintf(buf, sizeof buf, "kept failed: %lld; clipped inputs: %lld, outputs: %lld\n",
                  (long long)c.kept_failed, (long long)c.clipped_input,
                  (long long)c.clipped_output);
    out << buf;
  }
  for (const std::string& e : t.first_errors)
    out << "  skipped: " << e << "\n";
  if (t.timed) {
    std::snprintf(buf, sizeof buf, "span: %.1f s (%.2f h); mean rate %.3f req/s; ", s.span_s,
                  s.span_s / 3600, s.mean_rate);
    out << buf;
    if (std::isfinite(s.peak_rate_5min)) {
      std::snprintf(buf, sizeof buf, "5-minute peak %.3f req/s; ", s.peak_rate_5min);
    } else {
      std::snprintf(buf, sizeof buf, "5-minute peak n/a (under 5 minutes); ");
    }
    out << buf;
    std::snprintf(buf, sizeof buf, "burstiness (CV of inter-arrival times) %.2f\n",
                  s.burstiness_cv);
    out << buf;
  } else {
    out << "arrivals: none (a length-only trace: replay it with "
        << spell_field(field::kRequestRate, true) << ")\n";
  }
  std::snprintf(buf, sizeof buf, "%-14s %9s %9s %9s %9s %9s %9s %9s\n", "tokens", "mean", "p50",
                "p90", "p95", "p99", "max", "total");
  out << buf;
  auto row = [&](const char* name, const Stats& st, int64_t total) {
    std::snprintf(buf, sizeof buf, "%-14s %9.1f %9.0f %9.0f %9.0f %9.0f %9.0f %9lld\n", name,
                  st.mean, st.p50, st.p90, st.p95, st.p99, st.max, (long long)total);
    out << buf;
  };
  row("input_tokens", s.input_tokens, s.total_input_tokens);
  row("output_tokens", s.output_tokens, s.total_output_tokens);
  if (s.has_hash_ids) {
    std::snprintf(buf, sizeof buf,
                  "prefix blocks (%d tokens): %llu distinct; %.1f%% of prompt tokens are in "
                  "blocks an earlier request already brought\n",
                  t.hash_block_size, (unsigned long long)s.distinct_blocks,
                  s.repeated_prompt_share * 100);
    out << buf;
  }
  if (!t.class_names.empty()) {
    std::vector<uint64_t> per(t.class_names.size(), 0);
    for (uint8_t k : t.request_class)
      ++per[k];
    out << "classes:";
    for (size_t k = 0; k < per.size(); ++k) {
      out << (k ? "," : "") << " " << t.class_names[k] << " " << per[k];
    }
    out << "\n";
  }
}

}  // namespace servesim
