"""What every figure shares: reading a file through servesim.read, the title's hardware and
parameter-source lines, legends, notes placed clear of each other, and saving with a record of
what the PNG shows (--describe)."""
import math
import os
import sys
import textwrap

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from .. import read  # noqa: E402
from ..errors import Error  # noqa: E402

PROG = "plot.py"
DPI = 100
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
STYLES = ["-", "--", ":", "-."]
LEGEND_MAX = 24  # legend entries, all kinds together; beyond, "+K more" (the CSV has them all)
# servesim's rule for rejection_heavy (analysis/report.hpp, kComparableRejectedShare): only
# named in legends, never applied here.
COMPARABLE_SHARE = 0.01


class InputError(Exception):
    """A file that cannot be plotted; the message does not name the file."""


def warn(path, msg):
    print(f"{PROG}: {path}: {msg}", file=sys.stderr)


def load(path):
    """servesim.read(PATH) as (kind, data): results (Results), sweep or capacity (Table);
    InputError with servesim's reason, or for a file that has no plot (a trace)."""
    if not os.path.isfile(path):
        raise InputError("no such file" if not os.path.exists(path) else "not a regular file")
    try:
        data = read(path)
    except Error as e:
        msg = str(e)
        raise InputError(msg[len(path) + 2:] if msg.startswith(path + ": ") else msg) from None
    kind = "results" if isinstance(data, dict) else getattr(data, "kind", "trace")
    if kind == "trace":
        raise InputError("a servesim trace, which has no plot (results, sweep and capacity "
                         "files have)")
    if kind == "capacity-plan":
        raise InputError("a capacity day plan (capacity --over-time), which has no plot "
                         "(results, sweep and capacity files have)")
    return kind, data


def need_columns(df, where, names):
    """InputError unless the frame DF (the group WHERE) has every column of NAMES."""
    for name in names:
        if name not in df.columns:
            raise InputError(f"missing dataset {where}/{name}")


# ---------------------------------------------------------------------------------------------
# Titles: model, GPU and TP; where the cost model's parameters come from


def few(names, what, limit=3):
    """One name, or "N whats (a, b, c, ...)"."""
    names = list(names)
    if len(names) == 1:
        return names[0]
    shown = ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
    return f"{len(names)} {what} ({shown})"


def known(v):
    """A value the file records: not missing, empty or NaN."""
    return v is not None and str(v) not in ("", "nan", "<NA>")


def tp_text(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{int(f)}" if math.isfinite(f) and f == int(f) else f"{v}"


def hardware_text(triples):
    """'MODEL on GPU, TP n' from (model, gpu, tp) triples ('' or None when unknown); several
    models or GPUs are counted and named."""
    models = sorted({str(m) for m, _, _ in triples if known(m)})
    gpus = sorted({str(g) for _, g, _ in triples if known(g)})
    tps = sorted({tp_text(t) for _, _, t in triples if known(t)}, key=lambda s: (len(s), s))
    if not models and not gpus:
        return "model and GPU not recorded in the file"
    unknown = sum(1 for m, g, _ in triples if not known(m) and not known(g))
    s = (few(models, "models") if models else "model not recorded") + " on " + \
        (few(gpus, "GPUs") if gpus else "GPU not recorded")
    if tps:
        s += ", TP " + ", ".join(tps)
    if unknown:
        s += f"; model and GPU not recorded for {unknown} of {len(triples)} (older file)"
    return s


def table_hardware(df):
    """(model, gpu, tp) of each row of a sweep or capacity frame."""
    def get(c):
        return list(df[c]) if c in df.columns else [""] * len(df)
    return list(zip(get("model"), get("gpu"), get("tp")))


def source_text(sources):
    """The parameters' source line of a title: servesim's cost_source ('HARDWARE; ENGINE'),
    one, or how many; '' entries are files that predate it."""
    named = sorted({str(s) for s in sources if known(s)})
    if not named:
        return "parameters: source not recorded (older file)"
    return "parameters: " + few(named, "sources", limit=1)


def value_text(v):
    if isinstance(v, (float, np.floating)):
        return "n/a" if not math.isfinite(v) else f"{v:g}"
    return str(v)


# ---------------------------------------------------------------------------------------------
# Drawing


def color(i, n=10):
    """The i-th of n colours: tab10 while they are distinct, a continuous map beyond."""
    if n <= 10:
        return plt.get_cmap("tab10")(i % 10)
    return plt.get_cmap("viridis")(i / (n - 1) * 0.9)


def new_figure(w, h, rows=1, **kw):
    return plt.subplots(rows, 1, figsize=(w, h), layout="constrained", **kw)


def set_title(fig, lines, source=None):
    """The figure's title, above everything (a legend beside the axes included): LINES wrapped
    to the figure's width (constrained layout does not wrap), then SOURCE on one line,
    shortened when long."""
    width = int(fig.get_size_inches()[0] * 11)
    out = []
    for line in lines:
        if line:
            out.extend(textwrap.wrap(line, width) or [""])
    if source:
        out.append(textwrap.shorten(source, width, placeholder=" ..."))
    fig.suptitle("\n".join(out), fontsize="medium")


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


def cross(ax, x, y):
    """The overloaded mark over a point."""
    ax.plot([x], [y], marker="x", markersize=10, linestyle="none", color="dimgray",
            markeredgewidth=2, zorder=5)


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


class Output:
    """Where PNGs go: OUTDIR, the paths written (each passed to ON_WRITTEN as it is) and what
    each shows, for --describe (keyed by the PNG's file name)."""

    def __init__(self, outdir, on_written=None):
        self.outdir = outdir
        self.written = []
        self.describe = {}
        self.on_written = on_written
        self.warned = set()

    def unflagged(self, path, missing):
        """Warns, once per file, that PATH predates servesim's flags (MISSING names what it
        lacks): nothing of it is drawn as rejection-heavy or overloaded."""
        if missing and path not in self.warned:
            self.warned.add(path)
            warn(path, f"the file predates servesim's flags (no {' or '.join(missing)}); "
                       "nothing is drawn as rejection-heavy or overloaded")

    def save(self, fig, name, info=None):
        """Saves FIG as NAME and records what it shows. Nothing may be cut off: anything beyond
        the figure is recorded as clipped and the PNG is then saved with a tight bounding box so
        that it still shows everything."""
        clipped = clipped_artists(fig)
        overlaps = overlapping_notes(fig)
        titles = ([fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) else []) + \
            [ax.get_title() for ax in fig.axes if ax.get_title()]
        d = {"title": "\n".join(titles),
             "legend": legend_texts(fig), "clipped": clipped, "overlaps": overlaps}
        d.update(info or {})
        self.describe[name] = d
        path = os.path.join(self.outdir, name)
        fig.savefig(path, dpi=DPI, metadata={"Software": None},
                    bbox_inches="tight" if clipped else None)
        plt.close(fig)
        self.written.append(path)
        if self.on_written:
            self.on_written(path)


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


def status_handles(n_heavy, n_over, heavy_text, what="point"):
    """Legend entries that say why some markers are hollow (HEAVY_TEXT: what makes them
    rejection-heavy) or crossed."""
    hs, ls = [], []
    if n_heavy:
        hs.append(Line2D([], [], marker="o", linestyle="none", markerfacecolor="white",
                         markeredgecolor="gray", markersize=7))
        ls.append(f"hollow: {heavy_text} ({plural(n_heavy, what)}); never best")
    if n_over:
        hs.append(Line2D([], [], marker="x", linestyle="none", color="dimgray", markersize=9,
                         markeredgewidth=2))
        ls.append(f"x: overloaded, the queue never drains ({plural(n_over, what)}); never best")
    return hs, ls


def share_rule(max_share):
    """What rejection-heavy means: more than --max-rejected-share when given, else servesim's
    own 1% rule."""
    return f"rejects > {percent(COMPARABLE_SHARE if max_share is None else max_share)} of requests"


BEST_STYLE = {"ttft": dict(color="goldenrod", size=17),
              "itl": dict(color="mediumvioletred", size=22),
              "capacity": dict(color="goldenrod", size=17)}


def best_handle(kind):
    st = BEST_STYLE[kind]
    return Line2D([], [], marker="o", linestyle="none", markerfacecolor="none",
                  markeredgecolor=st["color"], markeredgewidth=2, markersize=st["size"] * 0.6)


def draw_best(ax, kind, x, y):
    st = BEST_STYLE[kind]
    ax.plot([x], [y], marker="o", linestyle="none", markerfacecolor="none",
            markeredgecolor=st["color"], markeredgewidth=2, markersize=st["size"], zorder=1)


def source_column_needed(parts):
    """Whether rows of different files must be told apart by file name: they must unless each
    file has its own (model, GPU, TP), which the extra columns already show. PARTS: (stem,
    frame) pairs."""
    if len(parts) < 2:
        return False
    seen = []
    for _, df in parts:
        hw = {tuple(str(v) if known(v) else "" for v in t) for t in table_hardware(df)}
        if not hw or hw == {("", "", "")} or any(hw & s for s in seen):
            return True
        seen.append(hw)
    return False


def flag_columns(out, path, df):
    """(rejection-heavy, overloaded) booleans of a sweep's or capacity table's rows from the
    file's rejection_heavy and overloaded columns; False where the file has no such column
    (an older file: OUT warns)."""
    out.unflagged(path, [c for c in ("rejection_heavy", "overloaded") if c not in df.columns])
    return tuple(df[c].to_numpy(dtype=float) > 0.5 if c in df.columns
                 else np.zeros(len(df), dtype=bool) for c in ("rejection_heavy", "overloaded"))


def rejects_more_than(df, max_share, heavy):
    """--max-rejected-share's override: whether each row's rejected_share (the file's figure)
    exceeds MAX_SHARE; HEAVY, the file's flag, where the file gives no share."""
    if max_share is None or "rejected_share" not in df.columns:
        return heavy
    share = df["rejected_share"].to_numpy(dtype=float)
    return np.where(np.isfinite(share), share > max_share, heavy)
