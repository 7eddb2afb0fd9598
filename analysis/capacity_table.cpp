// The capacity command's results as text and as a table (capacity_table.hpp), and the notes and
// costs of one result (capacity.hpp: capacity_note, replicas_for, the costs, capacity_table).
#include "analysis/capacity_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/report.hpp"
#include "util/format.hpp"

namespace servesim {

namespace {

// "N of M requests (X%)": the requests C rejects at every rate.
std::string rejected_text(const CapacityResult& c) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%llu of %llu requests (%.3g%%)",
                static_cast<unsigned long long>(c.rejected),
                static_cast<unsigned long long>(c.requests),
                c.requests ? 100.0 * double(c.rejected) / double(c.requests) : 0.0);
  return buf;
}

}  // namespace

std::string capacity_note(const CapacityResult& c) {
  // Notes open with "rejects" (no capacity), "at least" or "fails": scripts/plot.py reads them.
  if (c.refused) {
    return "rejects " + rejected_text(c) +
           " at any rate (too long for its context, budget or KV), more than "
           "--max-rejected-share";
  }
  std::string note;
  if (c.above_max) note = "at least: meets the SLO at --rate-max";
  if (c.below_min) {
    note = c.binding == "too_short"
               ? "fails to judge any rate tried: too few requests to tell a 5% backlog from "
                 "noise, even at 16 x (give more requests or a longer trace)"
               : "fails the SLO at every rate tried, down to --rate-start/1024";
  }
  if (c.rejected > 0) {
    note += (note.empty() ? "" : "; ") + rejected_text(c) +
            " rejected at every rate, within --max-rejected-share";
  }
  for (const std::string& w : c.router_warnings)
    note += (note.empty() ? "" : "; ") + w;
  // A short run overstates a capacity (issue 25: 500 requests gave 14.0 req/s where 2,000 gave
  // 10.5): probes too short to judge were run longer (probe_at).
  if (c.probes_lengthened > 0) {
    note += (note.empty() ? "" : "; ") +
            format("%d probes lengthened to judge overload (up to %llu requests)",
                   c.probes_lengthened, static_cast<unsigned long long>(c.most_probe_requests));
  }
  if (!c.at.extrapolated.empty()) {
    note += (note.empty() ? "" : "; ") + std::string("confident at the widest intervals: ") +
            c.at.extrapolated.front();
  }
  if (c.probes_too_short > 0) {
    note += (note.empty() ? "" : "; ") +
            format(
                "%d probes failed as too short to judge even so (a longer trace, or more "
                "requests, would tell)",
                c.probes_too_short);
  }
  return note;
}

int64_t replicas_for(double target, const CapacityResult& c) {
  if (!(target > 0 && c.capacity > 0)) return 0;
  // --target-rate is bounded at the command line; the clamp keeps the conversion defined.
  return int64_t(std::min(std::ceil(target / c.capacity - 1e-9), 1e15));
}

namespace {

// What PER_HOUR (dollars, kWh) of an hour at TOKENS_PER_S comes to per million tokens.
double per_million(double per_hour, double tokens_per_s) {
  if (!(tokens_per_s > 0)) return NAN;
  return per_hour / (tokens_per_s * 3600) * 1e6;
}

}  // namespace

double cost_per_million_output_tokens(const CapacityResult& c) {
  return c.capacity > 0 ? per_million(c.usd_per_h, c.at.summary.output_tokens_per_s) : NAN;
}

double cost_per_million_total_tokens(const CapacityResult& c) {
  return c.capacity > 0 ? per_million(c.usd_per_h, c.at.summary.total_tokens_per_s) : NAN;
}

double facility_kw(const CapacityResult& c) {
  return c.capacity > 0 ? c.at.summary.energy.mean_power_w * c.pue / 1e3 : NAN;
}

double energy_cost_per_hour(const CapacityResult& c) {
  return facility_kw(c) * c.energy_usd_per_kwh;
}

double energy_cost_per_million_output_tokens(const CapacityResult& c) {
  return per_million(energy_cost_per_hour(c), c.at.summary.output_tokens_per_s);
}

double kwh_per_million_output_tokens(const CapacityResult& c) {
  return per_million(facility_kw(c), c.at.summary.output_tokens_per_s);
}

double fleet_cost_per_hour(double target, const CapacityResult& c) {
  if (c.fleet_gpus > 0) return c.fleet_usd_per_h;
  const int64_t copies = replicas_for(target, c);
  return copies > 0 ? double(copies) * c.usd_per_h : NAN;
}

int64_t fleet_gpu_count(double target, const CapacityResult& c) {
  if (c.fleet_gpus > 0) return c.fleet_gpus;
  return replicas_for(target, c) * c.gpus;
}

SweepTable capacity_table(const std::vector<CapacityResult>& results, double target,
                          const std::string& slo_text) {
  SweepTable t;
  t.text_columns = {"label",   "gpu",         "model", "policy",       "note",
                    "binding", "fleet_split", "fleet", "quantization", "cost_source"};
  t.int_columns = {
      "tp",         "max_num_batched_tokens", "replicas", "fleet_replicas", "iterations", "gpus",
      "fleet_gpus", "probes_stopped"};
  t.real_columns = {"capacity_req_s", "attainment", "gpu_hour_cost",
                    "cost_per_million_output_tokens", "fleet_cost_per_hour",
                    "cost_per_million_total_tokens", "usd_per_h",
                    // 1 where the configuration rejects more than --max-rejected-share at
                    // every rate (no capacity): what a figure must flag, never mark best.
                    "rejection_heavy",
                    // Energy at the capacity: the facility's (GPUs x --pue) kW and kWh per million
                    // output tokens, and their dollars at --energy-cost-per-kwh.
                    "pue", "energy_usd_per_kwh", "facility_kw", "kwh_per_million_output_tokens",
                    "energy_usd_per_h", "energy_cost_per_million_output_tokens"};
  for (const auto& [name, v] : summary_metrics(RunSummary{}))
    t.real_columns.push_back(name);
  // With --confidence: the level, the point answer beside the confident one (capacity_req_s),
  // and why the capacity probe's intervals were the widest.
  const bool confident = std::any_of(results.begin(), results.end(),
                                     [](const CapacityResult& c) { return c.confidence > 0; });
  if (confident) {
    t.real_columns.insert(t.real_columns.end(), {"confidence", "point_capacity_req_s"});
    t.text_columns.insert(t.text_columns.end(), {"point_binding", "extrapolated"});
  }
  t.points_total = results.size();
  t.grid = slo_text;
  for (size_t i = 0; i < results.size(); ++i) {
    const CapacityResult& c = results[i];
    SweepRow row;
    row.point = int64_t(i);
    row.text = {c.label,   c.gpu,         c.model, c.policy,       capacity_note(c),
                c.binding, c.fleet_split, c.fleet, c.quantization, c.cost_source};
    row.ints = {c.tp,         c.budget, replicas_for(target, c),    c.fleet_replicas,
                c.iterations, c.gpus,   fleet_gpu_count(target, c), c.probes_stopped};
    row.reals = {c.capacity,
                 c.at.attained,
                 c.gpu_hour_cost,
                 cost_per_million_output_tokens(c),
                 fleet_cost_per_hour(target, c),
                 cost_per_million_total_tokens(c),
                 c.usd_per_h,
                 c.refused ? 1.0 : 0.0,
                 c.pue,
                 c.energy_usd_per_kwh,
                 facility_kw(c),
                 kwh_per_million_output_tokens(c),
                 energy_cost_per_hour(c),
                 energy_cost_per_million_output_tokens(c)};
    for (const auto& [name, v] : summary_metrics(c.at.summary))
      row.reals.push_back(c.capacity > 0 ? v : NAN);
    if (confident) {
      row.reals.insert(row.reals.end(), {c.confidence, c.point_capacity});
      std::string why;
      for (const std::string& w : c.at.extrapolated)
        why += (why.empty() ? "" : "; ") + w;
      row.text.insert(row.text.end(), {c.point_binding, why});
    }
    t.rows.push_back(row);
  }
  return t;
}

std::string capacity_slo_text(const std::string& slo, const CapacitySpec& spec) {
  std::string text = slo;
  if (spec.attainment > 0) {
    // Only the bounds given: an absent one is infinite, and "TPOT <= inf ms" says nothing.
    std::string bounds;
    if (std::isfinite(spec.ttft_ms)) bounds += format("TTFT <= %g ms", spec.ttft_ms);
    if (std::isfinite(spec.tpot_ms)) {
      bounds += format("%sTPOT <= %g ms", bounds.empty() ? "" : " and ", spec.tpot_ms);
    }
    text += format("%s%.0f%% of requests with %s", text.empty() ? "" : " and ",
                   spec.attainment * 100, bounds.c_str());
  }
  return text;
}

namespace {

// A number for the table: "-" for NaN, fewer decimals for larger values.
std::string capacity_cell(double v) {
  if (std::isnan(v)) return "-";
  char buf[48];
  const double a = std::abs(v);
  std::snprintf(buf, sizeof buf, a >= 1000 ? "%.0f" : a >= 10 ? "%.1f" : "%.3g", v);
  return buf;
}

// The SLO's terms as table columns: summary-metric columns, then `attainment`.
std::vector<std::string> term_names(const CapacitySpec& spec) {
  std::vector<std::string> names;
  for (const Bound& b : spec.bounds) {
    if (std::find(names.begin(), names.end(), b.metric) == names.end()) names.push_back(b.metric);
  }
  if (spec.attainment > 0) names.push_back("attainment");
  return names;
}

// TERM's value at C's capacity ("-" without one), starred when it binds.
std::string term_cell(const CapacityResult& c, const std::string& term) {
  double v = NAN;
  if (c.capacity > 0 && term == "attainment") v = c.at.attained;
  for (const auto& [name, value] : summary_metrics(c.at.summary)) {
    if (c.capacity > 0 && name == term) v = value;
  }
  return capacity_cell(v) + (c.binding == term ? "*" : " ");
}

// A text table: left-aligned text columns first (LEFT of them), right-aligned numbers after.
struct TextTable {
  std::vector<std::string> header;
  size_t left = 0;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> tails;  // after each row

  void print(std::ostream& out) const {
    std::vector<size_t> width(header.size());
    for (size_t k = 0; k < header.size(); ++k) {
      width[k] = header[k].size();
      for (const auto& r : rows)
        width[k] = std::max(width[k], r[k].size());
    }
    auto line = [&](const std::vector<std::string>& r, const std::string& tail) {
      std::string s;
      for (size_t k = 0; k < r.size(); ++k) {
        const std::string pad(width[k] - r[k].size(), ' ');
        s += (k ? "  " : "") + (k < left ? r[k] + pad : pad + r[k]);
      }
      if (!tail.empty()) s += "  " + tail;
      while (!s.empty() && s.back() == ' ')
        s.pop_back();
      out << s << "\n";
    };
    line(header, "");
    for (size_t i = 0; i < rows.size(); ++i)
      line(rows[i], tails[i]);
  }
};

// What the table shows beyond the capacity: the cost columns when a price is known, the
// replicas with --target-rate.
struct Shown {
  std::vector<std::string> terms;
  bool cost = false;
  double target = 0;
  bool quantization = false;  // a row is quantized
  double confidence = 0;      // --confidence: point and confident capacities
  bool energy = false;        // --energy-cost-per-kwh or --pue given: the energy columns
  bool energy_price = false;  // --energy-cost-per-kwh given
};

std::vector<std::string> table_row(const CapacityResult& c, const Shown& shown) {
  std::vector<std::string> r = {c.label, c.fleet.empty() ? c.gpu : c.fleet, c.model,
                                std::to_string(c.tp), std::to_string(c.gpus)};
  if (shown.quantization) r.push_back(c.quantization);
  if (shown.confidence > 0) {
    r.push_back(capacity_cell(c.point_capacity) +
                (c.point_binding.empty() ? "" : " (" + c.point_binding + ")"));
  }
  r.push_back(capacity_cell(c.capacity));
  for (const std::string& t : shown.terms)
    r.push_back(term_cell(c, t));
  r.push_back(std::to_string(c.iterations));
  if (shown.cost) r.push_back(capacity_cell(cost_per_million_output_tokens(c)));
  if (shown.energy) r.push_back(capacity_cell(kwh_per_million_output_tokens(c)));
  if (shown.energy_price) r.push_back(capacity_cell(energy_cost_per_million_output_tokens(c)));
  if (shown.target > 0) {
    r.push_back(c.capacity > 0 ? std::to_string(replicas_for(shown.target, c)) : "n/a");
    std::string fleet = c.fleet_replicas > 0   ? std::to_string(c.fleet_replicas)
                        : c.fleet_replicas < 0 ? "none"
                                               : "n/a";
    if (!c.fleet_split.empty()) fleet += " (" + c.fleet_split + ")";
    r.push_back(fleet);
    r.push_back(c.capacity > 0 ? std::to_string(fleet_gpu_count(shown.target, c)) : "n/a");
    if (shown.cost) r.push_back(capacity_cell(fleet_cost_per_hour(shown.target, c)));
  }
  return r;
}

TextTable capacity_text_table(const std::vector<CapacityResult>& results, const Shown& shown) {
  TextTable t;
  t.header = {"scheduler", "fleet", "model", "tp", "gpus"};
  if (shown.quantization) t.header.push_back("quantization");
  if (shown.confidence > 0) {
    t.header.push_back("point_rps");
    t.header.push_back(format("confident_rps@%g%%", shown.confidence * 100));
  } else {
    t.header.push_back("capacity_rps");
  }
  t.left = 3;
  for (const std::string& term : shown.terms)
    t.header.push_back(term + " ");
  t.header.push_back("probes");
  if (shown.cost) t.header.push_back("usd_per_Mtok");
  if (shown.energy) t.header.push_back("kWh_per_Mtok");
  if (shown.energy_price) t.header.push_back("energy_usd_per_Mtok");
  if (shown.target > 0) {
    t.header.push_back("replicas");
    t.header.push_back("fleet_replicas");
    t.header.push_back("fleet_gpus");
  }
  if (shown.target > 0 && shown.cost) t.header.push_back("fleet_usd_per_h");
  for (const CapacityResult& c : results) {
    t.rows.push_back(table_row(c, shown));
    const std::string note = capacity_note(c);
    t.tails.push_back(note.empty() ? "" : "(" + note + ")");
  }
  return t;
}

void print_footer(std::ostream& out, const std::vector<CapacityResult>& results,
                  const Shown& shown) {
  const bool starred = std::any_of(results.begin(), results.end(), [&](const CapacityResult& c) {
    return std::count(shown.terms.begin(), shown.terms.end(), c.binding) > 0;
  });
  if (starred) {
    out << "* the binding term: it failed at the lowest failing rate tried (by the widest "
           "margin)\n";
  }
  int stopped = 0;
  uint64_t unfinished = 0;
  for (const CapacityResult& c : results) {
    stopped += c.probes_stopped;
    unfinished += c.requests_unfinished;
  }
  if (shown.confidence > 0) {
    out << format(
        "point_rps: the capacity at servesim's point predictions (its binding term in brackets); "
        "confident_rps@%g%%: the highest rate meeting every bound at the pessimistic end of its "
        "%g%% prediction interval (held-out error on real vLLM runs; a probe outside the fitted "
        "range at the widest). Terms, replicas, fleet and costs are at the confident rate.\n",
        shown.confidence * 100, shown.confidence * 100);
  }
  if (stopped > 0) {
    out << stopped << " probe" << (stopped == 1 ? "" : "s")
        << " stopped at the last arrival, judged overloaded (failing the SLO whatever came "
           "next), leaving "
        << unfinished << " queued requests unsimulated\n";
  }
  if (shown.cost) {
    out << "usd_per_Mtok: dollars per million output tokens at capacity = the configuration's "
           "$/h (every GPU: replicas * tp of each pool) / (output_tokens_per_s * 3600) * 1e6 "
           "(per million total tokens in --csv/--out)\n";
  }
  if (shown.energy) {
    out << format(
        "kWh_per_Mtok: the facility's energy per million output tokens at capacity = the GPUs' "
        "mean power in the capacity probe (idle included) * --pue %g / output_tokens_per_s%s\n",
        results.empty() ? 1.0 : results.front().pue,
        shown.energy_price ? format("; energy_usd_per_Mtok = kWh_per_Mtok * $%g per kWh",
                                    results.empty() ? NAN : results.front().energy_usd_per_kwh)
                                 .c_str()
                           : "");
  }
  if (shown.target > 0) {
    out << "replicas serve --target-rate " << shown.target
        << " req/s assuming ideal spreading: each replica sees target/replicas req/s with the "
           "same arrival pattern (no router imbalance)"
        << (shown.cost ? "; fleet_usd_per_h prices the fleet_replicas fleet as simulated (its "
                         "gpus), else replicas copies"
                       : "")
        << ".\n"
        << "fleet_replicas: the fewest replicas meeting the SLO at the target when simulated as "
           "one fleet behind --router "
        << (results.empty() || results.front().router.empty() ? std::string("round-robin")
                                                              : results.front().router)
        << " (none: not within 4 x replicas + 8); disaggregated, the fewest replicas in all with "
           "the cheapest prefill+decode split that meets it"
        << (results.empty() || results.front().fleet_split.empty() ||
                    results.front().fleet_split.find(':') == std::string::npos
                ? std::string()
                : "; with --size-group, that group's count (the fleet in brackets)")
        << ".\n";
  }
}

}  // namespace

std::string capacity_text(const std::vector<CapacityResult>& results, const CapacitySpec& spec,
                          double target, const std::string& slo, bool default_scheduler) {
  std::ostringstream out;
  out << "servesim capacity: the highest request rate meeting " << slo;
  if (spec.max_rejected_share > 0) {
    out << ", with at most " << spec.max_rejected_share * 100 << "% of requests rejected";
  }
  out << "\n";
  if (default_scheduler) out << kDefaultSchedulerNote << "\n";
  Shown shown{term_names(spec), false, target};
  shown.confidence = spec.confidence;
  shown.quantization = std::any_of(results.begin(), results.end(), [](const CapacityResult& c) {
    return !c.quantization.empty() && c.quantization != "none";
  });
  shown.cost = std::any_of(results.begin(), results.end(),
                           [](const CapacityResult& c) { return !std::isnan(c.gpu_hour_cost); });
  shown.energy_price = std::isfinite(spec.energy_usd_per_kwh);
  shown.energy = shown.energy_price || spec.pue_given;
  capacity_text_table(results, shown).print(out);
  print_footer(out, results, shown);
  return out.str();
}

}  // namespace servesim
