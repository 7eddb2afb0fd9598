"""A results file's charts: TTFT and ITL distributions, the per-window OTPS and TTFT servesim
wrote (windows), the autoscaled fleet's size, and the OTPS against a baseline with
`servesim diagnose`'s alarm threshold: --alarm-fraction x the baseline run's baseline_otps."""
import math
import os

import numpy as np
import matplotlib.pyplot as plt

from ._common import (InputError, color, finite, hardware_text, legend, load, log_ticks,
                      need_columns, new_figure, percent, set_title, source_text, spans_decade, warn,
                      zero_based)

WINDOW_COLS = ("start_s", "end_s", "otps", "ttft_ms_p50", "ttft_ms_p95")


def check(results):
    """InputError unless every run has the tables the charts draw (read once, before any PNG)."""
    for name, r in results.items():
        need_columns(r.requests, f"/runs/{name}/requests", ("ttft_ms", "status"))
        need_columns(r.windows, f"/runs/{name}/windows", WINDOW_COLS)
        need_columns(r.itl, f"/runs/{name}/itl", ("upper_ms", "count"))


def config_hardware(config):
    """(model, gpu, tp) of a run's config."""
    def name(v):
        if isinstance(v, dict):
            v = v.get("name", "")
        return "" if v is None else str(v)
    return (name(config.get("model")), name(config.get("gpu")),
            config.get("tensor_parallel_size", config.get("tp")))


def config_source(config):
    """Where a run's cost model took its parameters, as servesim's cost_source names it in
    sweep and capacity tables: 'HARDWARE; ENGINE'; '' when the config does not say."""
    cm = config.get("cost_model")
    if not isinstance(cm, dict):
        return ""
    hardware = (cm.get("hardware", {}).get("source", "") if cm.get("name") == "roofline"
                else "profile table " + str(cm.get("profiles", "")))
    return f"{hardware}; {cm.get('engine', {}).get('source', '')}"


def sources_line(runs):
    return source_text([config_source(r.config) for r in runs])


def summary_share(r):
    """The run's rejected_share as its summary gives it; NaN in older files."""
    req = r.summary.get("requests")
    v = req.get("rejected_share") if isinstance(req, dict) else None
    return float(v) if isinstance(v, (int, float)) else math.nan


def verdict(r, max_share):
    """(rejection-heavy, overloaded) of a run: its file's flags, or with MAX_SHARE its
    summary's rejected_share against it."""
    heavy = bool(r.flags.get("rejection_heavy"))
    if max_share is not None and math.isfinite(summary_share(r)):
        heavy = summary_share(r) > max_share
    return heavy, bool(r.flags.get("overloaded"))


def run_label(r, max_share):
    """A run's legend label, with what makes it not comparable."""
    heavy, over = verdict(r, max_share)
    notes = ["OVERLOADED: queue never drains"] if over else []
    if heavy:
        s = summary_share(r)
        notes.append(f"REJECTS {percent(s)}" if math.isfinite(s) else "REJECTS requests")
    return r.label + (f" [{'; '.join(notes)}]" if notes else "")


def run_style(r, max_share):
    return ":" if any(verdict(r, max_share)) else "-"


def runs_title(stem, what, runs):
    return [f"{stem}: {what}", hardware_text([config_hardware(r.config) for r in runs])]


def plot_ttft_cdf(path, stem, runs, args, out):
    name = f"{stem}_ttft_cdf.png"
    fig, ax = new_figure(8, 5)
    drawn, notes = 0, []
    for i, r in enumerate(runs):
        req = r.requests
        ttft = req["ttft_ms"].to_numpy(dtype=float)[(req["status"] == "completed").to_numpy()]
        ttft = np.sort(ttft[np.isfinite(ttft) & (ttft > 0)])  # a log axis cannot show 0
        if ttft.size == 0:
            notes.append(f"run {r.label}: no finished request with a TTFT; left out of {name}")
            continue
        y = np.arange(1, ttft.size + 1) / ttft.size
        # Start the curve at 0 so that a single request still draws a step.
        ax.step(np.r_[ttft[0], ttft], np.r_[0.0, y], where="post", color=color(i),
                linestyle=run_style(r, args.max_rejected_share),
                label=f"{run_label(r, args.max_rejected_share)} (n={ttft.size})")
        drawn += 1
    finish_cdf(fig, ax, path, name, drawn, notes, "no run has a finished request",
               "time to first token (ms, log scale)", "fraction of finished requests",
               runs_title(stem, "TTFT distribution", runs), runs, out)


def finish_cdf(fig, ax, path, name, drawn, notes, empty, xlabel, ylabel, title, runs, out):
    """Labels and saves a CDF figure, or skips it with a message when nothing was drawn."""
    if not drawn:
        plt.close(fig)
        warn(path, f"nothing to draw in {name}: {empty}; skipped")
        return
    for note in notes:
        warn(path, note)
    ax.set_xscale("log")
    log_ticks(ax.xaxis, np.concatenate([np.asarray(line.get_xdata(), dtype=float)
                                        for line in ax.lines] or [np.empty(0)]))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    set_title(fig, title, sources_line(runs))
    ax.grid(True, which="both", alpha=0.3)
    h, labels = ax.get_legend_handles_labels()
    legend(ax, h, labels, loc="lower right")
    out.save(fig, name, {"kind": "cdf"})


def plot_itl_cdf(path, stem, runs, args, out):
    name = f"{stem}_itl_cdf.png"
    fig, ax = new_figure(8, 5)
    drawn, notes = 0, []
    for i, r in enumerate(runs):
        upper = r.itl["upper_ms"].to_numpy(dtype=float)
        count = r.itl["count"].to_numpy(dtype=float)
        ok = np.isfinite(count) & (count > 0) & ~np.isnan(upper)
        total = count[ok].sum()
        if total <= 0:
            notes.append(f"run {r.label}: empty ITL histogram; left out of {name}")
            continue
        order = np.argsort(upper, kind="stable")
        upper, count = upper[order], np.where(ok[order], count[order], 0.0)
        cdf = np.cumsum(count) / total
        nz = np.nonzero(count)[0]
        lo, hi = nz[0], nz[-1]
        x, y = upper[lo:hi + 1], cdf[lo:hi + 1]
        # The overflow bucket (upper bound +inf) cannot be drawn: the curve then ends below 1.
        keep = np.isfinite(x) & (x > 0)
        x, y = x[keep], y[keep]
        if x.size == 0:
            notes.append(f"run {r.label}: no finite ITL bucket; left out of {name}")
            continue
        # The CDF is exact at each bucket's upper bound; it starts from 0 at the bound below the
        # first occupied bucket (or at that bucket's own bound when it is the first).
        x0 = upper[lo - 1] if lo > 0 and np.isfinite(upper[lo - 1]) and upper[lo - 1] > 0 else x[0]
        ax.plot(np.r_[x0, x], np.r_[0.0, y], color=color(i),
                linestyle=run_style(r, args.max_rejected_share),
                label=f"{run_label(r, args.max_rejected_share)} (n={int(total)} gaps)")
        drawn += 1
    finish_cdf(fig, ax, path, name, drawn, notes, "every ITL histogram is empty",
               "inter-token latency (ms, log scale)", "fraction of inter-token gaps",
               runs_title(stem, "ITL distribution (from the histogram's bucket bounds)", runs),
               runs, out)


def alarm_line(ax, threshold, label):
    ax.axhline(threshold, color="crimson", linestyle=":", linewidth=1.5, label=label)
    ax.set_ylim(top=max(ax.get_ylim()[1], threshold * 1.15))


def threshold_for(results, args, baseline):
    """(threshold, legend label, source) of a results file's timeseries: --alarm-fraction x the
    --baseline run's baseline_otps (the whole-log p50 OTPS servesim diagnose takes), else x
    --baseline-otps, else (--self-threshold) x the file's own alarm baseline run's (its first),
    labelled self-referenced; (None, None, reason) when none applies."""
    f = args.alarm_fraction
    if baseline is not None:
        b = baseline["otps"]
        if not math.isfinite(b):
            return None, None, "the baseline has no OTPS (no completed request with decode " \
                "time, or a file that predates baseline_otps)"
        return f * b, (f"alarm: {f:g} x {b:.1f} (baseline {baseline['stem']} {baseline['run']}"
                       f" p50 OTPS, as servesim diagnose) = {f * b:.1f} tok/s"), "baseline"
    if args.baseline_otps is not None:
        b = args.baseline_otps
        return f * b, f"alarm: {f:g} x {b:.1f} (--baseline-otps) = {f * b:.1f} tok/s", \
            "--baseline-otps"
    if args.self_threshold and results:
        first = results.get(results.alarm.get("alarm_baseline_run"), next(iter(results.values())))
        b = first.baseline_otps
        if not math.isfinite(b):
            return None, None, "the first run has no OTPS"
        return f * b, (f"SELF-REFERENCED alarm: {f:g} x {b:.1f} ({first.label}'s own p50 "
                       f"OTPS, not a baseline) = {f * b:.1f} tok/s"), "self"
    return None, None, "none asked for"


def minutes(w):
    """Each window's middle, in minutes, and the span the windows cover."""
    start, end = w["start_s"].to_numpy(dtype=float), w["end_s"].to_numpy(dtype=float)
    return (start + end) / 120.0, list(finite(start / 60.0)) + list(finite(end / 60.0))


def period_text(period_s):
    return f"{period_s:g} s windows" if math.isfinite(period_s) and period_s > 0 else "windows"


def plot_timeseries(path, stem, runs, results, args, baseline, out):
    name = f"{stem}_timeseries.png"
    fig, (ax_otps, ax_ttft) = new_figure(9, 7, rows=2, sharex=True)
    drawn_otps = drawn_ttft = 0
    all_ttft, span = [], []
    for i, r in enumerate(runs):
        w = r.windows
        if len(w) == 0:
            continue
        t, s = minutes(w)
        span.extend(s)
        c = color(i)
        otps = w["otps"].to_numpy(dtype=float)
        p50, p95 = w["ttft_ms_p50"].to_numpy(dtype=float), w["ttft_ms_p95"].to_numpy(dtype=float)
        if np.isfinite(otps).any():
            ax_otps.plot(t, otps, marker="o", markersize=3, color=c,
                         linestyle=run_style(r, args.max_rejected_share),
                         label=run_label(r, args.max_rejected_share))
            drawn_otps += 1
        if np.isfinite(p50).any() or np.isfinite(p95).any():
            ax_ttft.plot(t, p50, marker="o", markersize=3, color=c, linestyle="-")
            ax_ttft.plot(t, p95, marker="^", markersize=3, color=c, linestyle="--")
            all_ttft.extend(finite(p50))
            all_ttft.extend(finite(p95))
            drawn_ttft += 1
    if not drawn_otps and not drawn_ttft:
        plt.close(fig)
        warn(path, f"nothing to draw in {name}: no window has a completion; skipped")
        return

    threshold, label, source = threshold_for(results, args, baseline)
    if threshold is not None:
        alarm_line(ax_otps, threshold, label)
    elif source != "none asked for":
        warn(path, f"{name}: {source}; no alarm line")
    else:
        ax_otps.text(0.99, 0.02, "no alarm threshold: pass --baseline BASE.h5 (as servesim "
                     "diagnose) or --baseline-otps X", transform=ax_otps.transAxes, ha="right",
                     va="bottom", fontsize="x-small", color="gray")

    set_title(fig, runs_title(stem, f"per-window metrics ({period_text(results.period_s)})",
                              runs), sources_line(runs))
    linear_panel(ax_otps, "OTPS, CloudWatch (output tokens/s)")
    if not drawn_otps:
        ax_otps.text(0.5, 0.5, "no window has an OTPS", transform=ax_otps.transAxes,
                     ha="center", va="center", color="gray")
    finish_ttft_panel(ax_ttft, runs, drawn_otps, drawn_ttft, all_ttft, span)
    out.save(fig, name, {"kind": "timeseries", "threshold_otps": threshold,
                         "threshold_source": source if threshold else None})


def linear_panel(ax, ylabel):
    """A panel's y label, a linear axis from 0, a grid, and its legend when it has entries."""
    ax.set_ylabel(ylabel)
    zero_based(ax)
    ax.grid(True, alpha=0.3)
    h, labels = ax.get_legend_handles_labels()
    if h:
        legend(ax, h, labels)


def autoscale_of(r):
    """The autoscaler summary of a run's summary (fleet.autoscale), or None."""
    fleet = r.summary.get("fleet")
    a = fleet.get("autoscale") if isinstance(fleet, dict) else None
    return a if isinstance(a, dict) and a.get("timeline") else None


def plot_fleet_size(stem, runs, period_s, out):
    """Autoscaled runs: the arrival rate per window above, the replicas serving, starting and
    draining below (step lines, as the autoscaler changed them)."""
    scaled = [(i, r, autoscale_of(r)) for i, r in enumerate(runs) if autoscale_of(r)]
    if not scaled:
        return
    name = f"{stem}_fleet_size.png"
    fig, (ax_rate, ax_n) = new_figure(9, 6, rows=2, sharex=True)
    for i, r, a in scaled:
        c = color(i)
        w = r.windows
        if len(w) and "arrivals" in w.columns and math.isfinite(period_s) and period_s > 0:
            ax_rate.plot(minutes(w)[0], w["arrivals"].to_numpy(dtype=float) / period_s, color=c,
                         marker="o", markersize=2, label=r.label)
        tl = a["timeline"]
        t = np.array([e["time_s"] for e in tl], dtype=float) / 60.0
        ready = np.array([e["ready"] for e in tl], dtype=float)
        starting = np.array([e["starting"] for e in tl], dtype=float)
        draining = np.array([e["draining"] for e in tl], dtype=float)
        ax_n.step(t, ready, where="post", color=c, label=f"{r.label}: serving")
        ax_n.step(t, ready + starting, where="post", color=c, linestyle="--",
                  label=f"{r.label}: + starting")
        if draining.any():
            ax_n.step(t, ready + starting + draining, where="post", color=c, linestyle=":",
                      label=f"{r.label}: + draining")
    a0 = scaled[0][2]
    how = ("a schedule" if a0.get("metric") == "schedule"
           else f"{a0.get('metric')} target {a0.get('target'):g} per replica")
    shown = [r for _, r, _ in scaled]
    set_title(fig, runs_title(stem, f"autoscaled fleet ({how}; "
                              f"{a0.get('replica_hours', math.nan):.2f} replica-hours)", shown),
              sources_line(shown))
    linear_panel(ax_rate, "arrivals (requests/s per window)")
    linear_panel(ax_n, "replicas")
    ax_n.set_xlabel("time (minutes)")
    out.save(fig, name, {"kind": "fleet_size", "replica_hours": a0.get("replica_hours"),
                         "peak_replicas": a0.get("peak_replicas")})


def time_axis(ax_ttft, all_ttft, span):
    """The lower panel's y scale (log when TTFT spans a decade) and its time axis, whole
    windows shown even when there is one. Returns whether the scale is log."""
    log = spans_decade(all_ttft)
    if log:
        ax_ttft.set_yscale("log")
        log_ticks(ax_ttft.yaxis, all_ttft)
    else:
        zero_based(ax_ttft)
    ax_ttft.grid(True, which="both", alpha=0.3)
    if len(span) and max(span) > min(span):
        ax_ttft.set_xlim(min(span), max(span))
    ax_ttft.set_xlabel("time (minutes; each point at the middle of its window)")
    return log


def finish_ttft_panel(ax_ttft, runs, drawn_otps, drawn_ttft, all_ttft, span):
    log = time_axis(ax_ttft, all_ttft, span)
    ax_ttft.set_ylabel("TTFT per window (ms" + (", log scale)" if log else ")"))
    if drawn_ttft:
        # Style legend (solid p50, dashed p95); colours are the runs of the panel above.
        ax_ttft.plot([], [], color="black", linestyle="-", marker="o", markersize=3, label="p50")
        ax_ttft.plot([], [], color="black", linestyle="--", marker="^", markersize=3, label="p95")
        if not drawn_otps:  # the run legend would otherwise be missing
            for i, r in enumerate(runs):
                ax_ttft.plot([], [], color=color(i), label=r.label)
        h, labels = ax_ttft.get_legend_handles_labels()
        legend(ax_ttft, h, labels)
    else:
        ax_ttft.text(0.5, 0.5, "no window has a TTFT", transform=ax_ttft.transAxes,
                     ha="center", va="center", color="gray")


def plot_vs_baseline(path, stem, runs, results, args, baseline, out):
    """The baseline's and each current run's OTPS per window on one chart, with the alarm
    threshold of servesim diagnose: alarm_fraction x the baseline's whole-log p50 OTPS."""
    name = f"{stem}_vs_{baseline['stem']}_otps.png"
    base = baseline["result"]
    beside = len(runs) > 2  # a long legend goes beside the axes, on a wider figure
    fig, (ax, ax_ttft) = new_figure(13 if beside else 9, 7.5, rows=2, sharex=True)
    series = [(base, "black", "--", f"baseline {baseline['stem']}: "
               f"{run_label(base, args.max_rejected_share)}")]
    for i, r in enumerate(runs):
        series.append((r, color(i), "-", f"current {stem}: {run_label(r, args.max_rejected_share)}"))
    threshold, label, _ = threshold_for(results, args, baseline)
    drawn = breaching = 0
    span, all_ttft = [], []
    for r, c, ls, lab in series:
        w = r.windows
        if len(w) == 0:
            continue
        t, s = minutes(w)
        span.extend(s)
        otps, p50 = w["otps"].to_numpy(dtype=float), w["ttft_ms_p50"].to_numpy(dtype=float)
        if np.isfinite(otps).any():
            ax.plot(t, otps, marker="o", markersize=3, color=c, linestyle=ls, label=lab)
            drawn += 1
        ax_ttft.plot(t, p50, marker="o", markersize=3, color=c, linestyle=ls)
        all_ttft.extend(finite(p50))
        if threshold is not None and r is not base:
            br = np.isfinite(otps) & (otps < threshold)
            breaching += int(br.sum())
            ax.plot(t[br], otps[br], linestyle="none", marker="v", markersize=8,
                    markerfacecolor="none", markeredgecolor="crimson")
    if not drawn:
        plt.close(fig)
        warn(path, f"nothing to draw in {name}: no window of either log has an OTPS; skipped")
        return
    if threshold is not None:
        alarm_line(ax, threshold, label)
        if breaching:
            ax.plot([], [], linestyle="none", marker="v", markersize=8, markerfacecolor="none",
                    markeredgecolor="crimson",
                    label=f"current window below the threshold ({breaching})")
    else:
        warn(path, f"{name}: the baseline has no OTPS; no alarm line")
    period = period_text(results.period_s)
    bp = baseline["period_s"]
    if math.isfinite(bp) and bp != results.period_s:
        period = f"current: {period}, baseline: {bp:g} s windows"
    set_title(fig, [
        f"{stem} vs baseline {baseline['stem']}: OTPS per window ({period})",
        f"baseline: {hardware_text([config_hardware(base.config)])}; current: "
        f"{hardware_text([config_hardware(r.config) for r in runs])}"],
        sources_line([base] + list(runs)))
    ax.set_ylabel("OTPS, CloudWatch (output tokens/s)")
    zero_based(ax)
    ax.grid(True, alpha=0.3)
    h, labels = ax.get_legend_handles_labels()
    legend(ax, h, labels, inside_max=0 if beside else 6)
    log = time_axis(ax_ttft, all_ttft, span)
    ax_ttft.set_ylabel("TTFT p50 per window (ms" + (", log)" if log else ")"))
    out.save(fig, name, {
        "kind": "vs_baseline", "threshold_otps": threshold, "baseline_otps_p50": baseline["otps"],
        "alarm_fraction": args.alarm_fraction, "baseline": f"{baseline['path']}:{baseline['run']}",
        "current_runs": [n for n in results if args.current_run in (None, n)],
        "breaching_windows": breaching})


def plot(path, stem, results, args, out, baseline=None):
    """Every chart of one results file (--current-run: of that run only)."""
    runs = [r for n, r in results.items() if args.current_run in (None, n)]
    if not runs:
        warn(path, "the file holds no runs" + (f" named {args.current_run!r}"
                                                if args.current_run else "") + "; nothing to plot")
        return
    out.unflagged(path, [k for k in ("rejection_heavy", "overloaded")
                         if any(k not in r.flags for r in runs)])
    plot_ttft_cdf(path, stem, runs, args, out)
    plot_itl_cdf(path, stem, runs, args, out)
    plot_timeseries(path, stem, runs, results, args, baseline, out)
    plot_fleet_size(stem, runs, results.period_s, out)
    if baseline is not None:
        plot_vs_baseline(path, stem, runs, results, args, baseline, out)


def load_baseline(path, run_name):
    """The --baseline results file: one run (named, or the only one, as servesim diagnose picks
    it) and its baseline_otps, the whole-log p50 OTPS servesim wrote for it."""
    kind, results = load(path)
    if kind != "results":
        raise InputError(f"--baseline needs a results file (run/compare --out), not a {kind} "
                         "file")
    check(results)
    names = list(results)
    if run_name is not None:
        if run_name not in results:
            raise InputError(f"no run named {run_name!r} (runs: {', '.join(names)})")
    elif len(names) != 1:
        raise InputError(f"holds {len(names)} runs; name one with --baseline-run: "
                         f"{', '.join(names)}")
    run = run_name if run_name is not None else names[0]
    return {"path": path, "stem": os.path.splitext(os.path.basename(path))[0], "run": run,
            "result": results[run], "period_s": results.period_s,
            "otps": results[run].baseline_otps}
