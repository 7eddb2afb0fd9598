#include "analysis/replicates.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>

#include "analysis/check.hpp"
#include "analysis/report.hpp"
#include "util/format.hpp"

namespace servesim {

namespace {

// A headline metric: its JSON path and how to read it off a summary.
struct Headline {
  const char* path;
  double (*get)(const RunSummary&);
};

const std::vector<Headline>& headlines() {
  static const std::vector<Headline> h = {
      {"ttft_ms.p50", [](const RunSummary& s) { return s.ttft_ms.p50; }},
      {"ttft_ms.p99", [](const RunSummary& s) { return s.ttft_ms.p99; }},
      {"itl_ms.p50", [](const RunSummary& s) { return s.itl_ms.p50; }},
      {"itl_ms.p99", [](const RunSummary& s) { return s.itl_ms.p99; }},
      {"tpot_ms.p50", [](const RunSummary& s) { return s.tpot_ms.p50; }},
      {"e2e_ms.p50", [](const RunSummary& s) { return s.e2e_ms.p50; }},
      {"otps.p50", [](const RunSummary& s) { return s.otps.p50; }},
      {"throughput.requests_per_s", [](const RunSummary& s) { return s.requests_per_s; }},
      {"throughput.output_tokens_per_s", [](const RunSummary& s) { return s.output_tokens_per_s; }},
      {"throughput.goodput_req_s", [](const RunSummary& s) { return s.goodput_req_s; }},
      {"requests.rejected_share", [](const RunSummary& s) { return s.rejected_share(); }},
      {"overloaded_share", [](const RunSummary& s) { return s.overload.overloaded ? 1.0 : 0.0; }},
  };
  return h;
}

}  // namespace

void summarise(Replicate& r) {
  std::vector<double> v;
  for (double x : r.values) {
    if (std::isfinite(x)) v.push_back(x);
  }
  r.n = v.size();
  if (v.empty()) return;
  double sum = 0;
  for (double x : v)
    sum += x;
  r.mean = sum / double(v.size());
  if (v.size() < 2) return;
  double ss = 0;
  for (double x : v)
    ss += (x - r.mean) * (x - r.mean);
  r.stddev = std::sqrt(ss / double(v.size() - 1));
  const double h = ci95_half_width(r.stddev, v.size());
  r.ci_low = r.mean - h;
  r.ci_high = r.mean + h;
}

double ci95_half_width(double s, size_t n) {
  if (n < 2) return NAN;
  const boost::math::students_t t(double(n - 1));
  return boost::math::quantile(t, 0.975) * s / std::sqrt(double(n));
}

std::vector<Replicate> replicate(const std::vector<RunResult>& runs) {
  std::vector<Replicate> out;
  for (const Headline& h : headlines()) {
    Replicate r;
    r.metric = h.path;
    for (const RunResult& run : runs)
      r.values.push_back(h.get(run.summary));
    summarise(r);
    if (r.n > 0) out.push_back(std::move(r));
  }
  return out;
}

nlohmann::ordered_json replicates_json(const std::vector<Replicate>& r,
                                       const std::vector<int64_t>& seeds) {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const Replicate& x : r) {
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (double v : x.values)
      values.push_back(json_number(v));
    metrics[x.metric] = {{"mean", json_number(x.mean)},
                         {"ci95", {json_number(x.ci_low), json_number(x.ci_high)}},
                         {"stddev", json_number(x.stddev)},
                         {"n", x.n},
                         {"values", values}};
  }
  return {{"num_seeds", seeds.size()}, {"seeds", seeds}, {"metrics", metrics}};
}

void print_replicates(std::ostream& out, const std::vector<Replicate>& r) {
  out << format("%-32s %12s %27s %12s %12s\n", "metric", "mean", "95% CI (Student t)", "min",
                "max");
  auto cell = [](double v) { return std::isfinite(v) ? format("%.4g", v) : std::string("-"); };
  for (const Replicate& x : r) {
    double lo = INFINITY, hi = -INFINITY;
    for (double v : x.values) {
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    const std::string ci = format("[%s, %s]", cell(x.ci_low).c_str(), cell(x.ci_high).c_str());
    out << format("%-32s %12s %27s %12s %12s\n", x.metric.c_str(), cell(x.mean).c_str(), ci.c_str(),
                  cell(lo).c_str(), cell(hi).c_str());
  }
}

void print_replicate_warnings(std::ostream& out, const std::vector<RunResult>& runs,
                              const std::string& prefix) {
  size_t overloaded = 0, rejecting = 0;
  for (const RunResult& r : runs) {
    overloaded += r.summary.overload.overloaded;
    rejecting += r.summary.rejected > 0;
  }
  if (overloaded > 0) {
    out << "WARNING: " << prefix
        << format(
               "overloaded in %zu of %zu seeds: the queue grew for as long as requests "
               "arrived, so latencies measure the run's length\n",
               overloaded, runs.size());
  }
  if (rejecting > 0) {
    out << "WARNING: " << prefix
        << format("requests rejected in %zu of %zu seeds: they are in no latency statistic\n",
                  rejecting, runs.size());
  }
}

namespace {

const Replicate* find(const std::vector<Replicate>& r, const char* metric) {
  for (const Replicate& x : r) {
    if (x.metric == metric) return &x;
  }
  return nullptr;
}

// "67.6+-4.1", or "-".
std::string mean_ci(const std::vector<Replicate>& r, const char* metric, int decimals) {
  const Replicate* x = find(r, metric);
  if (x == nullptr || !std::isfinite(x->mean)) return "-";
  const double h = (x->ci_high - x->ci_low) / 2;
  return std::isfinite(h) ? format("%.*f+-%.*f", decimals, x->mean, decimals, h)
                          : format("%.*f", decimals, x->mean);
}

bool kept_up(const std::vector<RunResult>& runs) {
  for (const RunResult& r : runs) {
    if (r.summary.overload.overloaded || rejection_heavy(r.summary)) return false;
  }
  return true;
}

}  // namespace

namespace {

// Seed k of each run list: the seeds every policy of a compare shares.
std::vector<int64_t> seed_indices(size_t n) {
  std::vector<int64_t> v(n);
  for (size_t k = 0; k < n; ++k)
    v[k] = int64_t(k);
  return v;
}

ChangeInterval paired_change(const Replicate& first, const Replicate& other) {
  return change_interval(seed_indices(first.values.size()), first.values,
                         seed_indices(other.values.size()), other.values, 0.95);
}

}  // namespace

nlohmann::ordered_json paired_changes_json(const std::vector<RunResult>& first,
                                           const std::vector<RunResult>& other) {
  const std::vector<Replicate> a = replicate(first), b = replicate(other);
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const Replicate& x : a) {
    const Replicate* y = find(b, x.metric.c_str());
    if (y == nullptr) continue;
    const ChangeInterval c = paired_change(x, *y);
    metrics[x.metric] = {{"change", json_number(c.current - c.baseline)},
                         {"ci95", {json_number(c.low), json_number(c.high)}},
                         {"test", change_test_name(c.test)},
                         {"n", c.n_current}};
  }
  return {{"vs", run_label(first.front())}, {"metrics", metrics}};
}

void print_compare_replicates(std::ostream& out, const std::vector<std::vector<RunResult>>& runs) {
  const std::pair<const char*, const char*> columns[] = {
      {"TTFT p50 ms", "ttft_ms.p50"}, {"TTFT p99 ms", "ttft_ms.p99"},
      {"ITL p99 ms", "itl_ms.p99"},   {"E2E p50 ms", "e2e_ms.p50"},
      {"OTPS p50", "otps.p50"},       {"out tok/s", "throughput.output_tokens_per_s"}};
  out << format("%-14s", "scheduler");
  for (const auto& [title, metric] : columns)
    out << format(" %17s", title);
  out << "  (mean +- 95% CI half width)\n";
  const RunResult* best_ttft = nullptr;
  const RunResult* best_itl = nullptr;
  double ttft = INFINITY, itl = INFINITY;
  for (const auto& policy : runs) {
    const std::vector<Replicate> r = replicate(policy);
    out << format("%-14s", run_label(policy.front()).c_str());
    for (const auto& [title, metric] : columns)
      out << format(" %17s", mean_ci(r, metric, 1).c_str());
    out << (kept_up(policy) ? "" : "  OVERLOADED or rejecting") << "\n";
    if (!kept_up(policy)) continue;
    const Replicate* t = find(r, "ttft_ms.p50");
    const Replicate* i = find(r, "itl_ms.p99");
    if (t && t->mean < ttft) ttft = t->mean, best_ttft = &policy.front();
    if (i && i->mean < itl) itl = i->mean, best_itl = &policy.front();
  }
  // Paired differences against the first policy: the seeds are shared, so seed noise cancels.
  if (runs.size() > 1 && runs.front().size() > 1) {
    out << "\nchange from " << run_label(runs.front().front())
        << ", paired over the shared seeds (mean [95% CI]):\n";
    const std::vector<Replicate> first = replicate(runs.front());
    for (size_t i = 1; i < runs.size(); ++i) {
      const std::vector<Replicate> other = replicate(runs[i]);
      out << format("%-14s", run_label(runs[i].front()).c_str());
      for (const auto& [title, metric] : columns) {
        const Replicate* x = find(first, metric);
        const Replicate* y = find(other, metric);
        std::string cell = "-";
        if (x != nullptr && y != nullptr) {
          const ChangeInterval c = paired_change(*x, *y);
          if (std::isfinite(c.low)) {
            cell = format("%+.1f [%+.1f,%+.1f]", c.current - c.baseline, c.low, c.high);
          }
        }
        out << format(" %17s", cell.c_str());
      }
      out << "\n";
    }
  }
  if (best_ttft == nullptr || best_itl == nullptr) {
    out << "\nNo policy kept up without rejecting requests in every seed.\n";
    return;
  }
  out << format(
      "\n%s has the lowest mean TTFT p50 (%.0f ms) and %s the lowest mean ITL p99 "
      "(%.0f ms), over %zu seeds; overlapping intervals are no clear difference (the paired "
      "changes above are "
      "the sharper test).\n",
      run_label(*best_ttft).c_str(), ttft, run_label(*best_itl).c_str(), itl, runs.front().size());
}

}  // namespace servesim
