#include "models/fidelity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace servesim {

std::vector<StepPoint> fidelity_grid() {
  std::vector<StepPoint> g;
  auto label = [](const char* fmt, int a, int b, int c = 0, int d = 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
    return std::string(buf);
  };
  for (int ctx : {0, 2048}) {
    for (int n : {128, 256, 512, 1024, 2048, 4096}) {
      if (n + ctx > 4096) continue;
      g.push_back({"prefill", label("prefill N=%d ctx=%d", n, ctx), {{n, ctx, true, true}}});
    }
  }
  for (int ctx : {512, 1024, 2048, 4096}) {
    for (int b : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
      g.push_back({"decode", label("decode B=%d ctx=%d", b, ctx),
                   std::vector<SeqShape>(size_t(b), SeqShape{1, ctx, false, true})});
    }
  }
  for (int b : {16, 64, 128}) {
    for (int chunk : {256, 512, 1024}) {
      for (int ctx : {0, 1024}) {
        StepPoint p{"mixed", label("mixed B=%d ctx=1024 + chunk %d at ctx %d", b, chunk, ctx), {}};
        p.seqs.assign(size_t(b), SeqShape{1, 1024, false, true});
        p.seqs.push_back(SeqShape{chunk, ctx, true, false});
        g.push_back(std::move(p));
      }
    }
  }
  return g;
}

PartSeconds parts_of(const StepCost& c) {
  PartSeconds p;
  p.linear = c.linear_s;
  p.elementwise = c.elementwise_s;
  p.attention = c.attention_s;
  p.allreduce = c.allreduce_s;
  p.cpu = c.cpu_overhead_s;
  p.total = p.linear + p.elementwise + p.attention + p.allreduce + p.cpu;
  return p;
}

void ErrorStats::add(double predicted, double measured, const std::string& label) {
  if (!(measured > 0)) return;
  const double e = std::abs(predicted - measured) / measured;
  mape += e;
  ++n;
  if (e > max_ape) {
    max_ape = e;
    worst = label;
  }
}

FidelityReport compare_to_profiles(const TableCostModel& measured, const CostModel& predicted,
                                   const std::string& predictor,
                                   const std::vector<StepPoint>& grid) {
  FidelityReport r;
  r.predictor = predictor;
  for (const StepPoint& p : grid) {
    FidelityRow row;
    row.point = p;
    double decodes = 0, ctx = 0, tokens = 0;
    for (const SeqShape& s : p.seqs) {
      tokens += s.new_tokens;
      if (s.prefill) {
        row.extrapolated |= !measured.measured_prefill(s.new_tokens, s.context_tokens);
      } else {
        decodes += 1;
        ctx += s.context_tokens;
      }
    }
    if (decodes > 0) row.extrapolated |= !measured.measured_decode(decodes, ctx / decodes);
    row.extrapolated |=
        !measured.measured_tokens(tokens) || !measured.measured_batch(double(p.seqs.size()));
    row.measured = parts_of(measured.cost(p.seqs));
    row.predicted = parts_of(predicted.cost(p.seqs));
    r.composed.add(row.predicted.total, row.measured.total, p.label);
    if (!row.extrapolated) {
      r.composed_measured_only.add(row.predicted.total, row.measured.total, p.label);
    }
    r.linear.add(row.predicted.linear, row.measured.linear, p.label);
    r.elementwise.add(row.predicted.elementwise, row.measured.elementwise, p.label);
    r.attention.add(row.predicted.attention, row.measured.attention, p.label);
    r.allreduce.add(row.predicted.allreduce, row.measured.allreduce, p.label);
    r.cpu.add(row.predicted.cpu, row.measured.cpu, p.label);
    r.rows.push_back(std::move(row));
  }
  for (ErrorStats* e : {&r.composed, &r.composed_measured_only, &r.linear, &r.elementwise,
                        &r.attention, &r.allreduce, &r.cpu}) {
    e->finish();
  }
  return r;
}

void print_fidelity(std::ostream& out, const FidelityReport& r, size_t worst) {
  char buf[256];
  out << r.predictor << " vs measured (" << r.rows.size() << " steps)\n";
  std::snprintf(buf, sizeof buf, "  %-22s %6s %8s %8s  %s\n", "op class", "points", "MAPE %",
                "max %", "worst point");
  out << buf;
  auto line = [&](const char* name, const ErrorStats& e) {
    if (e.n == 0) return;
    std::snprintf(buf, sizeof buf, "  %-22s %6zu %8.1f %8.1f  %s\n", name, e.n, e.mape * 100,
                  e.max_ape * 100, e.worst.c_str());
    out << buf;
  };
  line("GEMMs", r.linear);
  line("element-wise", r.elementwise);
  line("attention", r.attention);
  line("all-reduce", r.allreduce);
  line("CPU overhead", r.cpu);
  line("composed step", r.composed);
  line("  (measured range only)", r.composed_measured_only);
  std::vector<const FidelityRow*> rows;
  for (const FidelityRow& row : r.rows)
    rows.push_back(&row);
  auto err = [](const FidelityRow* x) {
    return std::abs(x->predicted.total - x->measured.total) / x->measured.total;
  };
  std::sort(rows.begin(), rows.end(),
            [&](const FidelityRow* a, const FidelityRow* b) { return err(a) > err(b); });
  out << "  worst composed steps:\n";
  for (size_t i = 0; i < std::min(worst, rows.size()); ++i) {
    std::snprintf(buf, sizeof buf, "    %-44s measured %8.3f ms  predicted %8.3f ms  %+6.1f%%%s\n",
                  rows[i]->point.label.c_str(), rows[i]->measured.total * 1e3,
                  rows[i]->predicted.total * 1e3,
                  (rows[i]->predicted.total / rows[i]->measured.total - 1) * 100,
                  rows[i]->extrapolated ? " (extrapolated)" : "");
    out << buf;
  }
}

namespace {
// A CSV field in quotes, with quotes doubled (RFC 4180).
std::string quoted_field(const std::string& text) {
  std::string q = "\"";
  for (char c : text)
    q.append(c == '"' ? "\"\"" : std::string(1, c));
  return q + "\"";
}
}  // namespace

void write_fidelity_csv(std::ostream& out, const FidelityReport& r) {
  out << "predictor,kind,step,extrapolated,measured_ms,predicted_ms,error_pct,"
         "measured_gemm_ms,predicted_gemm_ms,measured_elementwise_ms,predicted_elementwise_ms,"
         "measured_attention_ms,predicted_attention_ms,measured_allreduce_ms,"
         "predicted_allreduce_ms,measured_cpu_ms,predicted_cpu_ms\n";
  char buf[512];
  for (const FidelityRow& x : r.rows) {
    const PartSeconds &m = x.measured, &p = x.predicted;
    std::snprintf(
        buf, sizeof buf, "%d,%.6f,%.6f,%.3f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n",
        int(x.extrapolated), m.total * 1e3, p.total * 1e3, (p.total / m.total - 1) * 100,
        m.linear * 1e3, p.linear * 1e3, m.elementwise * 1e3, p.elementwise * 1e3, m.attention * 1e3,
        p.attention * 1e3, m.allreduce * 1e3, p.allreduce * 1e3, m.cpu * 1e3, p.cpu * 1e3);
    out << quoted_field(r.predictor) << ',' << x.point.kind << ',' << quoted_field(x.point.label)
        << ',' << buf;
  }
}

}  // namespace servesim
