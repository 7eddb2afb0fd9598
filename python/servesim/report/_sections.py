"""One section of the page per file: what kind of file it is (from its magic attribute or its
JSON's shape), its provenance (servesim version, command line, seed, as the file records them),
its flags, and its tables and charts. Everything shown is a figure the file holds; the only
arithmetic is the drawing's (a CDF's ranks, a timeline's microseconds as seconds)."""
import json
import os
import re

import numpy as np

from .. import _h5, read
from ..errors import Error
from . import _svg
from ._html import Column, bullet, figure, flatten, pairs, table

CDF_POINTS = 400  # ranks drawn per empirical CDF (its whole range, evenly spaced)
TIMELINE_LIMIT = 40000  # steps drawn from a timeline file at most (the rest named)
FRONTIER_METRICS = [("ttft_ms_p50", "TTFT p50 (ms)"), ("ttft_ms_p99", "TTFT p99 (ms)"),
                    ("itl_ms_p50", "ITL p50 (ms)"), ("itl_ms_p99", "ITL p99 (ms)"),
                    ("e2e_ms_p99", "E2E p99 (ms)"),
                    ("output_tokens_per_s", "output throughput (tokens/s)")]
FRONTIER_ALL_PAIRS_MAX = 400  # configurations up to which every pair is drawn for the chooser


class Section:
    def __init__(self, path, kind, title, sid):
        self.path, self.kind, self.title = path, kind, title
        self.id = sid  # unique on the page: the prefix of its charts' and figures' names
        self.provenance = []  # (label, value)
        self.flags = []  # warnings a reader must see first
        self.blocks = []  # (heading, html)


def load(path, index):
    """The section for file PATH (INDEX: its place on the page, for unique ids); Error naming
    the file when it is not one servesim wrote, or is damaged."""
    if not os.path.isfile(path):
        raise Error("%s: %s" % (path, "no such file" if not os.path.exists(path) else
                                "not a regular file"), file=path, reason="cannot read")
    with open(path, "rb") as f:
        head = f.read(8)
    sid = "f%d" % index
    if head != b"\x89HDF\r\n\x1a\n":
        return shaped(path, lambda: json_section(path, read_json(path), sid))
    kind = _h5.kind_of(path)
    builder = {"results": results_section, "sweep": sweep_section,
               "capacity": capacity_section, "capacity-plan": plan_section}.get(kind)
    if builder is None:
        raise Error("%s: a servesim %s, which is no study (results, sweep, capacity and "
                    "verdict files are)" % (path, kind), file=path, reason="not a study")
    s = shaped(path, lambda: builder(path, read(path), sid))
    s.provenance = with_seed(h5_provenance(path) + s.provenance)
    return s


def with_seed(provenance):
    """PROVENANCE with a seed line: the section's own, else the recorded command's --seed (else
    servesim's default, 0)."""
    if any(k == "seed" for k, _ in provenance):
        return provenance
    command = dict(provenance).get("command line", "not recorded")
    m = re.search(r"--seed[= ](\S+)", command)
    seed = "not recorded" if command == "not recorded" else \
        m.group(1) if m else "0 (servesim's default)"
    return provenance + [("seed", seed)]


def shaped(path, build):
    """BUILD()'s section; a file whose parts are not shaped as servesim writes them (a JSON
    verdict with a number where a list belongs, a table missing a column) as an Error naming
    it, not a broken page."""
    try:
        return build()
    except Error:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OSError,
            ZeroDivisionError, OverflowError) as e:
        raise Error("%s: not shaped as servesim writes it (damaged, or another program's?): "
                    "%s: %s" % (path, type(e).__name__, e), file=path,
                    reason="not a servesim file") from None


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as e:
        raise Error("%s: not text (byte %d): neither a servesim HDF5 nor a JSON file" %
                    (path, e.start), file=path, reason="not a servesim file") from None
    except json.JSONDecodeError as e:
        raise Error("%s:%d: not valid JSON (%s, column %d)" % (path, e.lineno, e.msg, e.colno),
                    file=path, line=e.lineno, reason="invalid JSON") from None


def h5_provenance(path):
    with _h5.open_file(path) as f:
        return [("servesim version", _h5.attr_text(f, "servesim_version") or "not recorded"),
                ("command line", _h5.attr_text(f, "command_line") or "not recorded")]


def json_provenance(p):
    """From the "servesim" object of a JSON file servesim wrote (a timeline's otherData)."""
    p = p if isinstance(p, dict) else {}
    return [("servesim version", p.get("version") or "not recorded"),
            ("command line", p.get("command") or "not recorded")]


def json_section(path, j, sid):
    """run --json, compare --json, diagnose --json, check --json or a --timeline file."""
    def need(cond, what):
        if not cond:
            raise Error("%s: not a file servesim wrote (%s)" % (path, what), file=path,
                        reason="not a servesim file")
    need(isinstance(j, dict), "its JSON is not an object")
    if "traceEvents" in j:
        s = timeline_section(path, j, sid)
        s.provenance = with_seed(json_provenance(j.get("otherData", {})))
        return s
    if "verdict" in j and "alarm" in j:
        s = diagnose_section(path, j, sid)
    elif "lines" in j and "regressions" in j:
        s = check_section(path, j, sid)
    elif isinstance(j.get("runs"), list) or ("ttft_ms" in j and "config" in j):
        runs = j["runs"] if "runs" in j else [j]
        need(all(isinstance(r, dict) and "label" in r for r in runs), "a run without a label")
        # compare --num-seeds: a row a policy, its seeds' summaries and their statistics.
        summaries = [s for r in runs for s in (r["summaries"] if "summaries" in r else [r])]
        s = summaries_section(path, named(summaries), [r for r in runs if "replicates" in r],
                              sid)
    else:
        need(False, "no run summary, verdict or timeline in it")
    s.provenance = json_provenance(j.get("servesim")) + s.provenance
    return s


# ---- runs ------------------------------------------------------------------------------------

FIGURES = [  # (summary path, column label)
    ("requests.completed", "completed"), ("requests.rejected", "rejected"),
    ("ttft_ms.p50", "TTFT p50 (ms)"), ("ttft_ms.p90", "TTFT p90 (ms)"),
    ("ttft_ms.p99", "TTFT p99 (ms)"), ("itl_ms.p50", "ITL p50 (ms)"),
    ("itl_ms.p99", "ITL p99 (ms)"), ("tpot_ms.mean", "TPOT mean (ms)"),
    ("e2e_ms.p50", "E2E p50 (ms)"), ("e2e_ms.p99", "E2E p99 (ms)"),
    ("otps.p50", "OTPS p50 (tokens/s)"), ("otps.p50_ratio", "OTPS p50 ratio (tokens/s)"),
    ("throughput.output_tokens_per_s", "output (tokens/s)"),
    ("throughput.requests_per_s", "completed (req/s)"),
    ("energy.j_per_output_token", "energy (J/token)"), ("overloaded.overloaded", "overloaded"),
]


def dig(d, dotted):
    for k in dotted.split("."):
        d = d.get(k) if isinstance(d, dict) else None
    return d


def named(summaries):
    """SUMMARIES with a name each, unique on the page: the label, and where labels repeat (a
    run's seeds) the seed, as a results file names them (LABEL@seed=K)."""
    labels = [s.get("label", "?") for s in summaries]
    return [(label if labels.count(label) == 1 else
             "%s@seed=%s" % (label, dig(s, "config.workload.seed")), s)
            for label, s in zip(labels, summaries)]


def summary_rows(runs):
    """One row a run (NAME, summary): the FIGURES and their prediction intervals (ttft_ms.p99
    -> its lo, hi; throughput's under their own names)."""
    rows = []
    for name, s in runs:
        row = {"label": name}
        figs = dig(s, "prediction_intervals.figures") or {}
        for key, _ in FIGURES:
            row[key] = dig(s, key)
            interval = figs.get(key, figs.get(key[len("throughput."):]) if
                                key.startswith("throughput.") else None)
            if interval is not None:
                row[key + ".interval"] = interval
        rows.append(row)
    return rows


def figures_block(sec, runs):
    cols = [Column("label", "run")] + [Column(k, label, k + ".interval") for k, label in FIGURES]
    summaries = [s for _, s in runs]
    levels = {dig(s, "prediction_intervals.level") for s in summaries} - {None, 0}
    note = ("Under a figure: its %s prediction interval (servesim's split-conformal interval from "
            "real vLLM runs), where the file gives one." %
            ", ".join("%g%%" % (100 * x) for x in sorted(levels))) if levels else \
        "The file holds no prediction intervals (run with --interval)."
    sec.blocks.append(("Figures", table("Each run's figures as the file holds them", cols,
                                        summary_rows(runs), sec_prefix(sec), "label",
                                        note)))
    for label, s in runs:
        if dig(s, "overloaded.overloaded"):
            sec.flags.append("%s: OVERLOADED: the queue grew instead of draining; latencies "
                             "grow with the run's length." % label)
        if (dig(s, "requests.rejected") or 0) > 0:
            sec.flags.append("%s: %s of %s requests rejected (not in any latency figure)." %
                             (label, _svg.number(dig(s, "requests.rejected")),
                              _svg.number(dig(s, "requests.total"))))
        for w in s.get("warnings", []):
            if not w.startswith("overloaded") and "were rejected" not in w:
                sec.flags.append("%s: %s" % (label, w))
        if dig(s, "prediction_intervals.extrapolated"):
            sec.flags.append("%s: prediction intervals extrapolated beyond the calibration runs "
                             "(%s)" % (label, ", ".join(s["prediction_intervals"]["extrapolated"])))
    if summaries and all("warnings" not in s for s in summaries):
        sec.flags.append("The file predates recorded warnings: approximated vLLM behaviour is "
                         "not listed (rerun with this servesim to see it).")


def sec_prefix(sec):
    return sec.id


def config_block(sec, runs):
    keys, values = [], {}
    for name, s in runs:
        for k, v in flatten(s.get("config", {})):
            if k not in values:
                keys.append(k)
                values[k] = {}
            values[k][name] = v
    labels = [name for name, _ in runs]
    rows = [dict({"setting": k}, **values[k]) for k in keys]
    cols = [Column("setting", "setting")] + [Column(l, l) for l in labels]
    sec.blocks.append(("Configuration", '<details><summary>%d settings of %d run(s)</summary>%s'
                       '</details>' % (len(keys), len(labels), table(
                           "The resolved configuration each run records", cols, rows,
                           sec_prefix(sec) + "/config", "setting"))))


def seeds_of(summaries):
    seeds = sorted({str(dig(s, "config.workload.seed")) for s in summaries
                    if dig(s, "config.workload.seed") is not None})
    return ("seed", ", ".join(seeds) if seeds else "not recorded")


def hardware_of(summaries):
    hw = []
    for s in summaries:
        c = s.get("config", {})
        t = "%s on %s" % (c.get("model", "?"), c.get("gpu", "?"))
        if c.get("tensor_parallel_size", 1) != 1:
            t += " (TP %s)" % c.get("tensor_parallel_size")
        if t not in hw:
            hw.append(t)
    return ("model and GPU", "; ".join(hw) or "not recorded")


def summaries_section(path, runs, replicated, sid):
    summaries = [s for _, s in runs]
    sec = Section(path, "runs", "%s: %s" % (os.path.basename(path),
                                            plural(len(summaries), "run")), sid)
    sec.provenance += [seeds_of(summaries), hardware_of(summaries)]
    figures_block(sec, runs)
    if replicated:
        replicates_block(sec, replicated)
    sec.blocks.append(("Distributions", "<p>A JSON summary holds no per-request figures: pass "
                       "the results file (--out) for the TTFT, ITL and OTPS distributions.</p>"))
    config_block(sec, runs)
    return sec


def replicates_block(sec, rows):
    """compare --num-seeds: each policy's metrics over its seeds, as the file computes them."""
    out = []
    for row in rows:
        for metric, m in row["replicates"]["metrics"].items():
            out.append({"key": "%s/%s" % (row["label"], metric), "label": row["label"],
                        "metric": metric, "mean": m.get("mean"),
                        "ci95": tuple(m["ci95"]) if m.get("ci95") else None,
                        "n": m.get("n")})
    cols = [Column("label", "policy"), Column("metric", "metric (unit in its name)"),
            Column("mean", "mean over the seeds", "ci95"), Column("n", "seeds")]
    sec.blocks.append(("Over the seeds", table(
        "Each policy's metrics over its seeds", cols, out, sec_prefix(sec) + "/seeds", "key",
        "Under a mean: its 95% confidence interval over the seeds.")))


def plural(n, what):
    return "%d %s%s" % (n, what, "" if n == 1 else "s")


def cdf(values):
    """The empirical CDF of VALUES at up to CDF_POINTS evenly spaced ranks (x, y in percent)."""
    v = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    if len(v) == 0:
        return [], []
    idx = np.unique(np.linspace(0, len(v) - 1, min(len(v), CDF_POINTS)).round().astype(int))
    return v[idx].tolist(), ((idx + 1) / len(v) * 100).tolist()


def results_section(path, runs, sid):
    results = list(runs.values())
    summaries = [r.summary for r in results]
    names = list(runs)  # the file's names: a label, with @seed=K for a run's seeds
    sec = Section(path, "results", "%s: %s" % (os.path.basename(path),
                                               plural(len(results), "run")), sid)
    sec.provenance += [seeds_of(summaries), hardware_of(summaries),
                       ("workload", json.dumps(runs.workload) if runs.workload else "not recorded")]
    figures_block(sec, list(zip(names, summaries)))
    cid = sid
    charts = []
    for what, col, unit in (("TTFT", "ttft_ms", "ms"), ("OTPS", "otps", "tokens/s")):
        series = []
        for name, r in zip(names, results):
            done = r.requests[r.requests["status"] == "completed"] if "status" in r.requests \
                else r.requests
            xs, ys = cdf(done[col].to_numpy(dtype=float)) if col in done else ([], [])
            series.append((name, xs, ys, None))
        svg, key = _svg.lines(chart_id(cid, what), "%s of each completed request, cumulative" %
                              what, series, "%s per request (%s)" % (what, unit),
                              "requests at or below (%)", xlog=what == "TTFT", yrange=(0, 100))
        charts.append(figure(svg, key, "%s distribution (empirical CDF of the file's requests; "
                             "log scale)" % what if what == "TTFT" else
                             "%s distribution (empirical CDF of the file's requests)" % what))
    series = []
    for name, r in zip(names, results):
        h = r.itl
        counts = h["count"].to_numpy(dtype=float) if "count" in h else np.array([])
        total = counts.sum()
        ys = (np.cumsum(counts) / total * 100).tolist() if total > 0 else []
        series.append((name, h["upper_ms"].tolist() if total > 0 else [], ys, None))
    svg, key = _svg.lines(chart_id(cid, "ITL"), "Inter-token latency, cumulative", series,
                          "ITL at or below (ms; histogram bucket's upper edge)",
                          "tokens at or below (%)", xlog=True, step=True, yrange=(0, 100))
    charts.append(figure(svg, key, "ITL distribution (the file's ITL histogram, cumulative)"))
    sec.blocks.append(("Distributions", "".join(charts)))
    sec.blocks.append(("OTPS over time and the alarm", otps_windows(sec, runs, cid)))
    scaled = [(name, dig(r.summary, "fleet.autoscale")) for name, r in zip(names, results)
              if dig(r.summary, "fleet.autoscale")]
    if scaled:
        series = [(label, [e["time_s"] for e in a["timeline"]],
                   [e["ready"] for e in a["timeline"]], None) for label, a in scaled]
        svg, key = _svg.lines(chart_id(cid, "fleet"), "Replicas ready over the run", series,
                              "time (s)", "replicas ready", step=True, y0=True)
        sec.blocks.append(("Fleet size", figure(svg, key, "The autoscaler's replicas ready at "
                                                "each decision that changed them")))
    config_block(sec, list(zip(names, summaries)))
    return sec


def chart_id(base, what):
    return "c-" + "".join(ch if ch.isalnum() else "-" for ch in base + "-" + what)


def otps_windows(sec, runs, cid):
    alarm = runs.alarm or {}
    threshold = alarm.get("alarm_threshold_otps")
    series, rows = [], []
    for name, r in runs.items():
        w = r.windows
        if len(w):
            series.append((name, w["start_s"].tolist(), w["otps"].tolist(),
                           ["%s, window from %s s: OTPS %s tokens/s, %d completions" %
                            (name, _svg.number(a), _svg.number(b), c)
                            for a, b, c in zip(w["start_s"], w["otps"], w["completions"])]))
        for _, x in w.iterrows():
            rows.append({"key": "%s@%r" % (name, float(x["start_s"])), "run": name,
                         "start_s": x["start_s"], "end_s": x["end_s"],
                         "completions": int(x["completions"]), "otps": x["otps"]})
    hl = []
    text = "<p>The file records no alarm threshold.</p>"
    if threshold is not None and _svg.finite(threshold):
        hl = [(threshold, "alarm threshold")]
        text = ("<p>Alarm threshold: <span data-figure=\"%s|alarm|threshold_otps\" "
                "data-value=\"%r\">%s tokens/s</span>: %g × the p50 OTPS of baseline run %s, as "
                "servesim diagnose sets it (windows of %s s).</p>" %
                (sec_prefix(sec), float(threshold), _svg.number(threshold),
                 alarm.get("alarm_fraction", float("nan")), _svg.esc(alarm.get(
                     "alarm_baseline_run", "?")), _svg.number(runs.period_s)))
    svg, key = _svg.lines(chart_id(cid, "otps-windows"), "OTPS per window", series,
                          "window start (s)", "OTPS (tokens/s)", hlines=hl, y0=True)
    cols = [Column("run", "run"), Column("start_s", "start (s)"), Column("end_s", "end (s)"),
            Column("completions", "completions"), Column("otps", "OTPS (tokens/s)")]
    return text + figure(svg, key, "CloudWatch-style OTPS per window of the file's period") + \
        table("OTPS per window", cols, rows, sec_prefix(sec) + "/windows", "key")


# ---- sweeps, capacity, plans -----------------------------------------------------------------

def flagged(row):
    return any(_svg.finite(row.get(k)) and row.get(k) > 0 for k in ("overloaded",
                                                                    "rejection_heavy"))


def records(df):
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
            for r in df.to_dict("records")]


def sweep_section(path, t, sid):
    seeded = t.intervals is not None and len(t.intervals) and \
        t.intervals["replicates"].max() > 1
    df = t.intervals if seeded else t.table
    rows = records(df)
    for r in rows:
        r["unit"] = "%d" % r["point"]  # the file's point (a unit's first, over its seeds)
        for k, _ in FRONTIER_METRICS:  # the prediction interval the file holds, where it has one
            if k + "_lo" in r and k + "_hi" in r:
                r[k + ".predicted"] = (r[k + "_lo"], r[k + "_hi"])
    sec = Section(path, "sweep", "%s: sweep of %s" % (os.path.basename(path),
                                                     plural(len(rows), "configuration")), sid)
    seeds = sorted({str(s) for s in t.table["seed"]}) if "seed" in t.table else []
    sec.provenance += ([("seed", ", ".join(seeds))] if seeds else []) + \
        [("grid", t.attrs.get("grid", "not recorded"))]
    bad = [r for r in rows if flagged(r)]
    if bad:
        sec.flags.append("%d of %d configurations flagged (overloaded or rejecting): hollow red "
                         "markers." % (len(bad), len(rows)))
    failed = [r for r in records(t.table) if r.get("error")]
    if failed:
        sec.flags.append("%d of %d points failed and are in no figure: %s" % (
            len(failed), len(t.table), "; ".join(sorted({r["error"] for r in failed})[:3])))
    # A series a label (policy:budget) and whatever else varies (GPU, model, TP, max_num_seqs).
    varying = [c for c in ("gpu", "model", "tp", "max_num_seqs")
               if c in df.columns and len({str(x) for x in df[c]}) > 1]
    for r in rows:
        r["series"] = " ".join([str(r.get("label", "?"))] +
                               ["%s=%s" % (c, r.get(c)) for c in varying])
    names = sorted({r["series"] for r in rows})
    metrics = [(k, l) for k, l in FRONTIER_METRICS if k in df.columns]
    cid = chart_id(sid, "frontier")
    default = ("ttft_ms_p99", "itl_ms_p99")
    pairs_drawn = [(x, y) for x in metrics for y in metrics if x != y]
    if len(rows) > FRONTIER_ALL_PAIRS_MAX:  # the default pair only
        pairs_drawn = [p for p in pairs_drawn if (p[0][0], p[1][0]) == default]
    charts = []
    for (xk, xl), (yk, yl) in pairs_drawn:
        groups = []
        for name in names:
            pts = []
            for r in rows:
                if r["series"] != name:
                    continue
                tip = "%s at %s req/s: %s %s, %s %s%s%s" % (
                    name, _svg.number(r.get("request_rate")), xl, _svg.number(r.get(xk)), yl,
                    _svg.number(r.get(yk)), " (%d seeds, 95%% interval bars)" %
                    r["replicates"] if seeded else "", " FLAGGED" if flagged(r) else "")
                pts.append((r.get(xk), r.get(yk), r.get(xk + "_ci95") if seeded else None,
                            r.get(yk + "_ci95") if seeded else None, tip, flagged(r)))
            groups.append((name, pts))
        svg, key = _svg.points("%s-%s-%s" % (cid, xk, yk), "%s against %s" % (yl, xl), groups,
                               xl, yl, xlog=True, ylog=True)
        hidden = "" if (xk, yk) == default or len(pairs_drawn) == 1 else " hidden"
        charts.append('<div class="pair" data-x="%s" data-y="%s"%s>%s</div>' %
                      (xk, yk, hidden, figure(svg, key, "%s against %s, log scales%s" % (
                          yl, xl, "; bars: 95%% intervals over %d seeds" %
                          int(t.intervals["replicates"].max()) if seeded else ""))))
    chooser = ""
    if len(pairs_drawn) > 1:
        opts = lambda sel: "".join('<option value="%s"%s>%s</option>' % (  # noqa: E731
            k, " selected" if k == sel else "", _svg.esc(l)) for k, l in metrics)
        chooser = ('<form class="chooser" data-chart="%s" hidden><label>x axis <select '
                   'name="x">%s</select></label> <label>y axis <select name="y">%s</select>'
                   '</label></form>' % (cid, opts(default[0]), opts(default[1])))
    sec.blocks.append(("Frontier", chooser + '<div data-pairs="%s">%s</div>' %
                       (cid, "".join(charts))))
    axes = [a for a, _ in json.loads(t.attrs["grid"])["axes"]] if \
        str(t.attrs.get("grid", "")).startswith("{") else []
    shown_axes = [a for a in axes if a in df.columns and a not in ("seed", "request-rate")]
    cols = [Column("label", "configuration")] + [Column(a, a) for a in shown_axes] + \
        [Column(c, c) for c in varying if c not in shown_axes] + \
        [Column("request_rate", "rate (req/s)")] + \
        ([Column("replicates", "seeds")] if seeded else []) + \
        [Column(k, l, k + "_ci95" if seeded else None, k + ".predicted") for k, l in metrics] + \
        [Column("rejected_share", "rejected (share)"), Column("overloaded", "overloaded")]
    sec.blocks.append(("Configurations", table(
        "Each configuration%s" % (" (means over its seeds)" if seeded else ""), cols, rows,
        sec_prefix(sec), "unit", ("Under a figure: its 95%% interval's half-width over the seeds, "
                                  "then its %s prediction interval where the file holds one. "
                                  "Rejected: the mean share over the seeds; overloaded: the share "
                                  "of seeds overloaded." if seeded
                                  else "Under a figure: its %s prediction interval where the "
                                  "file holds one.") % pi_level(df))))
    return sec


def pi_level(df):
    """The sweep's prediction-interval level as text (its interval_level column)."""
    levels = sorted({float(x) for x in df.get("interval_level", []) if _svg.finite(float(x))})
    return "/".join("%g%%" % (100 * x) for x in levels) or "(no)"


CAPACITY_COLUMNS = [
    ("label", "option"), ("gpu", "GPU"), ("model", "model"), ("tp", "TP"),
    ("replicas", "replicas"), ("gpus", "GPUs"), ("capacity_req_s", "capacity (req/s)"),
    ("binding", "binding SLO term"), ("attainment", "attainment"),
    ("usd_per_h", "cost ($/h)"), ("cost_per_million_output_tokens", "$ per M output tokens"),
    ("ttft_ms_p99", "TTFT p99 (ms)"), ("itl_ms_p99", "ITL p99 (ms)"),
    ("rejected_share", "rejected (share)"), ("overloaded", "overloaded"), ("note", "note")]


def capacity_section(path, t, sid):
    rows = records(t.table)
    for r in rows:
        r["key"] = "%s" % r.get("point")
    sec = Section(path, "capacity", "%s: capacity of %s" % (os.path.basename(path),
                                                            plural(len(rows), "option")), sid)
    sec.provenance += [("SLO", t.attrs.get("slo", "not recorded")),
                       ("target rate (req/s)", t.attrs.get("target_rate", "not recorded"))]
    bad = {i for i, r in enumerate(rows) if flagged(r)}
    if bad:
        sec.flags.append("%d of %d options flagged (overloaded or rejecting more than the "
                         "search allows)." % (len(bad), len(rows)))
    labels = ["%s %s" % (r.get("label", "?"), r.get("gpu", "")) for r in rows]
    cid = chart_id(sid, "capacity")
    charts = [figure(_svg.bars(cid + "-rate", "Capacity per option", labels,
                               [r.get("capacity_req_s") for r in rows], "capacity (req/s)", bad),
                     "", "The highest request rate each option sustains under the SLO")]
    if any(_svg.finite(r.get("cost_per_million_output_tokens")) for r in rows):
        charts.append(figure(_svg.bars(cid + "-cost", "Cost per option", labels,
                                       [r.get("cost_per_million_output_tokens") for r in rows],
                                       "$ per million output tokens", bad), "",
                             "What a million output tokens cost at each option's capacity"))
    sec.blocks.append(("Options", "".join(charts) + table(
        "Each option", [Column(k, l) for k, l in CAPACITY_COLUMNS if k in t.table.columns],
        rows, sec_prefix(sec), "key")))
    return sec


def plan_section(path, t, sid):
    windows = records(t.table)
    sec = Section(path, "capacity-plan", "%s: a day plan of %s" % (
        os.path.basename(path), plural(len(windows), "window")), sid)
    sec.provenance += [("SLO", t.attrs.get("slo", "not recorded")),
                       ("window (s)", t.attrs.get("window_s", "not recorded"))]
    cid = chart_id(sid, "plan")
    starts = [w["start_s"] for w in windows]
    svg, key = _svg.lines(cid + "-arrivals", "Arrivals per window", [
        ("arrival rate", starts + [windows[-1]["end_s"]] if windows else [],
         [w["rate_req_s"] for w in windows] + ([windows[-1]["rate_req_s"]] if windows else []),
         None)], "time (s)", "arrivals (req/s)", step=True, y0=True)
    charts = [figure(svg, key, "The workload's arrival rate in each window")]
    fleets_df = _h5.read_table(path, "fleets", False)[0]
    size_df = _h5.read_table(path, "fleet_size", False)[0]
    series = [("replicas the window needs", starts + [windows[-1]["end_s"]] if windows else [],
               [w["replicas"] for w in windows] + ([windows[-1]["replicas"]] if windows else []),
               None)]
    fleets = records(fleets_df) if fleets_df is not None else []
    end = windows[-1]["end_s"] if windows else 0
    for f in fleets:
        if f["fleet"] == "fixed":
            series.append(("fixed fleet", [0, end], [f["peak_replicas"]] * 2, None))
        elif size_df is not None:
            mine = size_df[size_df["fleet"] == f["fleet"]]
            xs, ys = mine["time_s"].tolist(), mine["ready"].tolist()
            if ys and xs[-1] < end:  # its last size holds to the day's end
                xs, ys = xs + [end], ys + [ys[-1]]
            series.append(("%s (ready)" % f["fleet"], xs, ys, None))
    svg, key = _svg.lines(cid + "-size", "Fleet size over the day", series, "time (s)",
                          "replicas", step=True, y0=True)
    charts.append(figure(svg, key, "Replicas: what each window needs, and each fleet's size"))
    sec.blocks.append(("The day", "".join(charts)))
    if fleets:
        for f in fleets:
            f["key"] = f["fleet"]
        cols = [Column("fleet", "fleet"), Column("peak_replicas", "peak replicas"),
                Column("replica_hours", "replica-hours"), Column("gpu_hours", "GPU-hours"),
                Column("usd", "cost ($)"), Column("windows_met", "windows met"),
                Column("windows_judged", "windows judged"),
                Column("request_attainment", "requests meeting the SLO (share)"),
                Column("ttft_ms_p99", "TTFT p99 (ms)"), Column("itl_ms_p99", "ITL p99 (ms)"),
                Column("most_failed_term", "most failed term")]
        sec.blocks.append(("Fixed, plan and autoscaler", table(
            "The day simulated under each fleet", cols, fleets, sec_prefix(sec) + "/fleets",
            "key")))
    else:
        sec.flags.append("The file predates the fleets' table: fixed, plan and autoscaler are "
                         "in the command's text only.")
    for w in windows:
        w["key"] = repr(float(w["start_s"]))
    cols = [Column("start_s", "start (s)"), Column("end_s", "end (s)"),
            Column("requests", "requests"), Column("rate_req_s", "rate (req/s)"),
            Column("replicas", "replicas needed"), Column("met", "met"),
            Column("failed_with_one_fewer", "one fewer fails")]
    sec.blocks.append(("Windows", table("Each window", cols, windows,
                                        sec_prefix(sec) + "/windows", "key")))
    return sec


# ---- verdicts and timelines ------------------------------------------------------------------

def diagnose_section(path, j, sid):
    v = j["verdict"]
    sec = Section(path, "diagnose", "%s: diagnose, finding %s" % (os.path.basename(path),
                                                                 v.get("finding", "?")), sid)
    sec.provenance += [("seed", "none: diagnose reads two logs as they are"),
                       ("baseline", dig(j, "baseline.source")),
                       ("current", dig(j, "current.source"))]
    alarm = j.get("alarm", {})
    if alarm.get("fired"):
        sec.flags.append("The OTPS alarm fired on the current log.")
    sec.blocks.append(("Verdict", '<p class="headline" data-figure="%s|verdict|headline" '
                       'data-value="%s">%s</p>' % (sec_prefix(sec), _svg.esc(json.dumps(
                           v.get("headline"))), _svg.esc(v.get("headline"))) +
                       bullet(v.get("details", []))))
    rows = []
    for q in ("p50", "p95"):
        for k in (dig(j, "baseline." + q) or {}):
            rows.append({"key": "%s.%s" % (q, k), "figure": "%s %s" % (k, q),
                         "baseline": dig(j, "baseline.%s.%s" % (q, k)),
                         "current": dig(j, "current.%s.%s" % (q, k))})
    sec.blocks.append(("Baseline and current", table(
        "The two logs' figures", [Column("figure", "figure (unit in its name)"),
                                  Column("baseline", "baseline"), Column("current", "current")],
        rows, sec_prefix(sec), "key")))
    wins = alarm.get("windows", [])
    thr = alarm.get("threshold_otps")
    svg, key = _svg.lines(chart_id(sid, "alarm"), "OTPS per period", [
        ("current OTPS", [w["start_s"] for w in wins], [w["otps"] for w in wins],
         ["from %s s: OTPS %s tokens/s, %s" % (_svg.number(w["start_s"]), _svg.number(w["otps"]),
                                               w["state"]) for w in wins])],
        "period start (s)", "OTPS (tokens/s)", hlines=[(thr, "alarm threshold")] if
        _svg.finite(thr) else [], y0=True)
    for w in wins:
        w["key"] = repr(float(w["start_s"]))
    sec.blocks.append(("OTPS alarm", figure(svg, key, "The current log's OTPS per period and "
                                            "the alarm threshold") + table(
        "Periods", [Column("start_s", "start (s)"), Column("end_s", "end (s)"),
                    Column("completions", "completions"), Column("otps", "OTPS (tokens/s)"),
                    Column("state", "state")], wins, sec_prefix(sec) + "/alarm", "key")))
    return sec


def check_section(path, j, sid):
    sec = Section(path, "check", "%s: check, %s" % (os.path.basename(path), "passed" if
                                                    j.get("passed") else "FAILED"), sid)
    sec.provenance += [("seed", "the spec's, %s" % j.get("spec")), ("spec", j.get("spec")),
                       ("baseline", j.get("baseline"))]
    if not j.get("passed"):
        sec.flags.append("%s regression(s)." % j.get("regressions"))
    rows = []
    for line in j.get("lines", []):
        r = dict(line)
        r["key"] = "%s/%s" % (line.get("scenario"), line.get("metric"))
        lo, hi = (line.get("interval") or [None, None])[:2]
        r["interval"] = "—" if lo is None and hi is None else "%s to %s" % (_svg.number(lo),
                                                                         _svg.number(hi))
        rows.append(r)
    cols = [Column("scenario", "scenario"), Column("metric", "metric (unit in its name)"),
            Column("baseline", "baseline"), Column("current", "current"),
            Column("change_pct", "change (%)"),
            Column("interval", "interval of the change (the metric's unit)"),
            Column("test", "test"), Column("tolerance", "tolerance"), Column("verdict", "verdict"),
            Column("regression", "regression"), Column("note", "note")]
    sec.blocks.append(("Lines", table("One line a scenario and metric", cols, rows,
                                      sec_prefix(sec), "key")))
    causes = j.get("causes", {})
    changes = j.get("config_changes", {})
    if isinstance(changes, list):  # a spec without scenarios
        changes = {"": changes}
    if causes or changes:
        sec.blocks.append(("Evidence", bullet(
            ["%s: cause: %s" % (k, c.get("headline")) for k, c in causes.items()] +
            ["%s: configuration: %s" % (k, x) if k else "configuration: " + x
             for k, xs in changes.items() for x in xs])))
    return sec


def timeline_section(path, j, sid):
    events = j["traceEvents"]
    if not isinstance(events, list):
        raise Error("%s: traceEvents is not a list" % path, file=path, reason="not a timeline")
    names = {e.get("pid"): e["args"]["name"] for e in events
             if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name"}
    steps = sorted((e for e in events if isinstance(e, dict) and e.get("ph") == "X" and
                    e.get("cat") == "step"), key=lambda e: e["ts"])
    total = len(steps)
    kinds = {}
    for e in steps:
        kinds[e.get("name", "?")] = kinds.get(e.get("name", "?"), 0) + 1
    steps = steps[:TIMELINE_LIMIT]  # the earliest, on every replica
    lanes = {}
    for e in steps:
        tip = "%s step at %s s for %s ms: %s" % (e.get("name"), _svg.number(e["ts"] / 1e6),
                                                 _svg.number(e["dur"] / 1e3), ", ".join(
                                                     "%s %s" % kv for kv in e.get("args",
                                                                                  {}).items()))
        a = e.get("args", {})
        tokens = (a.get("prefill_tokens") or 0) + (a.get("decode_tokens") or 0)
        lanes.setdefault(e.get("pid"), []).append((e["ts"] / 1e6, e["dur"] / 1e6,
                                                   e.get("name", "?"), tip, tokens))
    sec = Section(path, "timeline", "%s: timeline of %s" % (os.path.basename(path),
                                                            plural(total, "step")), sid)
    svg, key = _svg.spans(chart_id(sid, "timeline"), "Engine steps",
                                 [(names.get(p, "replica %s" % p), ev) for p, ev in
                                  sorted(lanes.items(), key=lambda x: str(x[0]))],
                                 "simulated time (s)", "tokens in the step (bar height)",
                                 ["prefill", "decode", "mixed"])
    if len(steps) < total:
        sec.flags.append("%d of %d steps drawn (those up to %s s); open the file in Perfetto for "
                         "all of them." % (len(steps), total, _svg.number(steps[-1]["ts"] / 1e6)))
    sec.blocks.append(("Steps", figure(svg, key, "Each step's span, by replica and kind") +
                       pairs("steps by kind", sorted(kinds.items()))))
    return sec


