#!/usr/bin/python3
"""Plots servesim's HDF5 output files as PNGs.

    scripts/plot.py FILE [FILE...] -o OUTDIR [--baseline BASE.h5 [--baseline-run NAME]]
                    [--current-run NAME] [--alarm-fraction 0.8] [--baseline-otps X]
                    [--self-threshold] [--together [NAME]] [--max-rejected-share 0.01]
                    [--describe JSON]

Each FILE's kind comes from its root attribute `magic` (layouts: docs/manual/run-and-compare.md, docs/manual/sweeps.md and analysis/results.hpp):
  servesim-results   (run|compare --out)  STEM_ttft_cdf.png, STEM_itl_cdf.png, STEM_timeseries.png,
                                          and with --baseline STEM_vs_BASESTEM_otps.png
  servesim-sweep     (sweep --out)        STEM_frontier.png
  servesim-capacity  (capacity --out)     STEM_capacity.png
With --together [NAME] (NAME defaults to "together") all sweep files are drawn on one chart,
NAME_frontier.png, and all capacity files on another, NAME_capacity.png.
STEM is the file name without its extension. Every PNG written is printed, one path a line. A plot
with nothing to draw is skipped with a message on stderr. An unreadable file, an unknown kind or a
missing dataset is one error line naming the file, exit status 2; every file is read before any
PNG is written, so nothing is written then.

Points that reject more than --max-rejected-share of their requests, or whose run is overloaded
(the queue never drains), are drawn hollow (rejections) or crossed (overload), named in the legend
and never marked best. The OTPS alarm threshold is --alarm-fraction x the BASELINE's p50 OTPS,
computed from its requests exactly as `servesim diagnose` does; a file alone gets no threshold
unless --baseline-otps X or --self-threshold (labelled self-referenced) asks for one.
--describe JSON writes what each PNG shows (titles, legend entries, best and flagged points, the
threshold, anything clipped) for scripts and tests.
Output is deterministic: no timestamps or version strings in the PNGs.

Needs Debian 12's python3-matplotlib and python3-h5py (scripts/install-deps installs them).
"""

import argparse
import json
import math
import os
import sys
import textwrap

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

try:
    import h5py  # noqa: E402
except ImportError:  # pragma: no cover
    sys.exit("plot.py: needs h5py (Debian: python3-h5py; run scripts/install-deps)")

PROG = "plot.py"
KINDS = {"servesim-results": "results", "servesim-sweep": "sweep", "servesim-capacity": "capacity"}
SUPPORTED_VERSION = 1
DPI = 100
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
STYLES = ["-", "--", ":", "-."]
LEGEND_MAX = 24  # legend entries, all kinds together; beyond, "+K more" (the CSV has them all)

# What each PNG shows, for --describe (keyed by the PNG's file name).
DESCRIBE = {}


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


def attr_json(obj, name):
    """A JSON attribute as a dict ({} when missing); InputError when it is not JSON."""
    raw = attr_text(obj, name)
    if not raw:
        return {}
    try:
        v = json.loads(raw)
    except ValueError:
        raise InputError(f"attribute {obj.name}.{name} is not JSON") from None
    return v if isinstance(v, dict) else {}


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
# Classification: which points are clean enough to be compared, and statistics over seeds


def column(cols, name, n, default=math.nan):
    """Column NAME as floats, or N copies of DEFAULT when the file has no such column (older
    files) or it is a text column."""
    v = cols.get(name)
    if v is None or v.dtype == object:
        return np.full(n, default, dtype=float)
    return np.asarray(v, dtype=float)


def rejected_shares(cols, n):
    """rejected / (completed + rejected) per row: the `rejected_share` column where it has a
    value, else derived from `rejected` and `completed`; NaN when unknown."""
    share = column(cols, "rejected_share", n)
    rej, done = column(cols, "rejected", n), column(cols, "completed", n)
    with np.errstate(invalid="ignore", divide="ignore"):
        derived = np.where(rej + done > 0, rej / (rej + done), math.nan)
    return np.where(np.isfinite(share), share, derived)


def overloaded_flags(cols, n):
    """The `overloaded` column (1.0 or 0.0) as booleans; missing or NaN counts as not
    overloaded."""
    v = column(cols, "overloaded", n, default=0.0)
    return np.isfinite(v) & (v > 0.5)


def classify(cols, n, max_share):
    """(rejected share, rejection-heavy, overloaded) per row. A row is rejection-heavy when its
    share exceeds MAX_SHARE, or when capacity's note says it rejects requests at any rate."""
    share = rejected_shares(cols, n)
    heavy = np.isfinite(share) & (share > max_share)
    if "note" in cols and cols["note"].dtype == object:
        heavy |= np.array([str(t).startswith("rejects") for t in cols["note"]], dtype=bool)
    return share, heavy, overloaded_flags(cols, n)


# Student t quantiles t(0.975, df) for df = 1..30, then 40, 60, 120 and infinity.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
_T975_TAIL = [(30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (math.inf, 1.960)]


def t975(df):
    """The two-sided 95% Student t quantile for DF degrees of freedom (table, interpolated in
    1/df beyond 30)."""
    if df <= len(_T975):
        return _T975[int(df) - 1]
    for (d0, t0), (d1, t1) in zip(_T975_TAIL, _T975_TAIL[1:]):
        if df <= d1:
            u0, u1, u = 1 / d0, (0 if d1 == math.inf else 1 / d1), 1 / df
            return t0 + (t1 - t0) * (u0 - u) / (u0 - u1)
    return 1.960


def mean_ci(values):
    """(mean, half-width of the 95% Student t confidence interval) of the finite VALUES; the
    half-width is 0 for a single value and NaN for none."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan
    if v.size == 1:
        return float(v[0]), 0.0
    return float(v.mean()), float(t975(v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def cloudwatch_otps(requests):
    """OTPS the CloudWatch way over the completed requests (TTFT and E2E finite), as servesim
    diagnose computes it (analysis/diagnose_stats.cpp, analysis/windows.cpp): p50(output tokens)
    / (p50(E2E) - p50(TTFT)) x 1000, numpy's linear percentiles; None when undefined."""
    if "e2e_ms" not in requests or "output_tokens" not in requests:
        return None
    ttft, e2e, out = requests["ttft_ms"], requests["e2e_ms"], requests["output_tokens"]
    done = np.isfinite(ttft) & np.isfinite(e2e)
    if not done.any():
        return None
    decode = np.percentile(e2e[done], 50) - np.percentile(ttft[done], 50)
    toks = finite(out[done])
    if not decode > 0 or toks.size == 0:
        return None
    return float(np.percentile(toks, 50) / decode * 1e3)


# ---------------------------------------------------------------------------------------------
# Model and GPU for titles


def few(names, what, limit=3):
    """One name, or "N whats (a, b, c, ...)"."""
    names = list(names)
    if len(names) == 1:
        return names[0]
    shown = ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
    return f"{len(names)} {what} ({shown})"


def tp_text(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{int(f)}" if math.isfinite(f) and f == int(f) else f"{v}"


def hardware_text(triples):
    """'MODEL on GPU, TP n' from (model, gpu, tp) triples ('' or None when unknown); several
    models or GPUs are counted and named."""
    models = sorted({str(m) for m, _, _ in triples if m not in (None, "")})
    gpus = sorted({str(g) for _, g, _ in triples if g not in (None, "")})
    tps = sorted({tp_text(t) for _, _, t in triples
                  if t not in (None, "") and not (isinstance(t, float) and math.isnan(t))},
                 key=lambda s: (len(s), s))
    if not models and not gpus:
        return "model and GPU not recorded in the file"
    unknown = sum(1 for m, g, _ in triples if m in (None, "") and g in (None, ""))
    s = (few(models, "models") if models else "model not recorded") + " on " + \
        (few(gpus, "GPUs") if gpus else "GPU not recorded")
    if tps:
        s += ", TP " + ", ".join(tps)
    if unknown:
        s += f"; model and GPU not recorded for {unknown} of {len(triples)} (older file)"
    return s


def config_hardware(config):
    """(model, gpu, tp) of a run's config JSON."""
    def name(v):
        if isinstance(v, dict):
            v = v.get("name", "")
        return "" if v is None else str(v)
    return (name(config.get("model")), name(config.get("gpu")),
            config.get("tensor_parallel_size", config.get("tp")))


def table_hardware(cols, rows):
    n = table_len(cols)
    def get(c):
        v = cols.get(c)
        return [("" if v is None else v[i]) for i in rows] if n else []
    return list(zip(get("model"), get("gpu"), get("tp")))


# ---------------------------------------------------------------------------------------------
# Drawing helpers


def color(i, n=10):
    """The i-th of n colours: tab10 while they are distinct, a continuous map beyond."""
    if n <= 10:
        return plt.get_cmap("tab10")(i % 10)
    return plt.get_cmap("viridis")(i / (n - 1) * 0.9)


def new_figure(w, h, rows=1, **kw):
    return plt.subplots(rows, 1, figsize=(w, h), layout="constrained", **kw)


def title_text(fig, lines):
    """Title lines wrapped to the figure's width (constrained layout does not wrap)."""
    width = int(fig.get_size_inches()[0] * 11)
    out = []
    for line in lines:
        if line:
            out.extend(textwrap.wrap(line, width) or [""])
    return "\n".join(out)


def set_title(fig, lines):
    """The figure's title, above everything (a legend beside the axes included)."""
    fig.suptitle(title_text(fig, lines), fontsize="medium")


def plural(n, what):
    return f"{n} {what}" + ("" if n == 1 else "s")


def draw_series(ax, xs, ys, bad, c, ls, marker):
    """A line through XS, YS: solid (style LS) between clean points, faint dots to and between
    flagged ones (BAD); clean points filled, flagged ones hollow. Returns a legend handle."""
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    segs = {False: ([], []), True: ([], [])}
    for k in range(len(xs) - 1):
        sx, sy = segs[bool(bad[k] or bad[k + 1])]
        sx.extend([xs[k], xs[k + 1], math.nan])
        sy.extend([ys[k], ys[k + 1], math.nan])
    if segs[False][0]:
        ax.plot(*segs[False], color=c, linestyle=ls, zorder=3)
    if segs[True][0]:
        ax.plot(*segs[True], color=c, linestyle=(0, (1, 2)), linewidth=1, alpha=0.6, zorder=3)
    good = ~np.asarray(bad, dtype=bool)
    ax.plot(xs[good], ys[good], marker=marker, linestyle="none", color=c, markersize=6, zorder=4)
    ax.plot(xs[~good], ys[~good], marker=marker, linestyle="none", markersize=7,
            markerfacecolor="white", markeredgecolor=c, markeredgewidth=1.5, zorder=4)
    return Line2D([], [], color=c, linestyle=ls, marker=marker, markersize=6)


def legend(ax, entries_handles, entries_labels, inside_max=8, loc="best", title=None,
           always=((), ())):
    """A legend of at most LEGEND_MAX entries ("+K more" beyond) followed by the ALWAYS
    (handles, labels), which are never cut: inside the axes when short, beside them when long.
    Returns the legend."""
    handles, labels = list(entries_handles), list(entries_labels)
    room = max(1, LEGEND_MAX - len(always[1]))
    if len(labels) > room:
        k = len(labels) - (room - 1)
        handles = handles[:room - 1] + [Line2D([], [], linestyle="none")]
        labels = labels[:room - 1] + [f"+{k} more (see the table or CSV)"]
    handles, labels = handles + list(always[0]), labels + list(always[1])
    if len(labels) <= inside_max:
        return ax.legend(handles, labels, loc=loc, fontsize="small", title=title,
                         title_fontsize="small")
    return ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                     fontsize="x-small", borderaxespad=0, title=title, title_fontsize="x-small")


def place_notes(ax, notes):
    """Annotates points with (text, x, y, colour) once the axes' scales and limits are final:
    right of the point, or left of it in the right fifth of the axes, so that no text runs
    beyond the axes; a note that would cover another moves a line up or down."""
    ax.autoscale_view()
    ax.figure.canvas.draw()  # lays the figure out, so that positions are final
    to_axes = ax.transData + ax.transAxes.inverted()
    r = ax.figure.canvas.get_renderer()
    taken, placed = [], set()
    for note, x, y, c in notes:
        fx, fy = to_axes.transform((x, y))
        if (note, round(fx, 3), round(fy, 3)) in placed:  # one note where several coincide
            continue
        placed.add((note, round(fx, 3), round(fy, 3)))
        right = fx > 0.8
        dy0 = -11 if fy > 0.95 else 4
        # Move a note that would cover an earlier one up or down a line, a few times at most.
        for dy in (dy0, dy0 - 9, dy0 + 9, dy0 - 18, dy0 + 18):
            a = ax.annotate(note, (x, y), textcoords="offset points",
                            xytext=(-6 if right else 5, dy), ha="right" if right else "left",
                            fontsize=7, color=c)
            bb = a.get_window_extent(r)
            if not any(bb.overlaps(t) for t in taken):
                break
            a.remove()
        else:
            a = ax.annotate(note, (x, y), textcoords="offset points",
                            xytext=(-6 if right else 5, dy0), ha="right" if right else "left",
                            fontsize=7, color=c)
        taken.append(a.get_window_extent(r))


def _outside(bb, fb, tol=1.0):
    return bb.x0 < fb.x0 - tol or bb.y0 < fb.y0 - tol or bb.x1 > fb.x1 + tol or bb.y1 > fb.y1 + tol


def clipped_artists(fig):
    """Names of the titles, labels, tick labels, annotations and legends that reach beyond the
    figure (they would be cut off in the PNG)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    fb = fig.bbox
    found = []
    for k, ax in enumerate(fig.axes):
        parts = [("title", ax.title), ("x label", ax.xaxis.label), ("y label", ax.yaxis.label),
                 ("x tick labels", ax.xaxis), ("y tick labels", ax.yaxis)]
        parts += [(f"text {t.get_text()!r}", t) for t in ax.texts]
        if ax.get_legend() is not None:
            parts.append(("legend", ax.get_legend()))
        for what, a in parts:
            if not a.get_visible() or (hasattr(a, "get_text") and not a.get_text()):
                continue
            bb = a.get_tightbbox(r) if hasattr(a, "get_tightbbox") else a.get_window_extent(r)
            if bb is not None and _outside(bb, fb):
                found.append(f"axes {k}: {what}")
    for t in fig.texts:
        if t.get_visible() and t.get_text() and _outside(t.get_window_extent(r), fb):
            found.append(f"figure text {t.get_text()!r}")
    return found


def overlapping_notes(fig):
    """Annotations and axes texts that a legend covers."""
    r = fig.canvas.get_renderer()
    found = []
    for k, ax in enumerate(fig.axes):
        legs = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
        for t in ax.texts:
            if not t.get_visible() or not t.get_text():
                continue
            tb = t.get_window_extent(r)
            if any(tb.overlaps(leg.get_window_extent(r)) for leg in legs):
                found.append(f"axes {k}: text {t.get_text()!r} under a legend")
    return found


def legend_texts(fig):
    out = []
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is not None:
            out.extend(t.get_text() for t in leg.get_texts())
    return out


def save(fig, outdir, name, written, info=None):
    """Saves FIG as OUTDIR/NAME and records what it shows for --describe. Nothing may be cut
    off: anything beyond the figure is recorded as clipped and the PNG is then saved with a
    tight bounding box so that it still shows everything."""
    clipped = clipped_artists(fig)
    overlaps = overlapping_notes(fig)
    titles = ([fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) else []) + \
        [ax.get_title() for ax in fig.axes if ax.get_title()]
    d = {"title": "\n".join(titles),
         "legend": legend_texts(fig), "clipped": clipped, "overlaps": overlaps}
    d.update(info or {})
    DESCRIBE[name] = d
    path = os.path.join(outdir, name)
    fig.savefig(path, dpi=DPI, metadata={"Software": None},
                bbox_inches="tight" if clipped else None)
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


def zero_based(ax):
    """A linear y axis from 0, with room above the highest point so no marker is cut."""
    ax.set_ylim(0, ax.get_ylim()[1] * 1.06)


def log_ticks(axis, values):
    """Plain numbers (20, 50, 100) on a log axis, with 2x and 5x labels when it spans few
    decades, instead of bare powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    v = finite(values)
    v = v[v > 0]
    fmt = FuncFormatter(lambda x, _: f"{x:g}")
    axis.set_major_formatter(fmt)
    if v.size and v.max() / v.min() < 1e3:
        axis.set_minor_locator(LogLocator(base=10, subs=(2, 5)))
        axis.set_minor_formatter(fmt)
    else:
        axis.set_minor_formatter(NullFormatter())


def short_tokens(n):
    """A token budget for an annotation: 512, 2K, 128K."""
    n = int(n)
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    return str(n)


def percent(x):
    return f"{x * 100:.3g}%"


def status_handles(n_heavy, n_over, max_share, what="point"):
    """Legend entries that say why some markers are hollow or crossed."""
    hs, ls = [], []
    if n_heavy:
        hs.append(Line2D([], [], marker="o", linestyle="none", markerfacecolor="white",
                         markeredgecolor="gray", markersize=7))
        ls.append(f"hollow: rejects > {percent(max_share)} of requests "
                  f"({plural(n_heavy, what)}); never best")
    if n_over:
        hs.append(Line2D([], [], marker="x", linestyle="none", color="dimgray", markersize=9,
                         markeredgewidth=2))
        ls.append(f"x: overloaded, the queue never drains ({plural(n_over, what)}); never best")
    return hs, ls


BEST_STYLE = {"ttft": dict(color="goldenrod", size=17), "itl": dict(color="mediumvioletred", size=22),
              "capacity": dict(color="goldenrod", size=17)}


def best_handle(kind):
    st = BEST_STYLE[kind]
    return Line2D([], [], marker="o", linestyle="none", markerfacecolor="none",
                  markeredgecolor=st["color"], markeredgewidth=2, markersize=st["size"] * 0.6)


def draw_best(ax, kind, x, y):
    st = BEST_STYLE[kind]
    ax.plot([x], [y], marker="o", linestyle="none", markerfacecolor="none",
            markeredgecolor=st["color"], markeredgewidth=2, markersize=st["size"], zorder=1)


# ---------------------------------------------------------------------------------------------
# Results files

REQUEST_COLS = ("ttft_ms", "status")
REQUEST_OPTIONAL = ("e2e_ms", "output_tokens")
WINDOW_COLS = ("start_s", "end_s", "otps", "ttft_ms_p50", "ttft_ms_p95")
WINDOW_OPTIONAL = ("arrivals",)
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


def summary_overloaded(summary):
    """The summary's `overloaded` object ({"overloaded": true, ...}) as a bool; absent: False."""
    v = summary.get("overloaded")
    if isinstance(v, dict):
        v = v.get("overloaded")
    return bool(v) if isinstance(v, (bool, int, float)) else False


def summary_rejected_share(summary):
    req = summary.get("requests")
    if not isinstance(req, dict):
        return math.nan
    try:
        rej = float(req.get("rejected", math.nan))
        done = float(req.get("completed", math.nan))
    except (TypeError, ValueError):
        return math.nan
    return rej / (rej + done) if rej + done > 0 else math.nan


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
        summary = attr_json(g, "summary")
        config = attr_json(g, "config") or summary.get("config") or {}
        runs.append({
            "name": name,
            "label": attr_text(g, "label") or name,
            "summary": summary,
            "hardware": config_hardware(config if isinstance(config, dict) else {}),
            "overloaded": summary_overloaded(summary),
            "rejected_share": summary_rejected_share(summary),
            "requests": read_table(g, "requests", REQUEST_COLS, REQUEST_OPTIONAL),
            "windows": read_table(g, "windows", WINDOW_COLS, WINDOW_OPTIONAL),
            "itl": read_table(g, "itl", ITL_COLS),
        })
    return runs, attr_number(f, "period_s")


def run_label(r, max_share):
    """A run's legend label, with what makes it not comparable."""
    notes = []
    if r["overloaded"]:
        notes.append("OVERLOADED: queue never drains")
    s = r["rejected_share"]
    if math.isfinite(s) and s > max_share:
        notes.append(f"REJECTS {percent(s)}")
    return r["label"] + (f" [{'; '.join(notes)}]" if notes else "")


def run_flagged(r, max_share):
    s = r["rejected_share"]
    return r["overloaded"] or (math.isfinite(s) and s > max_share)


def runs_title(stem, what, runs):
    return [f"{stem}: {what}", hardware_text([r["hardware"] for r in runs])]


def plot_ttft_cdf(path, stem, runs, args, outdir, written):
    name = f"{stem}_ttft_cdf.png"
    fig, ax = new_figure(8, 5)
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
                linestyle=":" if run_flagged(r, args.max_rejected_share) else "-",
                label=f"{run_label(r, args.max_rejected_share)} (n={ttft.size})")
        drawn += 1
    finish_cdf(fig, ax, path, name, drawn, notes, "no run has a finished request",
               "time to first token (ms, log scale)", "fraction of finished requests",
               runs_title(stem, "TTFT distribution", runs), outdir, written)


def finish_cdf(fig, ax, path, name, drawn, notes, empty, xlabel, ylabel, title, outdir, written):
    """Labels and saves a CDF figure, or skips it with a message when nothing was drawn."""
    if not drawn:
        plt.close(fig)
        warn(path, f"nothing to draw in {name}: {empty}; skipped")
        return
    for note in notes:
        warn(path, note)
    ax.set_xscale("log")
    log_ticks(ax.xaxis, np.concatenate([np.asarray(l.get_xdata(), dtype=float)
                                        for l in ax.lines] or [np.empty(0)]))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    set_title(fig, title)
    ax.grid(True, which="both", alpha=0.3)
    h, l = ax.get_legend_handles_labels()
    legend(ax, h, l, loc="lower right")
    save(fig, outdir, name, written, {"kind": "cdf"})


def plot_itl_cdf(path, stem, runs, args, outdir, written):
    name = f"{stem}_itl_cdf.png"
    fig, ax = new_figure(8, 5)
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
                linestyle=":" if run_flagged(r, args.max_rejected_share) else "-",
                label=f"{run_label(r, args.max_rejected_share)} (n={int(total)} gaps)")
        drawn += 1
    finish_cdf(fig, ax, path, name, drawn, notes, "every ITL histogram is empty",
               "inter-token latency (ms, log scale)", "fraction of inter-token gaps",
               runs_title(stem, "ITL distribution (from the histogram's bucket bounds)", runs),
               outdir, written)


def alarm_line(ax, threshold, label):
    ax.axhline(threshold, color="crimson", linestyle=":", linewidth=1.5, label=label)
    ax.set_ylim(top=max(ax.get_ylim()[1], threshold * 1.15))


def threshold_for(runs, args, baseline):
    """(threshold, legend label, source) of a results file's timeseries: the --baseline file's
    CloudWatch p50 OTPS, else --baseline-otps, else (--self-threshold) the file's own first run,
    labelled self-referenced; (None, None, reason) when none applies."""
    f = args.alarm_fraction
    if baseline is not None:
        b = baseline["otps"]
        if b is None:
            return None, None, "the baseline has no OTPS (no completed request with decode time)"
        return f * b, (f"alarm: {f:g} x {b:.1f} (baseline {baseline['stem']} {baseline['run']}"
                       f" p50 OTPS, as servesim diagnose) = {f * b:.1f} tok/s"), "baseline"
    if args.baseline_otps is not None:
        b = args.baseline_otps
        return f * b, f"alarm: {f:g} x {b:.1f} (--baseline-otps) = {f * b:.1f} tok/s", \
            "--baseline-otps"
    if args.self_threshold and runs:
        b = cloudwatch_otps(runs[0]["requests"]) or summary_otps_ratio(runs[0]["summary"])
        if b is None:
            return None, None, "the first run has no OTPS"
        return f * b, (f"SELF-REFERENCED alarm: {f:g} x {b:.1f} ({runs[0]['label']}'s own p50 "
                       f"OTPS, not a baseline) = {f * b:.1f} tok/s"), "self"
    return None, None, "none asked for"


def plot_timeseries(path, stem, runs, period_s, args, baseline, outdir, written):
    name = f"{stem}_timeseries.png"
    fig, (ax_otps, ax_ttft) = new_figure(9, 7, rows=2, sharex=True)
    drawn_otps = drawn_ttft = 0
    all_ttft, span = [], []
    for i, r in enumerate(runs):
        w = r["windows"]
        if table_len(w) == 0:
            continue
        t = (w["start_s"] + w["end_s"]) / 120.0  # each window's middle, in minutes
        span.extend(finite(w["start_s"] / 60.0))
        span.extend(finite(w["end_s"] / 60.0))
        c = color(i)
        ls = ":" if run_flagged(r, args.max_rejected_share) else "-"
        if np.isfinite(w["otps"]).any():
            ax_otps.plot(t, w["otps"], marker="o", markersize=3, color=c, linestyle=ls,
                         label=run_label(r, args.max_rejected_share))
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

    threshold, label, source = threshold_for(runs, args, baseline)
    if threshold is not None:
        alarm_line(ax_otps, threshold, label)
    elif source != "none asked for":
        warn(path, f"{name}: {source}; no alarm line")
    else:
        ax_otps.text(0.99, 0.02, "no alarm threshold: pass --baseline BASE.h5 (as servesim "
                     "diagnose) or --baseline-otps X", transform=ax_otps.transAxes, ha="right",
                     va="bottom", fontsize="x-small", color="gray")

    period = f"{period_s:g} s windows" if math.isfinite(period_s) and period_s > 0 else "windows"
    set_title(fig, runs_title(stem, f"per-window metrics ({period})", runs))
    linear_panel(ax_otps, "OTPS, CloudWatch (output tokens/s)")
    if not drawn_otps:
        ax_otps.text(0.5, 0.5, "no window has an OTPS", transform=ax_otps.transAxes,
                     ha="center", va="center", color="gray")
    finish_ttft_panel(ax_ttft, runs, drawn_otps, drawn_ttft, all_ttft, span)
    save(fig, outdir, name, written, {"kind": "timeseries", "threshold_otps": threshold,
                                      "threshold_source": source if threshold else None})


def linear_panel(ax, ylabel):
    """A panel's y label, a linear axis from 0, a grid, and its legend when it has entries."""
    ax.set_ylabel(ylabel)
    zero_based(ax)
    ax.grid(True, alpha=0.3)
    h, l = ax.get_legend_handles_labels()
    if h:
        legend(ax, h, l)


def autoscale_of(r):
    """The autoscaler summary of a run's summary JSON (fleet.autoscale), or None."""
    fleet = r["summary"].get("fleet") if isinstance(r["summary"], dict) else None
    a = fleet.get("autoscale") if isinstance(fleet, dict) else None
    return a if isinstance(a, dict) and a.get("timeline") else None


def plot_fleet_size(path, stem, runs, period_s, outdir, written):
    """Autoscaled runs: the arrival rate per window above, the replicas serving, starting and
    draining below (step lines, as the autoscaler changed them)."""
    scaled = [(i, r, autoscale_of(r)) for i, r in enumerate(runs) if autoscale_of(r)]
    if not scaled:
        return
    name = f"{stem}_fleet_size.png"
    fig, (ax_rate, ax_n) = new_figure(9, 6, rows=2, sharex=True)
    for i, r, a in scaled:
        c = color(i)
        w = r["windows"]
        if table_len(w) and "arrivals" in w and math.isfinite(period_s) and period_s > 0:
            t = (w["start_s"] + w["end_s"]) / 120.0
            ax_rate.plot(t, w["arrivals"] / period_s, color=c, marker="o", markersize=2,
                         label=r["label"])
        tl = a["timeline"]
        t = np.array([e["time_s"] for e in tl], dtype=float) / 60.0
        ready = np.array([e["ready"] for e in tl], dtype=float)
        starting = np.array([e["starting"] for e in tl], dtype=float)
        draining = np.array([e["draining"] for e in tl], dtype=float)
        ax_n.step(t, ready, where="post", color=c, label=f"{r['label']}: serving")
        ax_n.step(t, ready + starting, where="post", color=c, linestyle="--",
                  label=f"{r['label']}: + starting")
        if draining.any():
            ax_n.step(t, ready + starting + draining, where="post", color=c, linestyle=":",
                      label=f"{r['label']}: + draining")
    a0 = scaled[0][2]
    how = ("a schedule" if a0.get("metric") == "schedule"
           else f"{a0.get('metric')} target {a0.get('target'):g} per replica")
    set_title(fig, runs_title(stem, f"autoscaled fleet ({how}; "
                              f"{a0.get('replica_hours', math.nan):.2f} replica-hours)",
                              [r for _, r, _ in scaled]))
    linear_panel(ax_rate, "arrivals (requests/s per window)")
    linear_panel(ax_n, "replicas")
    ax_n.set_xlabel("time (minutes)")
    save(fig, outdir, name, written, {"kind": "fleet_size",
                                      "replica_hours": a0.get("replica_hours"),
                                      "peak_replicas": a0.get("peak_replicas")})


def finish_ttft_panel(ax_ttft, runs, drawn_otps, drawn_ttft, all_ttft, span, labels=None):
    if spans_decade(all_ttft):
        ax_ttft.set_yscale("log")
        log_ticks(ax_ttft.yaxis, all_ttft)
        ax_ttft.set_ylabel("TTFT per window (ms, log scale)")
    else:
        ax_ttft.set_ylabel("TTFT per window (ms)")
        zero_based(ax_ttft)
    ax_ttft.grid(True, which="both", alpha=0.3)
    if drawn_ttft:
        # Style legend (solid p50, dashed p95); colours are the runs of the panel above.
        ax_ttft.plot([], [], color="black", linestyle="-", marker="o", markersize=3, label="p50")
        ax_ttft.plot([], [], color="black", linestyle="--", marker="^", markersize=3, label="p95")
        if not drawn_otps:  # the run legend would otherwise be missing
            for i, r in enumerate(runs):
                ax_ttft.plot([], [], color=color(i), label=(labels or {}).get(i, r["label"]))
        h, l = ax_ttft.get_legend_handles_labels()
        legend(ax_ttft, h, l)
    else:
        ax_ttft.text(0.5, 0.5, "no window has a TTFT", transform=ax_ttft.transAxes,
                     ha="center", va="center", color="gray")
    if len(span) and max(span) > min(span):  # show whole windows, even a single one
        ax_ttft.set_xlim(min(span), max(span))
    ax_ttft.set_xlabel("time (minutes; each point at the middle of its window)")


def plot_vs_baseline(path, stem, runs, period_s, args, baseline, outdir, written):
    """The baseline's and each current run's OTPS per window on one chart, with the alarm
    threshold of servesim diagnose: alarm_fraction x the baseline's whole-log p50 OTPS."""
    name = f"{stem}_vs_{baseline['stem']}_otps.png"
    base = baseline["runs"][0]
    beside = len(runs) > 2  # a long legend goes beside the axes, on a wider figure
    fig, (ax, ax_ttft) = new_figure(13 if beside else 9, 7.5, rows=2, sharex=True)
    series = [(base, "black", "--", f"baseline {baseline['stem']}: "
               f"{run_label(base, args.max_rejected_share)}")]
    for i, r in enumerate(runs):
        series.append((r, color(i), "-", f"current {stem}: {run_label(r, args.max_rejected_share)}"))
    threshold, label, _ = threshold_for(runs, args, baseline)
    drawn = breaching = 0
    span, all_ttft = [], []
    for r, c, ls, lab in series:
        w = r["windows"]
        if table_len(w) == 0:
            continue
        t = (w["start_s"] + w["end_s"]) / 120.0
        span.extend(finite(w["start_s"] / 60.0))
        span.extend(finite(w["end_s"] / 60.0))
        if np.isfinite(w["otps"]).any():
            ax.plot(t, w["otps"], marker="o", markersize=3, color=c, linestyle=ls, label=lab)
            drawn += 1
        ax_ttft.plot(t, w["ttft_ms_p50"], marker="o", markersize=3, color=c, linestyle=ls)
        all_ttft.extend(finite(w["ttft_ms_p50"]))
        if threshold is not None and r is not base:
            br = np.isfinite(w["otps"]) & (w["otps"] < threshold)
            breaching += int(br.sum())
            ax.plot(t[br], w["otps"][br], linestyle="none", marker="v", markersize=8,
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
    period = f"{period_s:g} s windows" if math.isfinite(period_s) and period_s > 0 else "windows"
    bp = baseline["period_s"]
    if math.isfinite(bp) and bp != period_s:
        period = f"current: {period}, baseline: {bp:g} s windows"
    set_title(fig, [
        f"{stem} vs baseline {baseline['stem']}: OTPS per window ({period})",
        f"baseline: {hardware_text([base['hardware']])}; current: "
        f"{hardware_text([r['hardware'] for r in runs])}"])
    ax.set_ylabel("OTPS, CloudWatch (output tokens/s)")
    zero_based(ax)
    ax.grid(True, alpha=0.3)
    h, l = ax.get_legend_handles_labels()
    legend(ax, h, l, inside_max=0 if beside else 6)
    if spans_decade(all_ttft):
        ax_ttft.set_yscale("log")
        log_ticks(ax_ttft.yaxis, all_ttft)
    else:
        zero_based(ax_ttft)
    ax_ttft.set_ylabel("TTFT p50 per window (ms" + (", log)" if spans_decade(all_ttft) else ")"))
    ax_ttft.grid(True, which="both", alpha=0.3)
    if len(span) and max(span) > min(span):
        ax_ttft.set_xlim(min(span), max(span))
    ax_ttft.set_xlabel("time (minutes; each point at the middle of its window)")
    save(fig, outdir, name, written, {
        "kind": "vs_baseline", "threshold_otps": threshold, "baseline_otps_p50": baseline["otps"],
        "alarm_fraction": args.alarm_fraction, "baseline": f"{baseline['path']}:{base['name']}",
        "current_runs": [r["name"] for r in runs], "breaching_windows": breaching})


def plot_results(path, stem, data, args, outdir, written, baseline=None):
    runs, period_s = data
    if args.current_run is not None:
        runs = [r for r in runs if r["name"] == args.current_run]
    if not runs:
        warn(path, "the file holds no runs" + (f" named {args.current_run!r}"
                                                if args.current_run else "") + "; nothing to plot")
        return
    plot_ttft_cdf(path, stem, runs, args, outdir, written)
    plot_itl_cdf(path, stem, runs, args, outdir, written)
    plot_timeseries(path, stem, runs, period_s, args, baseline, outdir, written)
    plot_fleet_size(path, stem, runs, period_s, outdir, written)
    if baseline is not None:
        plot_vs_baseline(path, stem, runs, period_s, args, baseline, outdir, written)


def load_baseline(path, run_name):
    """The --baseline results file: one run (named, or the only one, as servesim diagnose picks
    it) and its CloudWatch p50 OTPS from its requests."""
    f, kind = open_checked(path)
    with f:
        if kind != "results":
            raise InputError(f"--baseline needs a results file (run/compare --out), not a {kind} "
                             "file")
        runs, period_s = load_results(f)
    names = [r["name"] for r in runs]
    if run_name is not None:
        runs = [r for r in runs if r["name"] == run_name]
        if not runs:
            raise InputError(f"no run named {run_name!r} (runs: {', '.join(names)})")
    elif len(runs) != 1:
        raise InputError(f"holds {len(runs)} runs; name one with --baseline-run: "
                         f"{', '.join(names)}")
    r = runs[0]
    if "e2e_ms" not in r["requests"] or "output_tokens" not in r["requests"]:
        raise InputError(f"run {r['name']}: the requests table lacks e2e_ms or output_tokens, "
                         "which the baseline OTPS needs")
    return {"path": path, "stem": os.path.splitext(os.path.basename(path))[0], "run": r["name"],
            "runs": runs, "period_s": period_s, "otps": cloudwatch_otps(r["requests"])}


# ---------------------------------------------------------------------------------------------
# Sweep files

SWEEP_COLS = ("policy", "max_num_batched_tokens", "request_rate", "ttft_ms_p50", "itl_ms_p99")
# Columns read when present (older files lack the status columns: tolerated).
SWEEP_OPTIONAL = ("label", "completed", "rejected", "rejected_share", "overloaded", "error")
# Swept flags that the resolved columns already account for (the key is policy, budget, rate).
FLAGS_RESOLVED = {"scheduler", "max-num-batched-tokens", "request-rate", "max_num_batched_tokens",
                  "request_rate", "policy", "label", "point"}
# Resolved columns that tell lines apart when they vary across the points.
EXTRA_RESOLVED = ("gpu", "model", "tp")


def is_replicate(flag):
    """A swept flag whose values are replicates of one configuration: the seed of the workload
    (seed, trace-seed, ...) or a replicate index. Points are grouped over them."""
    f = flag.replace("_", "-")
    return f in ("seed", "replicate", "num-seeds") or f.endswith("-seed")


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
    # A replicate column that the grid does not list (a merged table) is still a replicate.
    extra_names += [c for c in ("seed", "replicate") if c not in extra_names]
    cols = read_table(f, "points", SWEEP_COLS, optional=SWEEP_OPTIONAL + tuple(extra_names))
    return cols, extra_names


def merge_tables(parts):
    """One table from several (stem, cols): the union of the columns, NaN or "" where a file
    lacks one, and a column `file` with each row's file stem."""
    names = []
    for _, cols in parts:
        names += [c for c in cols if c not in names]
    merged = {}
    for c in names:
        text_col = any(c in cols and cols[c].dtype == object for _, cols in parts)
        chunks = []
        for _, cols in parts:
            n = table_len(cols)
            if c in cols:
                v = cols[c]
                chunks.append(np.array([str(x) for x in v], dtype=object) if text_col else v)
            else:
                chunks.append(np.array([""] * n, dtype=object) if text_col
                              else np.full(n, math.nan))
        merged[c] = np.concatenate(chunks) if chunks else np.empty(0)
    merged["file"] = np.array([s for s, cols in parts for _ in range(table_len(cols))],
                              dtype=object)
    return merged


def overload_unknown(parts):
    """A title line naming the files without an `overloaded` column (older servesim), whose
    overloaded points cannot be marked; None when every file has it."""
    old = [s for s, d in parts if "overloaded" not in d[0]]
    if not old:
        return None
    return (f"{', '.join(old)}: no 'overloaded' column (older file), so overloaded "
            "points cannot be marked")


def source_column_needed(parts):
    """Whether rows of different files must be told apart by file name: they must unless each
    file has its own (model, GPU, TP), which the extra columns already show."""
    if len(parts) < 2:
        return False
    seen = []
    for _, cols in parts:
        hw = set(table_hardware(cols, range(table_len(cols))))
        if not hw or hw == {("", "", "")} or any(hw & s for s in seen):
            return True
        seen.append(hw)
    return False


def value_text(v):
    if isinstance(v, float):
        return "n/a" if not math.isfinite(v) else f"{v:g}"
    return str(v)


def sweep_units(pts, ok, extras, heavy, over, share):
    """Points grouped into units, one per configuration (every swept parameter but the
    replicates), and units into lines (the same configuration but the token budget). A unit
    holds the mean and 95% CI of TTFT p50 and ITL p99 over its replicates; it is flagged when
    any of its replicates is."""
    x, y = pts["ttft_ms_p50"], pts["itl_ms_p99"]
    by_unit = {}
    for i in np.nonzero(ok)[0]:
        rate = pts["request_rate"][i]
        key = (str(pts["policy"][i]), rate if math.isfinite(rate) else math.inf,
               tuple(value_text(pts[c][i]) for c in extras))
        b = pts["max_num_batched_tokens"][i]
        by_unit.setdefault((key, b if math.isfinite(b) else math.inf), []).append(int(i))
    units = []
    for (key, b), idx in sorted(by_unit.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        mx, cx = mean_ci(x[idx])
        my, cy = mean_ci(y[idx])
        sh = finite(share[idx])
        units.append({
            "line": key, "policy": key[0], "rate": key[1], "budget": b, "idx": idx,
            "extras": dict(zip(extras, key[2])), "x": mx, "y": my, "xerr": cx, "yerr": cy,
            "n": len(idx), "rejected_share": float(sh.mean()) if sh.size else None,
            "heavy": bool(heavy[idx].any()), "overloaded": int(over[idx].sum()),
            "label": str(pts["label"][idx[0]]) if "label" in pts else
            f"{key[0]}:{short_tokens(b) if math.isfinite(b) else 'n/a'}",
        })
    return units


def unit_text(u):
    rate = f"{u['rate']:g} req/s" if math.isfinite(u["rate"]) else "rate n/a"
    extras = ", ".join(f"{v}" for v in u["extras"].values())
    return f"{u['label']} at {rate}" + (f", {extras}" if extras else "")


def unit_record(u):
    """A unit for --describe."""
    why = (["rejects"] if u["heavy"] else []) + (["overloaded"] if u["overloaded"] else [])
    return {"label": u["label"], "policy": u["policy"],
            "rate": u["rate"] if math.isfinite(u["rate"]) else None,
            "max_num_batched_tokens": u["budget"] if math.isfinite(u["budget"]) else None,
            "extras": u["extras"], "ttft_ms_p50": u["x"], "itl_ms_p99": u["y"], "n": u["n"],
            "rejected_share": u["rejected_share"], "overloaded": u["overloaded"], "why": why}


def best_units(units):
    """The clean units (neither rejection-heavy nor overloaded) with the lowest mean TTFT p50
    and the lowest mean ITL p99; None when no unit is clean."""
    clean = [u for u in units if not u["heavy"] and not u["overloaded"]
             and math.isfinite(u["x"]) and math.isfinite(u["y"])]
    if not clean:
        return None, None
    return min(clean, key=lambda u: u["x"]), min(clean, key=lambda u: u["y"])


def plot_sweep(path, stem, data, args, outdir, written):
    plot_frontier(path, stem, [(stem, data)], args, outdir, written)


def frontier_style(units):
    """Marker per policy, colour per request rate (by value, with a colour bar, beyond 10
    rates) and line style per combination of the other varying parameters."""
    policies = sorted({u["policy"] for u in units})
    rates = sorted({u["rate"] for u in units})
    extras_keys = sorted({u["line"][2] for u in units})
    fin = [r for r in rates if math.isfinite(r)]
    st = {"policies": policies, "rates": rates, "extras_keys": extras_keys, "rate_map": None,
          "marker": {p: MARKERS[i % len(MARKERS)] for i, p in enumerate(policies)},
          "style": {e: STYLES[i % len(STYLES)] for i, e in enumerate(extras_keys)}}
    if len(rates) > 10 and len(fin) > 1:
        cmap = matplotlib.colors.ListedColormap(plt.get_cmap("viridis")(np.linspace(0, 0.9, 256)))
        norm = plt.Normalize(min(fin), max(fin))
        st["rate_map"] = (cmap, norm)
        st["colour"] = {r: cmap(norm(r)) if math.isfinite(r) else "gray" for r in rates}
    else:
        st["colour"] = {r: color(i, len(rates)) for i, r in enumerate(rates)}
    return st


def rate_text(rate):
    return f"{rate:g} req/s" if math.isfinite(rate) else "rate n/a"


def draw_frontier_lines(ax, lines, st, varying):
    """Draws every line (error bars, overload crosses included); returns the legend handles and
    labels, one per line, and the notes for place_notes."""
    handles, labels, notes = [], [], []
    for key in sorted(lines):
        policy, rate, extras = key
        us = lines[key]
        c, m = st["colour"][rate], st["marker"][policy]
        handles.append(draw_series(ax, [u["x"] for u in us], [u["y"] for u in us],
                                   [u["heavy"] or bool(u["overloaded"]) for u in us], c,
                                   st["style"][extras], m))
        label = (f"{policy}, " if len(st["policies"]) > 1 else "") + rate_text(rate)
        if varying:
            label += ", " + ", ".join(f"{col}={v}" for col, v in zip(varying, extras))
        labels.append(label)
        bars = [u for u in us if u["n"] > 1]
        if bars:
            ax.errorbar([u["x"] for u in bars], [u["y"] for u in bars],
                        xerr=[u["xerr"] for u in bars], yerr=[u["yerr"] for u in bars],
                        fmt="none", ecolor=c, elinewidth=1, capsize=2, alpha=0.7, zorder=2)
        for u in us:
            note = short_tokens(u["budget"]) if math.isfinite(u["budget"]) else ""
            if u["heavy"]:
                s = u["rejected_share"]
                note += f" rej {percent(s)}" if s is not None else " rejects"
            if u["overloaded"]:
                ax.plot([u["x"]], [u["y"]], marker="x", markersize=10, linestyle="none",
                        color="dimgray", markeredgewidth=2, zorder=5)
                note += " overloaded" + (f" {u['overloaded']}/{u['n']}" if u["n"] > 1 else "")
            notes.append((note, u["x"], u["y"], "dimgray" if u["heavy"] or u["overloaded"] else c))
    return handles, labels, notes


def grouped_legend_entries(fig, ax, st, varying):
    """Legend entries for many lines: one per policy (marker), request rate (colour, or a colour
    bar) and combination of the other parameters (line style)."""
    handles = [Line2D([], [], marker=st["marker"][p], color="black", linestyle="none")
               for p in st["policies"]]
    labels = [f"policy {p}" for p in st["policies"]]
    if st["rate_map"] is None:
        handles += [Line2D([], [], color=st["colour"][r], linewidth=3) for r in st["rates"]]
        labels += [rate_text(r) for r in st["rates"]]
    else:
        cmap, norm = st["rate_map"]
        fig.colorbar(plt.cm.ScalarMappable(cmap=cmap, norm=norm), ax=ax,
                     label="request rate (req/s)", shrink=0.8, pad=0.01)
    if varying:
        handles += [Line2D([], [], color="black", linestyle=st["style"][e])
                    for e in st["extras_keys"]]
        labels += [", ".join(f"{col}={v}" for col, v in zip(varying, e))
                   for e in st["extras_keys"]]
    return handles, labels


def frontier_units(pts, ok, extra_names, max_share):
    """(units, lines, varying columns, replicate columns) of a sweep table. Columns other than
    policy/rate/budget that vary between points split the lines too; replicate columns (seeds)
    are averaged over instead."""
    share, heavy, over = classify(pts, table_len(pts), max_share)

    def varies(c):
        return c in pts and len({str(v) for v in pts[c][ok]}) > 1
    replicates = [c for c in extra_names if is_replicate(c) and varies(c)]
    varying = [c for c in extra_names if not is_replicate(c) and varies(c)]
    units = sweep_units(pts, ok, varying, heavy, over, share)
    lines = {}
    for u in units:
        lines.setdefault(u["line"], []).append(u)
    return units, lines, varying, replicates


def replicate_text(units, replicates):
    counts = sorted({u["n"] for u in units})
    nt = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return f"mean of {nt} values of {', '.join(replicates) or 'repeated points'}"


def plot_frontier(path, stem, parts, args, outdir, written):
    """TTFT p50 against ITL p99, one line per configuration through the token budgets. PARTS is
    a list of (file stem, (cols, extra names)); several files share one chart."""
    name = f"{stem}_frontier.png"
    pts = merge_tables([(s, d[0]) for s, d in parts])
    extra_names = []
    for _, d in parts:
        extra_names += [c for c in d[1] if c not in extra_names]
    if source_column_needed([(s, d[0]) for s, d in parts]):
        extra_names.append("file")
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
    units, lines, varying, replicates = frontier_units(pts, ok, extra_names,
                                                       args.max_rejected_share)
    max_n = max(u["n"] for u in units)
    st = frontier_style(units)

    fig, ax = new_figure(12, 6.5)
    handles, labels, notes = draw_frontier_lines(ax, lines, st, varying)
    best_x, best_y = best_units(units)
    status_h, status_l = status_handles(sum(u["heavy"] for u in units),
                                        sum(bool(u["overloaded"]) for u in units),
                                        args.max_rejected_share)
    if best_x is not None:
        draw_best(ax, "ttft", best_x["x"], best_x["y"])
        draw_best(ax, "itl", best_y["x"], best_y["y"])
        status_h += [best_handle("ttft"), best_handle("itl")]
        status_l += [f"best TTFT p50 (clean points): {unit_text(best_x)}",
                     f"best ITL p99 (clean points): {unit_text(best_y)}"]
    # One entry per line while that stays short; else grouped by parameter.
    if len(labels) + len(status_l) > 14:
        handles, labels = grouped_legend_entries(fig, ax, st, varying)
    legend(ax, handles, labels, inside_max=0, always=(status_h, status_l),  # beside: notes readable
           title=f"each point: {replicate_text(units, replicates)}; bars: 95% CI (Student t)"
           if max_n > 1 else None)

    log_x, log_y = spans_decade([u["x"] for u in units]), spans_decade([u["y"] for u in units])
    if log_x:
        ax.set_xscale("log")
        log_ticks(ax.xaxis, [u["x"] for u in units])
    if log_y:
        ax.set_yscale("log")
        log_ticks(ax.yaxis, [u["y"] for u in units])
    ax.set_xlabel("TTFT p50 (ms" + (", log scale)" if log_x else ")"))
    ax.set_ylabel("ITL p99 (ms" + (", log scale)" if log_y else ")"))
    files = [s for s, _ in parts]
    title = [f"{stem}: TTFT/ITL trade-off; points labelled with max_num_batched_tokens" +
             (f" ({len(files)} files: {', '.join(files)})" if len(parts) > 1 else ""),
             hardware_text(table_hardware(pts, np.nonzero(ok)[0]))]
    if overload_unknown(parts):
        title.append(overload_unknown(parts))
    if best_x is None:
        title.append("NO CLEAN POINT: every point is overloaded or rejects > "
                     f"{percent(args.max_rejected_share)} of its requests; nothing is best")
    if max_n > 1:
        title.append(f"each point: {replicate_text(units, replicates)}; error bars: 95% "
                     "confidence interval of the mean (Student t)")
    set_title(fig, title)
    ax.grid(True, which="both", alpha=0.3)
    place_notes(ax, notes)
    save(fig, outdir, name, written, {
        "kind": "frontier", "files": files, "points": int(ok.sum()), "units": len(units),
        "lines": len(lines), "replicate_columns": replicates, "max_replicates": max_n,
        "max_rejected_share": args.max_rejected_share,
        "best_ttft": unit_record(best_x) if best_x else None,
        "best_itl": unit_record(best_y) if best_y else None,
        "flagged": [unit_record(u) for u in units if u["heavy"] or u["overloaded"]]})


# ---------------------------------------------------------------------------------------------
# Capacity files

CAPACITY_COLS = ("policy", "max_num_batched_tokens", "capacity_req_s")
CAPACITY_OPTIONAL = ("label", "replicas", "note", "completed", "rejected", "rejected_share",
                     "overloaded", "gpu", "model", "tp", "cost_per_million_output_tokens")


def load_capacity(f):
    return (read_table(f, "capacity", CAPACITY_COLS, optional=CAPACITY_OPTIONAL),
            attr_text(f, "slo"))


def source_text(split, values, policy):
    """'GPU, model, TP n, file: policy' with only the parts known and varying."""
    parts = []
    for col, v in zip(split, values):
        if v in ("", "n/a"):
            continue
        parts.append(f"TP {v}" if col == "tp" else v)
    return (", ".join(parts) + ": " if parts else "") + policy


def plot_capacity(path, stem, data, args, outdir, written):
    plot_capacities(path, stem, [(stem, data)], args, outdir, written)


def plot_capacities(path, stem, parts, args, outdir, written):
    """Capacity against token budget, one line per policy (and per file, GPU or model when
    several are drawn together)."""
    name = f"{stem}_capacity.png"
    cap = merge_tables([(s, d[0]) for s, d in parts])
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
    slos = sorted({d[1] for _, d in parts if d[1]})
    share, heavy, over = classify(cap, n, args.max_rejected_share)
    # servesim's note column: "at least..." is a lower bound (the SLO held at --rate-max), and
    # "rejects..." a configuration that refuses requests at any rate (capacity 0).
    note_text = [str(cap["note"][i]) if "note" in cap else "" for i in range(n)]
    lower = np.array([t.startswith("at least") for t in note_text], dtype=bool)
    rejects_any = np.array([t.startswith("rejects") for t in note_text], dtype=bool)

    # Lines: policy, plus whatever tells files or hardware apart.
    split = [col for col in ("gpu", "model", "tp")
             if col in cap and len({value_text(v) for v in cap[col][ok]}) > 1]
    if source_column_needed([(s, d[0]) for s, d in parts]):
        split.append("file")
    def line_key(i):
        return tuple(value_text(cap[col][i]) for col in split) + (str(cap["policy"][i]),)
    keys = sorted({line_key(i) for i in np.nonzero(ok)[0]})
    sources = sorted({k[:-1] for k in keys})
    policies = sorted({k[-1] for k in keys})

    fig, ax = new_figure(9, 5.5)
    exact = ok & ~lower & ~rejects_any
    top = float(np.max(c[exact])) * 1.3 if exact.any() and np.max(c[exact]) > 0 else None
    clean = ok & ~heavy & ~over
    best = None
    if clean.any():
        cand = np.nonzero(clean)[0]
        best = int(cand[np.argmax(c[cand])])
    handles, labels, notes = [], [], []
    for key in keys:
        j = sources.index(key[:-1]) if len(sources) > 1 else policies.index(key[-1])
        col = color(j, max(len(sources), len(policies)) if len(sources) > 1 else len(policies))
        mk = MARKERS[policies.index(key[-1]) % len(MARKERS)]
        idx = sorted((i for i in np.nonzero(ok)[0] if line_key(i) == key), key=lambda i: (b[i], i))
        shown = np.array([min(c[i], top) if top is not None and lower[i] else c[i] for i in idx])
        handles.append(draw_series(ax, b[idx], shown, heavy[idx] | over[idx], col, "-", mk))
        labels.append(source_text(split, key[:-1], key[-1]))
        for k, i in enumerate(idx):
            tag = []
            if heavy[i]:
                tag.append("rejects requests" if rejects_any[i] or not math.isfinite(share[i])
                           else f"rejects {percent(share[i])}")
            if over[i]:
                ax.plot([b[i]], [shown[k]], marker="x", linestyle="none", markersize=10,
                        color="dimgray", markeredgewidth=2)
                tag.append("overloaded")
            if lower[i]:
                tag.append(f">= {c[i]:g} (SLO met at --rate-max)")
            r = cap["replicas"][i] if "replicas" in cap else math.nan
            if math.isfinite(r) and r > 0:
                tag.append(f"{int(r)} repl.")
            if tag:
                notes.append((", ".join(tag), b[i], shown[k],
                              "dimgray" if heavy[i] or over[i] else col))
    sh, sl = status_handles(int((heavy & ok).sum()), int((over & ok).sum()),
                            args.max_rejected_share, "row")
    best_rec = None
    if best is not None:
        shown_best = min(c[best], top) if top is not None and lower[best] else c[best]
        draw_best(ax, "capacity", b[best], shown_best)
        what = source_text(split, line_key(best)[:-1], str(cap["label"][best]) if "label" in cap
                           else line_key(best)[-1])
        sh.append(best_handle("capacity"))
        sl.append(f"highest capacity (clean rows): {what}, {c[best]:g} req/s")
        best_rec = {"label": str(cap["label"][best]) if "label" in cap else None,
                    "policy": str(cap["policy"][best]), "file": str(cap["file"][best]),
                    "max_num_batched_tokens": float(b[best]), "capacity_req_s": float(c[best])}
    legend(ax, handles, labels, inside_max=0, always=(sh, sl))  # beside: notes stay readable
    ax.set_xscale("log", base=2)
    ax.margins(x=0.08)
    budgets = np.unique(b[ok])
    ax.set_xticks(budgets)
    ax.set_xticklabels([short_tokens(v) for v in budgets])
    ax.minorticks_off()
    ax.set_ylim(bottom=0, top=top)
    ax.set_xlabel("max_num_batched_tokens (tokens, log2 scale)")
    ax.set_ylabel("capacity (req/s)")
    files = [s for s, _ in parts]
    set_title(fig, [
        f"{stem}: highest request rate meeting the SLO" + (f" ({'; '.join(slos)})" if slos else "")
        + (f" ({len(files)} files: {', '.join(files)})" if len(files) > 1 else ""),
        hardware_text(table_hardware(cap, np.nonzero(ok)[0]))] +
        ([overload_unknown(parts)] if overload_unknown(parts) else []) +
        ([] if best is not None else
         ["NO CLEAN ROW: every row is overloaded or rejects > "
          f"{percent(args.max_rejected_share)} of its requests; none is best"]))
    ax.grid(True, alpha=0.3)
    place_notes(ax, notes)
    save(fig, outdir, name, written, {
        "kind": "capacity", "files": files, "best": best_rec,
        "max_rejected_share": args.max_rejected_share,
        "flagged": [{"label": str(cap["label"][i]) if "label" in cap else None,
                     "file": str(cap["file"][i]),
                     "why": (["rejects"] if heavy[i] else []) + (["overloaded"] if over[i] else [])}
                    for i in np.nonzero(ok & (heavy | over))[0]]})


LOADERS = {"results": load_results, "sweep": load_sweep, "capacity": load_capacity}
PLOTTERS = {"results": plot_results, "sweep": plot_sweep, "capacity": plot_capacity}
TOGETHER = {"sweep": plot_frontier, "capacity": plot_capacities}


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


SWEEP_NEW_COLS = ("goodput_req_s", "total_input_tokens", "total_output_tokens", "queue_len_p50",
                  "queue_len_p99", "kv_usage_p50", "kv_usage_p99", "waiting_at_last_arrival",
                  "arrival_rate_req_s", "drain_s", "step_time_fraction")


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
                if "config" in summary:
                    g.attrs["config"] = np.bytes_(json.dumps(summary["config"]).encode())
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
    cfg = lambda gpu: {"model": "llama-3.1-8b", "gpu": gpu,  # noqa: E731
                       "tensor_parallel_size": 1}

    def summ(t, o, gpu=None, rejected=0, overloaded=None):
        s = {"ttft_ms": {"p50": t}, "otps": {"p50": o, "p50_ratio": o}, "otps_p50_ratio": o,
             "requests": {"total": 400, "completed": 400 - rejected, "rejected": rejected}}
        if gpu:
            s["config"] = cfg(gpu)
        if overloaded is not None:  # the object the C++ side adds to the summary
            s["overloaded"] = {"overloaded": overloaded, "waiting_at_last_arrival": 120}
        return s
    results_file("results.h5", [
        ("vllm-v0:131072", summ(50, 34.0, "h100-sxm"), *fake_run(400, 50, 20, span, 60, 34.0)),
        ("chunked:512", summ(180, 44.0, "h100-sxm"),
         *fake_run(400, 180, 23, span, 60, 44.0, steps=False)),
    ])
    # Baseline and current: the current run is slower, overloaded and rejects 20%.
    results_file("base_results.h5", [
        ("chunked:2048", summ(60, 50.0, "h100-sxm", overloaded=False),
         *fake_run(400, 60, 18, span, 60, 50.0, steps=False))])
    results_file("cur_results.h5", [
        ("chunked:2048", summ(90, 30.0, "a100-80g", rejected=80, overloaded=True),
         *fake_run(400, 90, 30, span, 60, 30.0, steps=False))])
    # One run, one window, one request (single points everywhere); summary without a ratio,
    # an older file without config.
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

    def sweep_file(fname, rows, grid, new_columns=False):
        """NEW_COLUMNS: the columns the C++ side adds (overloaded, rejected_share, ...);
        without, the layout of older files."""
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
                      "total_tokens_per_s", "mfu", "mbu", "kv_usage_mean", "kv_usage_max",
                      "makespan_s", "steps") + (SWEEP_NEW_COLS if new_columns
                                                else ("busy_fraction",)):
                cols[m] = np.array([1.0 for _ in rows])
            if new_columns:
                cols["overloaded"] = np.array([float(r.get("overloaded", 0)) for r in rows])
                done, rej = cols["completed"], cols["rejected"]
                cols["rejected_share"] = np.where(done + rej > 0, rej / np.maximum(done + rej, 1),
                                                  0.0)
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
                             "queue_ms": ttft / 2, "otps": 1000 / itl, "completed": 100,
                             "scheduler": f"{policy}", "request-rate": f"{rate:g}",
                             "max-num-batched-tokens": str(budget)})
    grid = [["scheduler", ["chunked", "sarathi"]], ["request-rate", ["5", "20"]],
            ["max-num-batched-tokens", ["256", "512", "1024", "2048"]], ["gpu", ["h100-sxm"]]]
    for r in rows:
        r["gpu"] = "h100-sxm"
    sweep_file("sweep.h5", rows, grid)  # an older file: no overloaded/rejected_share columns
    sweep_file("single_sweep.h5", rows[:1], grid[:1])
    sweep_file("empty_sweep.h5", [], grid)

    def seed_rows(gpu, seeds, budgets=(512, 1024, 2048), rates=(5.0, 20.0), spoil=True,
                  slow=1.0):
        """Rows of a sweep over seeds. With SPOIL, vllm-v0:512 rejects 95% of its requests and
        chunked:512 at the highest rate is overloaded: both have the lowest TTFT and ITL of the
        sweep, so a plot that does not exclude them would call them best."""
        out = []
        for policy in ("vllm-v0", "chunked"):
            for rate in rates:
                for budget in budgets:
                    for seed in seeds:
                        noise = 1 + 0.08 * math.sin(seed * 2.3 + budget + rate)
                        ttft = slow * (40 if policy == "chunked" else 55) * 2048 / budget * \
                            (rate / 5) ** 1.2 * noise
                        itl = slow * (18 + budget / 60 * (rate / 5)) * (2 - noise)
                        row = {"policy": policy, "rate": rate, "budget": budget, "gpu": gpu,
                               "completed": 100.0, "rejected": 0.0, "overloaded": 0,
                               "scheduler": policy, "request-rate": f"{rate:g}",
                               "max-num-batched-tokens": str(budget), "seed": str(seed)}
                        if spoil and policy == "vllm-v0" and budget == min(budgets):
                            row.update(completed=5.0, rejected=95.0)
                            ttft, itl = 2.0 * noise, 5.0 * noise
                        if spoil and policy == "chunked" and budget == min(budgets) and \
                                rate == max(rates):
                            row["overloaded"] = 1
                            ttft, itl = 3.0 * noise, 4.0 * noise
                        row.update(ttft_ms=ttft, itl_ms=itl, tpot_ms=itl, e2e_ms=ttft + 4000,
                                   queue_ms=ttft / 3, otps=1000 / itl)
                        out.append(row)
        return out
    seed_grid = [["scheduler", ["vllm-v0", "chunked"]], ["request-rate", ["5", "20"]],
                 ["max-num-batched-tokens", ["512", "1024", "2048"]],
                 ["seed", [str(s) for s in range(5)]]]
    sweep_file("sweep_seeds.h5", seed_rows("h100-sxm", range(5)), seed_grid, new_columns=True)
    sweep_file("sweep_seeds_a100.h5", seed_rows("a100-80g", range(5), slow=1.4), seed_grid,
               new_columns=True)
    # 2000 points: 2 policies x 2 rates x 5 budgets x 100 seeds.
    budgets5 = (256, 512, 1024, 2048, 4096)
    sweep_file("sweep_2000.h5", seed_rows("h100-sxm", range(100), budgets=budgets5),
               [["scheduler", ["vllm-v0", "chunked"]], ["request-rate", ["5", "20"]],
                ["max-num-batched-tokens", [str(b) for b in budgets5]],
                ["seed", [str(s) for s in range(100)]]], new_columns=True)
    # Many lines: 2 policies x 12 rates x 2 GPUs.
    many = []
    for gpu in ("h100-sxm", "a100-80g"):
        many += seed_rows(gpu, [0], rates=tuple(float(r) for r in range(2, 26, 2)), spoil=False,
                          slow=1.0 if gpu == "h100-sxm" else 1.4)
    for r in many:
        r.pop("seed")
    sweep_file("sweep_many.h5", many,
               [["scheduler", ["vllm-v0", "chunked"]], ["request-rate", ["2:24:2"]],
                ["max-num-batched-tokens", ["512", "1024", "2048"]],
                ["gpu", ["h100-sxm", "a100-80g"]]], new_columns=True)
    # Every point flagged: nothing may be called best.
    bad = [dict(r, completed=10.0, rejected=90.0)
           for r in seed_rows("h100-sxm", [0], budgets=(512, 1024))]
    for r in bad:
        r.pop("seed")
    sweep_file("sweep_all_bad.h5", bad, seed_grid[:3], new_columns=True)

    def capacity_file(fname, rows, new_columns=None):
        """NEW_COLUMNS: (gpu, model, tp, cost) for the columns the C++ side adds."""
        with h5py.File(os.path.join(outdir, fname), "w") as f:
            f.attrs["magic"] = np.bytes_(b"servesim-capacity")
            f.attrs["version"] = np.int64(1)
            f.attrs["slo"] = "ttft_p50_ms=2000"  # variable-length str: the reader accepts both
            cols = {
                "label": [f"{r[0]}:{r[1]}" for r in rows],
                "policy": [r[0] for r in rows],
                "note": [r[4] if len(r) > 4 else "" for r in rows],
                "max_num_batched_tokens": np.array([r[1] for r in rows], dtype=np.int64),
                "capacity_req_s": np.array([r[2] for r in rows], dtype=float),
                "replicas": np.array([r[3] for r in rows], dtype=np.int64),
                "iterations": np.full(len(rows), 12, dtype=np.int64),
                "ttft_ms_p50": np.array([1900.0 for _ in rows]),
                "itl_ms_p99": np.array([40.0 for _ in rows]),
            }
            if new_columns:
                gpu, model, tp, cost = new_columns
                cols.update({
                    "gpu": [gpu] * len(rows), "model": [model] * len(rows),
                    "tp": np.full(len(rows), tp, dtype=np.int64),
                    "cost_per_million_output_tokens": np.full(len(rows), cost),
                    "overloaded": np.array([float(len(r) > 5 and r[5]) for r in rows]),
                    "rejected_share": np.array([r[6] if len(r) > 6 else 0.0 for r in rows]),
                })
            _write_group(f, "capacity", cols)
        names.append(fname)

    cap_rows = [("chunked", b, 6 + 2 * math.log2(b / 256), 3) for b in (256, 512, 1024, 2048, 4096)]
    cap_rows.append(("chunked", 8192, math.nan, 0))  # no capacity found
    cap_rows.append(("vllm-v0", 131072, 9.5, 2))
    capacity_file("capacity.h5", cap_rows)  # older layout: no gpu/model/overloaded columns
    capacity_file("single_capacity.h5", cap_rows[-1:])
    capacity_file("empty_capacity.h5", [])
    # Newer layout on another GPU: the highest capacity is overloaded, one row rejects at any
    # rate, one rejects 5% at its capacity.
    cap_new = [("chunked", b, 4 + 1.5 * math.log2(b / 256), 4) for b in (256, 512, 1024)]
    cap_new.append(("chunked", 2048, 30.0, 1, "", True))
    cap_new.append(("vllm-v0", 512, 0.0, 0, "rejects 40 requests at any rate (too long)"))
    cap_new.append(("vllm-v0", 4096, 8.5, 3, "", False, 0.05))
    capacity_file("capacity_a100.h5", cap_new, ("a100-80g", "llama-3.1-8b", 1, 1.25))

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


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="plot.py", description="Plots servesim HDF5 results, sweep and capacity files as PNGs.")
    p.add_argument("files", nargs="*", metavar="FILE", help="servesim .h5 output files")
    p.add_argument("-o", "--outdir", metavar="OUTDIR", help="directory for the PNGs (created)")
    p.add_argument("--baseline", metavar="BASE.h5",
                   help="a results file: each results FILE is also drawn against it "
                        "(STEM_vs_BASESTEM_otps.png) and the alarm threshold is "
                        "--alarm-fraction x its p50 OTPS, as servesim diagnose computes it")
    p.add_argument("--baseline-run", metavar="NAME",
                   help="the run of BASE.h5 when it holds several (as diagnose)")
    p.add_argument("--current-run", metavar="NAME",
                   help="plot only this run of each results FILE")
    p.add_argument("--alarm-fraction", type=float, default=0.8, metavar="F",
                   help="alarm threshold as a fraction of the baseline OTPS (default 0.8)")
    p.add_argument("--baseline-otps", type=float, default=None, metavar="X",
                   help="baseline OTPS in tokens/s, when there is no --baseline file")
    p.add_argument("--self-threshold", action="store_true",
                   help="without a baseline, draw the threshold from each file's own first run "
                        "(labelled self-referenced)")
    p.add_argument("--together", nargs="?", const="together", default=None, metavar="NAME",
                   help="draw all sweep files on one chart (NAME_frontier.png) and all capacity "
                        "files on one (NAME_capacity.png); NAME defaults to 'together'")
    p.add_argument("--max-rejected-share", type=float, default=0.01, metavar="F",
                   help="a point rejecting more than this share of its requests is drawn hollow "
                        "and never best (default 0.01)")
    p.add_argument("--describe", metavar="JSON",
                   help="write what each PNG shows (titles, legends, best and flagged points, "
                        "threshold, clipped artists) as JSON")
    p.add_argument("--write-fake-examples", metavar="DIR", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.write_fake_examples:
        return p, args
    if args.together is not None and (args.together.endswith(".h5") or
                                      os.path.isfile(args.together)):
        # `--together a.h5 b.h5`: a file, not a NAME.
        args.files.insert(0, args.together)
        args.together = "together"
    if not args.files:
        p.error("no input FILE given")
    if not args.outdir:
        p.error("-o OUTDIR is required")
    if not math.isfinite(args.alarm_fraction) or args.alarm_fraction <= 0:
        p.error("--alarm-fraction must be a positive number")
    if args.baseline_otps is not None and not (math.isfinite(args.baseline_otps)
                                               and args.baseline_otps > 0):
        p.error("--baseline-otps must be a positive number")
    if args.baseline and args.baseline_otps is not None:
        p.error("--baseline and --baseline-otps both set the baseline; give one")
    if not (0 <= args.max_rejected_share < 1):
        p.error("--max-rejected-share must be in [0, 1)")
    if args.together is not None and (not args.together or os.sep in args.together):
        p.error("--together NAME must be a plain file name stem")
    return p, args


def load_all(args):
    """Reads every file; returns (loaded, baseline) or raises InputError with a path."""
    loaded, stems = [], {}
    for path in args.files:
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem in stems and stems[stem] != os.path.realpath(path):
            raise PathError(path, f"has the same name stem {stem!r} as {stems[stem]}; "
                                  "their PNGs would overwrite each other")
        stems[stem] = os.path.realpath(path)
        kind = "servesim"
        try:
            f, kind = open_checked(path)
            with f:
                data = LOADERS[kind](f)
        except InputError as e:
            raise PathError(path, str(e)) from None
        except (KeyError, OSError, ValueError, TypeError) as e:
            raise PathError(path, f"malformed {kind} file ({e.__class__.__name__}: {e})") \
                from None
        loaded.append((path, stem, kind, data))
    baseline = None
    if args.baseline:
        try:
            baseline = load_baseline(args.baseline, args.baseline_run)
        except InputError as e:
            raise PathError(args.baseline, str(e)) from None
        except (KeyError, OSError, ValueError, TypeError) as e:
            raise PathError(args.baseline, f"malformed results file ({e.__class__.__name__}: "
                                           f"{e})") from None
        if not any(kind == "results" for _, _, kind, _ in loaded):
            raise PathError(args.baseline, "--baseline needs at least one results FILE to "
                                           "compare with it")
    return loaded, baseline


class PathError(Exception):
    def __init__(self, path, msg):
        super().__init__(f"{PROG}: {path}: {msg}")


def main(argv=None):
    p, args = parse_args(argv)
    if args.write_fake_examples:
        for name in write_fake_examples(args.write_fake_examples):
            print(os.path.join(args.write_fake_examples, name))
        return 0

    # Read every file completely before writing anything: a bad file leaves no PNG behind.
    try:
        loaded, baseline = load_all(args)
    except PathError as e:
        print(e, file=sys.stderr)
        return 2
    try:
        os.makedirs(args.outdir, exist_ok=True)
    except OSError as e:
        print(f"{PROG}: {args.outdir}: cannot create the output directory ({e.strerror})",
              file=sys.stderr)
        return 2
    written = []
    try:
        for path, stem, kind, data in loaded:
            if args.together is not None and kind in TOGETHER:
                continue
            n = len(written)
            try:
                if kind == "results":
                    plot_results(path, stem, data, args, args.outdir, written, baseline)
                else:
                    PLOTTERS[kind](path, stem, data, args, args.outdir, written)
            finally:
                for line in written[n:]:
                    print(line, flush=True)
        if args.together is not None:
            for kind, plotter in TOGETHER.items():
                parts = [(stem, data) for _, stem, k, data in loaded if k == kind]
                if parts:
                    n = len(written)
                    try:
                        plotter(", ".join(path for path, _, k, _ in loaded if k == kind),
                                args.together, parts, args, args.outdir, written)
                    finally:
                        for line in written[n:]:
                            print(line, flush=True)
    finally:
        if args.describe:
            with open(args.describe, "w") as f:
                json.dump(DESCRIBE, f, indent=1, sort_keys=True, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
