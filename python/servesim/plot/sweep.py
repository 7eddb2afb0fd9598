"""A sweep's TTFT/ITL frontier: each configuration's mean TTFT p50 and ITL p99 over its seeds,
with the 95% intervals servesim wrote (the file's intervals group), flagged as the file's
rejection_heavy and overloaded columns say."""
import json
import math

import numpy as np
import pandas as pd

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from ._common import (InputError, MARKERS, STYLES, best_handle, color, draw_best, draw_series,
                      cross, flag_columns, hardware_text, legend, log_ticks, new_figure,
                      percent, place_notes, rejects_more_than, set_title, share_rule,
                      short_tokens, source_column_needed, source_text, spans_decade,
                      status_handles, table_hardware, value_text, warn)

# Swept flags that the resolved columns already account for (the key is policy, budget, rate).
FLAGS_RESOLVED = {"scheduler", "max-num-batched-tokens", "request-rate", "max_num_batched_tokens",
                  "request_rate", "policy", "label", "point", "tensor-parallel-size"}
# Resolved columns that tell lines apart when they vary across the points.
EXTRA_RESOLVED = ("gpu", "model", "tp")
X, Y = "ttft_ms_p50", "itl_ms_p99"


def lines_of(attrs, name):
    """A root attribute listing names one a line (servesim writes " " for none)."""
    return [c.strip() for c in str(attrs.get(name, "")).splitlines() if c.strip()]


def swept_flags(attrs):
    """The swept flag names from the root attribute `grid`, JSON
    {"fixed": [[flag, value], ...], "axes": [[flag, [values...]], ...]}."""
    raw = attrs.get("grid")
    if not raw:
        return []
    try:
        return [str(entry[0]).lstrip("-") for entry in json.loads(raw)["axes"]]
    except (ValueError, TypeError, IndexError, KeyError):
        raise InputError("attribute 'grid' is not JSON {\"axes\": [[flag, [values...]], ...]}") \
            from None


def check(t):
    """InputError unless the sweep's points can be drawn (read once, before any PNG)."""
    for c in ("policy", "max_num_batched_tokens", "request_rate", X, Y):
        if c not in t.table.columns:
            raise InputError(f"missing dataset /points/{c}")
    swept_flags(t.attrs)


def file_units(path, t, max_share, out):
    """(units, ok points) of one sweep file: its intervals rows (one per configuration, the
    replicates averaged by servesim), or in a file without them each point alone. A unit is
    flagged when any of its points is: the points' rejection_heavy (or, with MAX_SHARE, their
    rejected_share above it) and overloaded, counted per unit."""
    pts = t.table
    ok = np.isfinite(pts[X].to_numpy(dtype=float)) & np.isfinite(pts[Y].to_numpy(dtype=float))
    heavy, over = flag_columns(out, path, pts)
    heavy = rejects_more_than(pts, max_share, heavy)
    if t.intervals is None:
        u = pts[ok].assign(replicates=1, heavy=heavy[ok], overloaded_n=over[ok].astype(int))
    else:
        u = t.intervals
        keys = [c for c in lines_of(t.attrs, "text_columns") + lines_of(t.attrs, "int_columns")
                if c in u.columns]
        unit = pts[keys].merge(u[keys].assign(unit_=np.arange(len(u))), on=keys, how="left")
        k = unit["unit_"].to_numpy(dtype=float)
        has = np.isfinite(k)
        k = k[has].astype(int)
        u = u.assign(heavy=np.bincount(k, heavy[has], minlength=len(u)) > 0,
                     overloaded_n=np.bincount(k, over[has], minlength=len(u)).astype(int))
        u = u[np.isfinite(u[X].to_numpy(dtype=float)) & np.isfinite(u[Y].to_numpy(dtype=float))]
    return u, int(ok.sum())


def units_of(u, extras):
    """Units as dicts, in order of their line (policy, rate, the varying EXTRAS) and budget."""
    def col(c, default=math.nan):
        return u[c].to_numpy() if c in u.columns else np.full(len(u), default)
    rate, budget = col("request_rate").astype(float), col("max_num_batched_tokens").astype(float)
    xerr, yerr = col(X + "_ci95").astype(float), col(Y + "_ci95").astype(float)
    share, label = col("rejected_share").astype(float), col("label", None)
    units = []
    for i in range(len(u)):
        r = rate[i] if math.isfinite(rate[i]) else math.inf
        b = budget[i] if math.isfinite(budget[i]) else math.inf
        key = (str(u["policy"].iat[i]), r, tuple(value_text(u[c].iat[i]) for c in extras))
        units.append({
            "line": key, "policy": key[0], "rate": r, "budget": b,
            "extras": dict(zip(extras, key[2])), "x": float(u[X].iat[i]),
            "y": float(u[Y].iat[i]), "xerr": xerr[i], "yerr": yerr[i],
            "n": int(u["replicates"].iat[i]),
            "rejected_share": float(share[i]) if math.isfinite(share[i]) else None,
            "heavy": bool(u["heavy"].iat[i]), "overloaded": int(u["overloaded_n"].iat[i]),
            "label": str(label[i]) if label[i] is not None else
            f"{key[0]}:{short_tokens(b) if math.isfinite(b) else 'n/a'}",
        })
    return sorted(units, key=lambda v: (v["line"], v["budget"]))


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
    clean = [u for u in units if not u["heavy"] and not u["overloaded"]]
    if not clean:
        return None, None
    return min(clean, key=lambda u: u["x"]), min(clean, key=lambda u: u["y"])


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
                cross(ax, u["x"], u["y"])
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


def replicate_text(units, replicates):
    counts = sorted({u["n"] for u in units})
    nt = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return f"mean of {nt} values of {', '.join(replicates) or 'repeated points'}"


def plot(path, stem, parts, args, out):
    """TTFT p50 against ITL p99, one line per configuration through the token budgets. PARTS is
    a list of (file stem, file path, Table); several files share one chart."""
    name = f"{stem}_frontier.png"
    frames, n, n_ok, extras, replicates = [], 0, 0, list(EXTRA_RESOLVED), []
    for s, p, t in parts:
        u, ok = file_units(p, t, args.max_rejected_share, out)
        frames.append(u.assign(file=s))
        n, n_ok = n + len(t.table), n_ok + ok
        # Without an intervals group, each replicate (seed) is a point of its own.
        extras += [f for f in swept_flags(t.attrs) + ["seed", "replicate"]
                   if f not in FLAGS_RESOLVED and f not in extras]
        replicates += [c for c in lines_of(t.attrs, "replicate_columns") if c not in replicates
                       and t.intervals is not None and t.table[c].nunique() > 1]
    if n_ok == 0:
        warn(path, f"nothing to draw in {name}: " +
             ("the sweep has no points" if n == 0 else "no point has both TTFT p50 and ITL p99")
             + "; skipped")
        return
    if n_ok < n:
        warn(path, f"{name}: {n - n_ok} of {n} points have no TTFT p50 or ITL p99 "
                   "(the point could not run, see its error column, or nothing completed); "
                   "left out")
    merged = pd.concat(frames, ignore_index=True)
    if source_column_needed([(s, f) for f, (s, _, _) in zip(frames, parts)]):
        extras.append("file")
    varying = [c for c in extras if c in merged.columns
               and merged[c].map(value_text).nunique() > 1]
    units = units_of(merged, varying)
    lines = {}
    for u in units:
        lines.setdefault(u["line"], []).append(u)
    max_n = max(u["n"] for u in units)
    st = frontier_style(units)

    fig, ax = new_figure(12, 6.5)
    handles, labels, notes = draw_frontier_lines(ax, lines, st, varying)
    best_x, best_y = best_units(units)
    status_h, status_l = status_handles(sum(u["heavy"] for u in units),
                                        sum(bool(u["overloaded"]) for u in units),
                                        share_rule(args.max_rejected_share))
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

    xs, ys = [u["x"] for u in units], [u["y"] for u in units]
    log_x, log_y = spans_decade(xs), spans_decade(ys)
    if log_x:
        ax.set_xscale("log")
        log_ticks(ax.xaxis, xs)
    if log_y:
        ax.set_yscale("log")
        log_ticks(ax.yaxis, ys)
    ax.set_xlabel("TTFT p50 (ms" + (", log scale)" if log_x else ")"))
    ax.set_ylabel("ITL p99 (ms" + (", log scale)" if log_y else ")"))
    files = [s for s, _, _ in parts]
    title = [f"{stem}: TTFT/ITL trade-off; points labelled with max_num_batched_tokens" +
             (f" ({len(files)} files: {', '.join(files)})" if len(parts) > 1 else ""),
             hardware_text(table_hardware(merged))]
    old = [s for s, p, _ in parts if p in out.warned]
    if old:
        title.append(f"{', '.join(old)}: written before servesim flagged points, so no point of "
                     "it is marked rejecting or overloaded")
    if best_x is None:
        title.append(f"NO CLEAN POINT: every point is overloaded or "
                     f"{share_rule(args.max_rejected_share)}; nothing is best")
    if max_n > 1:
        title.append(f"each point: {replicate_text(units, replicates)}; error bars: 95% "
                     "confidence interval of the mean (Student t, as servesim computes it)")
    set_title(fig, title, source_text(merged.get("cost_source", [""] * len(merged))))
    ax.grid(True, which="both", alpha=0.3)
    place_notes(ax, notes)
    out.save(fig, name, {
        "kind": "frontier", "files": files, "points": n_ok, "units": len(units),
        "lines": len(lines), "replicate_columns": replicates, "max_replicates": max_n,
        "max_rejected_share": args.max_rejected_share,
        "best_ttft": unit_record(best_x) if best_x else None,
        "best_itl": unit_record(best_y) if best_y else None,
        "flagged": [unit_record(u) for u in units if u["heavy"] or u["overloaded"]]})
