#!/usr/bin/python3
"""Plots servesim's HDF5 output files as PNGs.

    scripts/plot.py FILE [FILE...] -o OUTDIR [--alarm-fraction 0.8] [--baseline-otps X]

Each FILE's kind comes from its root attribute `magic` (layouts: README.md and sim/results.hpp):
  servesim-results   (run|compare --out)  STEM_ttft_cdf.png, STEM_itl_cdf.png, STEM_timeseries.png
  servesim-sweep     (sweep --out)        STEM_frontier.png
  servesim-capacity  (capacity --out)     STEM_capacity.png
STEM is the file name without its extension. Every PNG written is printed, one path a line. A plot
with nothing to draw is skipped with a message on stderr. An unreadable file, an unknown kind or a
missing dataset is one error line naming the file, exit status 2; every file is read before any
PNG is written, so nothing is written then.
Output is deterministic: no timestamps or version strings in the PNGs.

Needs Debian 12's python3-matplotlib and python3-h5py (scripts/install-deps installs them).
"""

import argparse
import json
import math
import os
import sys

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

try:
    import h5py  # noqa: E402
except ImportError:  # pragma: no cover
    sys.exit("plot.py: needs h5py (Debian: python3-h5py; run scripts/install-deps)")

PROG = "plot.py"
KINDS = {"servesim-results": "results", "servesim-sweep": "sweep", "servesim-capacity": "capacity"}
SUPPORTED_VERSION = 1
DPI = 100


class InputError(Exception):
    """A file that cannot be plotted; the message does not name the file."""


def warn(path, msg):
    print(f"{PROG}: {path}: {msg}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# Reading


def text(v):
    """A string attribute or element as str: accepts bytes, numpy bytes/str and 0-d arrays."""
    if isinstance(v, np.ndarray):
        v = v.item() if v.size == 1 else v.tolist()
    if isinstance(v, (bytes, np.bytes_)):
        v = bytes(v).decode("utf-8", errors="replace")
    return str(v).rstrip("\0")


def attr_text(obj, name, default=None):
    return text(obj.attrs[name]) if name in obj.attrs else default


def attr_number(obj, name):
    """A numeric attribute as float, or NaN when missing or not a number."""
    if name not in obj.attrs:
        return math.nan
    try:
        return float(np.asarray(obj.attrs[name]).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        try:
            return float(text(obj.attrs[name]))
        except ValueError:
            return math.nan


def is_string_dtype(dt):
    return dt.kind in ("S", "U", "O") or h5py.check_string_dtype(dt) is not None


def read_column(group, name):
    """A 1-D dataset as a float array, or as an object array of str for string columns."""
    ds = group[name]
    if not isinstance(ds, h5py.Dataset):
        raise InputError(f"{group.name}/{name} is not a dataset")
    if ds.shape is None:  # null dataspace
        data = np.empty(0, dtype=ds.dtype)
    else:
        data = np.atleast_1d(ds[()])
    if data.ndim != 1:
        raise InputError(f"{ds.name} has shape {data.shape}, expected a 1-D column")
    if is_string_dtype(ds.dtype):
        return np.array([text(x) for x in data], dtype=object)
    if data.dtype.kind not in "biuf":
        raise InputError(f"{ds.name} has unsupported type {ds.dtype}")
    return data.astype(float)


def read_table(parent, group_name, required, optional=()):
    """Columns of the group PARENT/GROUP_NAME as a dict; every required column must exist and all
    columns must have the same length. Optional columns missing from the file are left out."""
    if group_name not in parent:
        raise InputError(f"missing group {parent.name.rstrip('/')}/{group_name}")
    g = parent[group_name]
    if not isinstance(g, h5py.Group):
        raise InputError(f"{g.name} is not a group")
    cols = {}
    for name in required:
        if name not in g:
            raise InputError(f"missing dataset {g.name}/{name}")
        cols[name] = read_column(g, name)
    for name in optional:
        if name in g and name not in cols:
            cols[name] = read_column(g, name)
    lengths = {len(v) for v in cols.values()}
    if len(lengths) > 1:
        detail = ", ".join(f"{k}={len(v)}" for k, v in cols.items())
        raise InputError(f"columns of {g.name} have different lengths ({detail})")
    return cols


def table_len(cols):
    return len(next(iter(cols.values()))) if cols else 0


def open_checked(path):
    """Opens PATH and returns (h5py.File, kind); raises InputError when it is not a servesim
    file of a known kind and version."""
    if not os.path.isfile(path):
        raise InputError("no such file" if not os.path.exists(path) else "not a regular file")
    try:
        f = h5py.File(path, "r")
    except (OSError, ValueError) as e:
        raise InputError(f"not a readable HDF5 file ({e.__class__.__name__})") from None
    try:
        magic = attr_text(f, "magic")
        if magic not in KINDS:
            raise InputError("not a servesim output file (no 'magic' attribute)" if magic is None
                             else f"unknown file kind (magic {magic!r})")
        version = attr_number(f, "version")
        if version != SUPPORTED_VERSION:
            raise InputError(f"{magic} version {attr_text(f, 'version')} is not supported "
                             f"(this script reads version {SUPPORTED_VERSION})")
    except Exception:
        f.close()
        raise
    return f, KINDS[magic]


# ---------------------------------------------------------------------------------------------
# Drawing helpers


def color(i, n=10):
    """The i-th of n colours: tab10 while they are distinct, a continuous map beyond."""
    if n <= 10:
        return plt.get_cmap("tab10")(i % 10)
    return plt.get_cmap("viridis")(i / (n - 1) * 0.9)


def legend(ax, fig, entries):
    """A legend inside the axes when short; beside them, in columns, when long."""
    if entries <= 12:
        ax.legend(loc="best", fontsize="small")
        return
    fig.set_size_inches(fig.get_size_inches()[0] + 3.5, fig.get_size_inches()[1])
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small",
              ncol=1 + (entries - 1) // 30, borderaxespad=0)


def save(fig, outdir, name, written):
    path = os.path.join(outdir, name)
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    written.append(path)


def finite(a):
    a = np.asarray(a, dtype=float)
    return a[np.isfinite(a)]


def spans_decade(values):
    """True when the positive finite VALUES span more than 10x (then a log axis reads better)."""
    v = finite(values)
    v = v[v > 0]
    return v.size > 1 and v.max() > 10 * v.min() and v.size == finite(values).size


def short_tokens(n):
    """A token budget for an annotation: 512, 2K, 128K."""
    n = int(n)
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    return str(n)


# ---------------------------------------------------------------------------------------------
# Results files

REQUEST_COLS = ("ttft_ms", "status")
WINDOW_COLS = ("start_s", "end_s", "otps", "ttft_ms_p50", "ttft_ms_p95")
ITL_COLS = ("upper_ms", "count")


def summary_otps_ratio(summary):
    """The run's CloudWatch OTPS (ratio of medians) from its summary JSON: `otps_p50_ratio` at the
    top level or `otps.p50_ratio` (as `run --json` writes it)."""
    for getter in (lambda s: s["otps_p50_ratio"], lambda s: s["otps"]["p50_ratio"]):
        try:
            v = float(getter(summary))
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(v) and v > 0:
            return v
    return None


def load_results(f):
    names = [n.strip() for n in (attr_text(f, "runs") or "").split("\n") if n.strip()]
    if "runs" not in f or not isinstance(f["runs"], h5py.Group):
        if names:
            raise InputError("missing group /runs")
        return [], math.nan
    if not names:
        names = list(f["runs"].keys())
    runs = []
    for name in names:
        if name not in f["runs"]:
            raise InputError(f"run {name!r} is listed in attribute 'runs' but /runs has no such group")
        g = f["runs"][name]
        raw = attr_text(g, "summary") or "{}"
        try:
            summary = json.loads(raw)
        except ValueError:
            raise InputError(f"attribute {g.name}.summary is not JSON") from None
        runs.append({
            "name": name,
            "label": attr_text(g, "label") or name,
            "summary": summary if isinstance(summary, dict) else {},
            "requests": read_table(g, "requests", REQUEST_COLS),
            "windows": read_table(g, "windows", WINDOW_COLS),
            "itl": read_table(g, "itl", ITL_COLS),
        })
    return runs, attr_number(f, "period_s")


def plot_ttft_cdf(path, stem, runs, outdir, written):
    name = f"{stem}_ttft_cdf.png"
    fig, ax = plt.subplots(figsize=(8, 5))
    drawn, notes = 0, []
    for i, r in enumerate(runs):
        req = r["requests"]
        ttft = req["ttft_ms"][(req["status"] == 0) & np.isfinite(req["ttft_ms"])]
        ttft = np.sort(ttft[ttft > 0])  # a log axis cannot show 0
        if ttft.size == 0:
            notes.append(f"run {r['label']}: no finished request with a TTFT; left out of {name}")
            continue
        y = np.arange(1, ttft.size + 1) / ttft.size
        # Start the curve at 0 so that a single request still draws a step.
        ax.step(np.r_[ttft[0], ttft], np.r_[0.0, y], where="post", color=color(i),
                label=f"{r['label']} (n={ttft.size})")
        drawn += 1
    finish_cdf(fig, ax, path, name, drawn, notes, "no run has a finished request",
               "time to first token (ms, log scale)", "fraction of finished requests",
               f"{stem}: TTFT distribution", outdir, written)


def finish_cdf(fig, ax, path, name, drawn, notes, empty, xlabel, ylabel, title, outdir, written):
    """Labels and saves a CDF figure, or skips it with a message when nothing was drawn."""
    if not drawn:
        plt.close(fig)
        warn(path, f"nothing to draw in {name}: {empty}; skipped")
        return
    for note in notes:
        warn(path, note)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    save(fig, outdir, name, written)


def plot_itl_cdf(path, stem, runs, outdir, written):
    name = f"{stem}_itl_cdf.png"
    fig, ax = plt.subplots(figsize=(8, 5))
    drawn, notes = 0, []
    for i, r in enumerate(runs):
        upper, count = r["itl"]["upper_ms"], r["itl"]["count"]
        ok = np.isfinite(count) & (count > 0) & ~np.isnan(upper)
        total = count[ok].sum()
        if total <= 0:
            notes.append(f"run {r['label']}: empty ITL histogram; left out of {name}")
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
            notes.append(f"run {r['label']}: no finite ITL bucket; left out of {name}")
            continue
        # The CDF is exact at each bucket's upper bound; it starts from 0 at the bound below the
        # first occupied bucket (or at that bucket's own bound when it is the first).
        x0 = upper[lo - 1] if lo > 0 and np.isfinite(upper[lo - 1]) and upper[lo - 1] > 0 else x[0]
        ax.plot(np.r_[x0, x], np.r_[0.0, y], color=color(i),
                label=f"{r['label']} (n={int(total)} gaps)")
        drawn += 1
    finish_cdf(fig, ax, path, name, drawn, notes, "every ITL histogram is empty",
               "inter-token latency (ms, log scale)", "fraction of inter-token gaps",
               f"{stem}: ITL distribution (from the histogram's bucket bounds)", outdir, written)


def plot_timeseries(path, stem, runs, period_s, args, outdir, written):
    name = f"{stem}_timeseries.png"
    fig, (ax_otps, ax_ttft) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    drawn_otps = drawn_ttft = 0
    all_ttft, span = [], []
    for i, r in enumerate(runs):
        w = r["windows"]
        if table_len(w) == 0:
            continue
        t = w["start_s"] / 60.0
        span.extend(finite(t))
        span.extend(finite(w["end_s"] / 60.0))
        c = color(i)
        if np.isfinite(w["otps"]).any():
            ax_otps.plot(t, w["otps"], marker="o", markersize=3, color=c, label=r["label"])
            drawn_otps += 1
        if np.isfinite(w["ttft_ms_p50"]).any() or np.isfinite(w["ttft_ms_p95"]).any():
            ax_ttft.plot(t, w["ttft_ms_p50"], marker="o", markersize=3, color=c, linestyle="-")
            ax_ttft.plot(t, w["ttft_ms_p95"], marker="^", markersize=3, color=c, linestyle="--")
            all_ttft.extend(finite(w["ttft_ms_p50"]))
            all_ttft.extend(finite(w["ttft_ms_p95"]))
            drawn_ttft += 1
    if not drawn_otps and not drawn_ttft:
        plt.close(fig)
        warn(path, f"nothing to draw in {name}: no window has a completion; skipped")
        return

    # The alarm threshold: a fraction of the baseline OTPS.
    if args.baseline_otps is not None:
        baseline, source = args.baseline_otps, "--baseline-otps"
    else:
        baseline = summary_otps_ratio(runs[0]["summary"]) if runs else None
        source = f"{runs[0]['label']} OTPS p50 ratio" if runs else ""
    if baseline is not None and math.isfinite(baseline) and baseline > 0:
        threshold = args.alarm_fraction * baseline
        ax_otps.axhline(threshold, color="crimson", linestyle=":", linewidth=1.5,
                        label=f"alarm: {args.alarm_fraction:g} x {baseline:.1f} ({source}) "
                              f"= {threshold:.1f} tok/s")
    else:
        warn(path, f"{name}: no baseline OTPS (first run's summary has no positive "
                   "otps_p50_ratio; pass --baseline-otps); no alarm line")

    period = f"{period_s:g} s windows" if math.isfinite(period_s) and period_s > 0 else "windows"
    ax_otps.set_title(f"{stem}: per-window metrics ({period})")
    ax_otps.set_ylabel("OTPS, CloudWatch (output tokens/s)")
    ax_otps.set_ylim(bottom=0)
    ax_otps.grid(True, alpha=0.3)
    if ax_otps.get_legend_handles_labels()[0]:
        ax_otps.legend(loc="best", fontsize="small")
    if not drawn_otps:
        ax_otps.text(0.5, 0.5, "no window has an OTPS", transform=ax_otps.transAxes,
                     ha="center", va="center", color="gray")

    if spans_decade(all_ttft):
        ax_ttft.set_yscale("log")
        ax_ttft.set_ylabel("TTFT per window (ms, log scale)")
    else:
        ax_ttft.set_ylabel("TTFT per window (ms)")
        ax_ttft.set_ylim(bottom=0)
    ax_ttft.grid(True, which="both", alpha=0.3)
    if drawn_ttft:
        # Style legend (solid p50, dashed p95); colours are the runs of the panel above.
        ax_ttft.plot([], [], color="black", linestyle="-", marker="o", markersize=3, label="p50")
        ax_ttft.plot([], [], color="black", linestyle="--", marker="^", markersize=3, label="p95")
        if not drawn_otps:  # the run legend would otherwise be missing
            for i, r in enumerate(runs):
                ax_ttft.plot([], [], color=color(i), label=r["label"])
        ax_ttft.legend(loc="best", fontsize="small")
    else:
        ax_ttft.text(0.5, 0.5, "no window has a TTFT", transform=ax_ttft.transAxes,
                     ha="center", va="center", color="gray")
    if len(span) and max(span) > min(span):  # show whole windows, even a single one
        ax_ttft.set_xlim(min(span), max(span))
    ax_ttft.set_xlabel("window start (minutes)")
    fig.tight_layout()
    save(fig, outdir, name, written)


def plot_results(path, stem, data, args, outdir, written):
    runs, period_s = data
    if not runs:
        warn(path, "the file holds no runs; nothing to plot")
        return
    plot_ttft_cdf(path, stem, runs, outdir, written)
    plot_itl_cdf(path, stem, runs, outdir, written)
    plot_timeseries(path, stem, runs, period_s, args, outdir, written)


# ---------------------------------------------------------------------------------------------
# Sweep files

SWEEP_COLS = ("policy", "max_num_batched_tokens", "request_rate", "ttft_ms_p50", "itl_ms_p99")
# Swept flags that the resolved columns already account for (the key is policy, budget, rate).
FLAGS_RESOLVED = {"scheduler", "max-num-batched-tokens", "request-rate", "max_num_batched_tokens",
                  "request_rate", "policy", "label", "point"}
# Resolved columns that tell lines apart when they vary across the points.
EXTRA_RESOLVED = ("gpu", "model", "tp")


def sweep_flags(f):
    """The swept flag names from the root attribute `grid`, JSON
    {"fixed": [[flag, value], ...], "axes": [[flag, [values...]], ...]}."""
    raw = attr_text(f, "grid")
    if not raw:
        return []
    try:
        grid = json.loads(raw)
        flags = [str(entry[0]).lstrip("-") for entry in grid["axes"]]
    except (ValueError, TypeError, IndexError, KeyError):
        raise InputError("attribute 'grid' is not JSON {\"axes\": [[flag, [values...]], ...]}") \
            from None
    return flags


def load_sweep(f):
    flags = sweep_flags(f)
    extra_names = list(EXTRA_RESOLVED)
    extra_names += [fl for fl in flags if fl not in FLAGS_RESOLVED and fl not in EXTRA_RESOLVED
                    and fl != "tensor-parallel-size"]
    return read_table(f, "points", SWEEP_COLS, optional=extra_names), extra_names


def plot_sweep(path, stem, data, args, outdir, written):
    pts, extra_names = data
    name = f"{stem}_frontier.png"
    n = table_len(pts)
    x, y = pts["ttft_ms_p50"], pts["itl_ms_p99"]
    ok = np.isfinite(x) & np.isfinite(y)
    if n == 0 or not ok.any():
        warn(path, f"nothing to draw in {name}: " +
             ("the sweep has no points" if n == 0 else "no point has both TTFT p50 and ITL p99")
             + "; skipped")
        return
    if (~ok).any():
        warn(path, f"{name}: {int((~ok).sum())} of {n} points have no TTFT p50 or ITL p99 "
                   "(the point could not run, see its error column, or nothing completed); "
                   "left out")

    # Columns other than policy/rate/budget that vary between points split the lines too.
    varying = []
    for c in extra_names:
        if c in pts:
            vals = pts[c][ok]
            if len({str(v) for v in vals}) > 1:
                varying.append(c)

    def value_text(c, v):
        if isinstance(v, float):
            return "n/a" if not math.isfinite(v) else f"{v:g}"
        return str(v)

    policies = sorted({str(p) for p in pts["policy"][ok]})
    markers = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
    marker_of = {p: markers[i % len(markers)] for i, p in enumerate(policies)}

    # Line key: (rate, varying extras...) -> colour; policy -> marker.
    groups = {}
    for i in np.nonzero(ok)[0]:
        rate = pts["request_rate"][i]
        rate_key = f"{rate:g}" if math.isfinite(rate) else "n/a"
        extras = tuple(value_text(c, pts[c][i]) for c in varying)
        groups.setdefault((str(pts["policy"][i]), rate_key, extras), []).append(i)
    colour_keys = sorted({(k[1], k[2]) for k in groups},
                         key=lambda k: (math.inf if k[0] == "n/a" else float(k[0]), k[1]))
    # Colour by rate; the other varying columns (a GPU, a model...) by line style.
    rates = sorted({k[0] for k in colour_keys}, key=lambda r: math.inf if r == "n/a" else float(r))
    extras_keys = sorted({k[1] for k in colour_keys})
    styles = ["-", "--", ":", "-."]
    colour_of = {k: color(rates.index(k[0]), len(rates)) for k in colour_keys}
    style_of = {e: styles[i % len(styles)] for i, e in enumerate(extras_keys)}

    fig, ax = plt.subplots(figsize=(9, 6))
    for key in sorted(groups, key=lambda k: (k[0], colour_keys.index((k[1], k[2])))):
        policy, rate_key, extras = key
        idx = sorted(groups[key], key=lambda i: (pts["max_num_batched_tokens"][i], i))
        gx, gy = x[idx], y[idx]
        label = f"{rate_key} req/s" if rate_key != "n/a" else "rate n/a"
        if len(policies) > 1:
            label = f"{policy}, {label}"
        if varying:
            label += ", " + ", ".join(f"{c}={v}" for c, v in zip(varying, extras))
        ax.plot(gx, gy, marker=marker_of[policy], color=colour_of[(rate_key, extras)],
                linestyle=style_of[extras], label=label, markersize=6)
        for i in idx:
            b = pts["max_num_batched_tokens"][i]
            if math.isfinite(b):
                ax.annotate(short_tokens(b), (x[i], y[i]), textcoords="offset points",
                            xytext=(5, 4), fontsize=7, color=colour_of[(rate_key, extras)])
    log_x, log_y = spans_decade(x[ok]), spans_decade(y[ok])
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("TTFT p50 (ms" + (", log scale)" if log_x else ")"))
    ax.set_ylabel("ITL p99 (ms" + (", log scale)" if log_y else ")"))
    ax.set_title(f"{stem}: TTFT/ITL trade-off; points labelled with max_num_batched_tokens")
    ax.grid(True, which="both", alpha=0.3)
    legend(ax, fig, len(groups))
    fig.tight_layout()
    save(fig, outdir, name, written)


# ---------------------------------------------------------------------------------------------
# Capacity files

CAPACITY_COLS = ("policy", "max_num_batched_tokens", "capacity_req_s")


def load_capacity(f):
    return (read_table(f, "capacity", CAPACITY_COLS, optional=("replicas", "note")),
            attr_text(f, "slo"))


def plot_capacity(path, stem, data, args, outdir, written):
    cap, slo = data
    name = f"{stem}_capacity.png"
    n = table_len(cap)
    b, c = cap["max_num_batched_tokens"], cap["capacity_req_s"]
    ok = np.isfinite(b) & (b > 0) & np.isfinite(c)
    if n == 0 or not ok.any():
        warn(path, f"nothing to draw in {name}: " +
             ("the table is empty" if n == 0 else "no row has a capacity and a positive budget")
             + "; skipped")
        return
    if (~ok).any():
        warn(path, f"{name}: {int((~ok).sum())} of {n} rows have no capacity or no positive "
                   "budget; left out")
    slo = slo or ""
    # servesim's note column: "at least..." is a lower bound (the SLO held at --rate-max), and
    # "rejects..." a configuration that refuses requests at any rate (capacity 0).
    notes = [str(cap["note"][i]) if "note" in cap else "" for i in range(n)]
    lower = np.array([t.startswith("at least") for t in notes], dtype=bool)
    rejects = np.array([t.startswith("rejects") for t in notes], dtype=bool)
    fig, ax = plt.subplots(figsize=(8, 5))
    policies = sorted({str(p) for p in cap["policy"][ok]})
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    exact = ok & ~lower & ~rejects
    top = float(np.max(c[exact])) * 1.3 if exact.any() and np.max(c[exact]) > 0 else None
    for j, policy in enumerate(policies):
        idx = [i for i in np.nonzero(ok)[0] if str(cap["policy"][i]) == policy]
        idx.sort(key=lambda i: (b[i], i))
        shown = np.array([min(c[i], top) if top is not None and lower[i] else c[i] for i in idx])
        ax.plot(b[idx], shown, marker=markers[j % len(markers)], color=color(j), label=policy)
        for k, i in enumerate(idx):
            if lower[i]:
                ax.annotate(f">= {c[i]:g} (SLO met at --rate-max)", (b[i], shown[k]),
                            textcoords="offset points", xytext=(5, -10), fontsize=7,
                            color=color(j))
            elif rejects[i]:
                ax.plot([b[i]], [0], marker="x", color=color(j), markersize=9)
                ax.annotate("rejects requests", (b[i], 0), textcoords="offset points",
                            xytext=(5, 4), fontsize=7, color=color(j))
        if "replicas" in cap:
            for i in idx:
                r = cap["replicas"][i]
                if math.isfinite(r) and r > 0:
                    ax.annotate(f"{int(r)} repl.", (b[i], c[i]), textcoords="offset points",
                                xytext=(5, 4), fontsize=7, color=color(j))
    ax.set_xscale("log", base=2)
    ax.margins(x=0.08)
    budgets = np.unique(b[ok])
    ax.set_xticks(budgets)
    ax.set_xticklabels([short_tokens(v) for v in budgets])
    ax.minorticks_off()
    ax.set_ylim(bottom=0, top=top)
    ax.set_xlabel("max_num_batched_tokens (tokens, log2 scale)")
    ax.set_ylabel("capacity (req/s)")
    ax.set_title(f"{stem}: highest request rate meeting the SLO" + (f" ({slo})" if slo else ""))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    save(fig, outdir, name, written)


LOADERS = {"results": load_results, "sweep": load_sweep, "capacity": load_capacity}
PLOTTERS = {"results": plot_results, "sweep": plot_sweep, "capacity": plot_capacity}


# ---------------------------------------------------------------------------------------------
# Fake example files (hidden option --write-fake-examples DIR, for scripts/test-plots --fake)


def _fixed(strings):
    """Fixed-length byte strings, as servesim's writers store them."""
    width = max([1] + [len(s.encode()) for s in strings])
    return np.array([s.encode() for s in strings], dtype=f"S{width}")


def _write_group(parent, name, cols):
    g = parent.create_group(name)
    for k, v in cols.items():
        if isinstance(v, list):  # string column
            g.create_dataset(k, data=_fixed(v))
        else:
            g.create_dataset(k, data=np.asarray(v))
    return g


def write_fake_examples(outdir):
    """Writes small files of the three layouts (and edge cases) into OUTDIR; returns names."""
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(7)
    names = []

    def results_file(fname, runs, period_s=60.0):
        with h5py.File(os.path.join(outdir, fname), "w") as f:
            f.attrs["magic"] = np.bytes_(b"servesim-results")
            f.attrs["version"] = np.int64(1)
            f.attrs["runs"] = np.bytes_("\n".join(r[0] for r in runs).encode())
            f.attrs["period_s"] = float(period_s)
            for rname, summary, req, win, itl, steps in runs:
                g = f.create_group(f"runs/{rname}")
                g.attrs["label"] = rname  # variable-length str: the reader accepts both
                g.attrs["summary"] = np.bytes_(json.dumps(summary).encode())
                _write_group(g, "requests", req)
                _write_group(g, "windows", win)
                _write_group(g, "itl", itl)
                if steps is not None:
                    _write_group(g, "steps", steps)
        names.append(fname)

    def fake_run(n, ttft_scale, itl_ms, span_s, period_s, otps_ratio, steps=True):
        arrival = np.sort(rng.uniform(0, span_s, n))
        status = np.where(rng.uniform(size=n) < 0.03, 1, 0).astype(np.int8)
        out = rng.integers(1, 400, n)
        inp = rng.integers(50, 4000, n)
        ttft = rng.lognormal(math.log(ttft_scale), 0.8, n)
        e2e = ttft + out * itl_ms
        ttft[status > 0] = math.nan
        e2e[status > 0] = math.nan
        req = {
            "id": np.arange(n, dtype=np.int64), "arrival_s": arrival,
            "input_tokens": inp.astype(np.int64), "output_tokens": out.astype(np.int64),
            "first_token_s": arrival + ttft / 1e3, "finish_s": arrival + e2e / 1e3,
            "ttft_ms": ttft, "e2e_ms": e2e,
            "tpot_ms": np.where(out > 1, (e2e - ttft) / np.maximum(out - 1, 1), math.nan),
            "otps": np.where(out > 1, out / ((e2e - ttft) / 1e3), math.nan),
            "max_itl_ms": ttft * 0 + itl_ms * 5, "queue_ms": ttft * 0.3,
            "preemptions": np.zeros(n, dtype=np.int64), "status": status,
        }
        nwin = int(math.ceil(span_s / period_s))
        starts = np.arange(nwin) * period_s
        p50 = ttft_scale * (1 + 0.5 * np.sin(np.arange(nwin)))
        otps = otps_ratio * (1 - 0.3 * (np.arange(nwin) % 4 == 2))
        completions = np.full(nwin, n // max(nwin, 1), dtype=np.int64)
        if nwin > 3:  # a window without completions: NaN statistics
            completions[3] = 0
            p50[3] = otps[3] = math.nan
        win = {
            "start_s": starts, "end_s": starts + period_s,
            "arrivals": np.full(nwin, n // max(nwin, 1), dtype=np.int64),
            "completions": completions,
            "ttft_ms_p50": p50, "ttft_ms_p95": p50 * 3, "e2e_ms_p50": p50 + 5000,
            "e2e_ms_p95": p50 * 3 + 9000, "output_tokens_p50": np.full(nwin, 200.0),
            "output_tokens_p95": np.full(nwin, 380.0), "otps": otps,
            "input_tokens_p50": np.full(nwin, 1000.0), "queue_ms_p50": p50 * 0.3,
        }
        # Log buckets with ratio 1 + 2^-8 around ITL_MS; only non-empty ones plus an overflow.
        k = np.arange(-400, 900)
        upper = itl_ms * (1 + 2.0 ** -8) ** k
        gaps = np.concatenate([rng.lognormal(math.log(itl_ms), 0.05, 5000),
                               rng.lognormal(math.log(itl_ms * 8), 0.3, 60)])
        count = np.bincount(np.clip(np.searchsorted(upper, gaps), 0, len(upper) - 1),
                            minlength=len(upper)).astype(np.int64)
        keep = count > 0
        itl = {"upper_ms": np.r_[upper[keep], math.inf], "count": np.r_[count[keep], 0]}
        st = None
        if steps:
            m = 50
            st = {"start_s": np.linspace(0, span_s, m), "duration_s": np.full(m, 0.02),
                  "prefill_tokens": np.full(m, 512, dtype=np.int64),
                  "decode_tokens": np.full(m, 64, dtype=np.int64),
                  "batch_size": np.full(m, 64, dtype=np.int64),
                  "kv_blocks_used": np.full(m, 1000, dtype=np.int64),
                  "flops": np.full(m, 1e13), "bytes": np.full(m, 2e10)}
        return req, win, itl, st

    span = 600.0
    summ = lambda t, o: {"ttft_ms": {"p50": t}, "otps": {"p50": o, "p50_ratio": o},  # noqa: E731
                         "otps_p50_ratio": o}
    results_file("results.h5", [
        ("vllm-v0:131072", summ(50, 34.0), *fake_run(400, 50, 20, span, 60, 34.0)),
        ("chunked:512", summ(180, 44.0), *fake_run(400, 180, 23, span, 60, 44.0, steps=False)),
    ])
    # One run, one window, one request (single points everywhere); summary without a ratio.
    results_file("single_results.h5", [
        ("chunked:2048", {"ttft_ms": {"p50": 60}},
         *fake_run(1, 60, 18, 10, 300, 40.0, steps=False)),
    ], period_s=300)
    empty_req = {c: np.empty(0) for c in ("id", "arrival_s", "ttft_ms")}
    empty_req["status"] = np.empty(0, dtype=np.int8)
    results_file("empty_results.h5", [
        ("chunked:512", {}, empty_req,
         {c: np.empty(0) for c in WINDOW_COLS},
         {"upper_ms": np.empty(0), "count": np.empty(0, dtype=np.int64)}, None),
    ])

    def sweep_file(fname, rows, grid):
        with h5py.File(os.path.join(outdir, fname), "w") as f:
            f.attrs["magic"] = np.bytes_(b"servesim-sweep")
            f.attrs["version"] = np.int64(1)
            f.attrs["grid"] = np.bytes_(json.dumps({"fixed": [], "axes": grid}).encode())
            f.attrs["points_total"] = np.int64(len(rows))
            cols = {"point": np.arange(len(rows), dtype=np.int64)}
            for flag, _ in grid:
                cols[flag] = [str(r[flag]) for r in rows]
            cols["label"] = [f"{r['policy']}:{r['budget']}" for r in rows]
            cols["policy"] = [r["policy"] for r in rows]
            cols["max_num_batched_tokens"] = np.array([r["budget"] for r in rows], dtype=np.int64)
            cols["request_rate"] = np.array([r["rate"] for r in rows], dtype=float)
            cols["gpu"] = [r.get("gpu", "h100-sxm") for r in rows]
            cols["model"] = ["llama-3.1-8b" for _ in rows]
            cols["tp"] = np.ones(len(rows), dtype=np.int64)
            for m in ("completed", "rejected", "preemptions"):
                cols[m] = np.array([r.get(m, 0.0) for r in rows], dtype=float)
            for metric in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms", "queue_ms", "otps"):
                for s in ("mean", "p50", "p90", "p95", "p99", "max"):
                    cols[f"{metric}_{s}"] = np.array([r[metric] * (1 + 0.2 * ("p9" in s))
                                                      for r in rows], dtype=float)
            for m in ("otps_p50_ratio", "requests_per_s", "output_tokens_per_s",
                      "total_tokens_per_s", "busy_fraction", "mfu", "mbu", "kv_usage_mean",
                      "kv_usage_max", "makespan_s", "steps"):
                cols[m] = np.array([1.0 for _ in rows])
            _write_group(f, "points", cols)
        names.append(fname)

    rows = []
    for policy in ("chunked", "sarathi"):
        for rate in (5.0, 20.0):
            for budget in (256, 512, 1024, 2048):
                ttft = (30 if policy == "chunked" else 40) * 2048 / budget * (rate / 5) ** 1.5
                itl = 15 + budget / 40 * (rate / 5)
                if policy == "sarathi" and rate == 20 and budget == 256:
                    ttft = itl = math.nan  # nothing completed
                rows.append({"policy": policy, "rate": rate, "budget": budget, "ttft_ms": ttft,
                             "itl_ms": itl, "tpot_ms": itl, "e2e_ms": ttft + 5000,
                             "queue_ms": ttft / 2, "otps": 1000 / itl,
                             "scheduler": f"{policy}", "request-rate": f"{rate:g}",
                             "max-num-batched-tokens": str(budget)})
    grid = [["scheduler", ["chunked", "sarathi"]], ["request-rate", ["5", "20"]],
            ["max-num-batched-tokens", ["256", "512", "1024", "2048"]], ["gpu", ["h100-sxm"]]]
    for r in rows:
        r["gpu"] = "h100-sxm"
    sweep_file("sweep.h5", rows, grid)
    sweep_file("single_sweep.h5", rows[:1], grid[:1])
    sweep_file("empty_sweep.h5", [], grid)

    def capacity_file(fname, rows):
        with h5py.File(os.path.join(outdir, fname), "w") as f:
            f.attrs["magic"] = np.bytes_(b"servesim-capacity")
            f.attrs["version"] = np.int64(1)
            f.attrs["slo"] = "ttft_p50_ms=2000"  # variable-length str: the reader accepts both
            cols = {
                "label": [f"{p}:{b}" for p, b, _, _ in rows],
                "policy": [p for p, _, _, _ in rows],
                "max_num_batched_tokens": np.array([b for _, b, _, _ in rows], dtype=np.int64),
                "capacity_req_s": np.array([c for _, _, c, _ in rows], dtype=float),
                "replicas": np.array([r for _, _, _, r in rows], dtype=np.int64),
                "iterations": np.full(len(rows), 12, dtype=np.int64),
                "ttft_ms_p50": np.array([1900.0 for _ in rows]),
                "itl_ms_p99": np.array([40.0 for _ in rows]),
            }
            _write_group(f, "capacity", cols)
        names.append(fname)

    cap_rows = [("chunked", b, 6 + 2 * math.log2(b / 256), 3) for b in (256, 512, 1024, 2048, 4096)]
    cap_rows.append(("chunked", 8192, math.nan, 0))  # no capacity found
    cap_rows.append(("vllm-v0", 131072, 9.5, 2))
    capacity_file("capacity.h5", cap_rows)
    capacity_file("single_capacity.h5", cap_rows[-1:])
    capacity_file("empty_capacity.h5", [])

    # A results file whose run lacks its itl group: an error, exit 2.
    with h5py.File(os.path.join(outdir, "broken_results.h5"), "w") as f:
        f.attrs["magic"] = np.bytes_(b"servesim-results")
        f.attrs["version"] = np.int64(1)
        f.attrs["runs"] = np.bytes_(b"chunked:512")
        g = f.create_group("runs/chunked:512")
        _write_group(g, "requests", {"ttft_ms": np.ones(2), "status": np.zeros(2, np.int8)})
        _write_group(g, "windows", {c: np.ones(1) for c in WINDOW_COLS})
    names.append("broken_results.h5")
    with h5py.File(os.path.join(outdir, "unknown.h5"), "w") as f:
        f.attrs["magic"] = np.bytes_(b"something-else")
    names.append("unknown.h5")
    with open(os.path.join(outdir, "notes.txt"), "w") as f:
        f.write("not an HDF5 file\n")
    names.append("notes.txt")
    return names


# ---------------------------------------------------------------------------------------------


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="plot.py", description="Plots servesim HDF5 results, sweep and capacity files as PNGs.")
    p.add_argument("files", nargs="*", metavar="FILE", help="servesim .h5 output files")
    p.add_argument("-o", "--outdir", metavar="OUTDIR", help="directory for the PNGs (created)")
    p.add_argument("--alarm-fraction", type=float, default=0.8,
                   help="alarm threshold as a fraction of the baseline OTPS (default 0.8)")
    p.add_argument("--baseline-otps", type=float, default=None, metavar="X",
                   help="baseline OTPS in tokens/s (default: the first run's summary "
                        "otps_p50_ratio)")
    p.add_argument("--write-fake-examples", metavar="DIR", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.write_fake_examples:
        for name in write_fake_examples(args.write_fake_examples):
            print(os.path.join(args.write_fake_examples, name))
        return 0
    if not args.files:
        p.error("no input FILE given")
    if not args.outdir:
        p.error("-o OUTDIR is required")
    if not math.isfinite(args.alarm_fraction) or args.alarm_fraction <= 0:
        p.error("--alarm-fraction must be a positive number")
    if args.baseline_otps is not None and not (math.isfinite(args.baseline_otps)
                                               and args.baseline_otps > 0):
        p.error("--baseline-otps must be a positive number")

    # Read every file completely before writing anything: a bad file leaves no PNG behind.
    loaded, stems = [], {}
    for path in args.files:
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem in stems and stems[stem] != os.path.realpath(path):
            print(f"{PROG}: {path}: has the same name stem {stem!r} as {stems[stem]}; "
                  "their PNGs would overwrite each other", file=sys.stderr)
            return 2
        stems[stem] = os.path.realpath(path)
        kind = "servesim"
        try:
            f, kind = open_checked(path)
            with f:
                data = LOADERS[kind](f)
        except InputError as e:
            print(f"{PROG}: {path}: {e}", file=sys.stderr)
            return 2
        except (KeyError, OSError, ValueError, TypeError) as e:
            print(f"{PROG}: {path}: malformed {kind} file ({e.__class__.__name__}: {e})",
                  file=sys.stderr)
            return 2
        loaded.append((path, stem, kind, data))

    try:
        os.makedirs(args.outdir, exist_ok=True)
    except OSError as e:
        print(f"{PROG}: {args.outdir}: cannot create the output directory ({e.strerror})",
              file=sys.stderr)
        return 2
    for path, stem, kind, data in loaded:
        written = []
        try:
            PLOTTERS[kind](path, stem, data, args, args.outdir, written)
        finally:
            for line in written:
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
