"""A capacity search's chart: each configuration's highest request rate meeting the SLO against
its token budget, flagged as the table's rejection_heavy and overloaded columns say."""
import math

import numpy as np
import pandas as pd

from ._common import (InputError, MARKERS, best_handle, color, cross, draw_best, draw_series,
                      flag_columns, hardware_text, legend, new_figure, percent, place_notes,
                      rejects_more_than, set_title, short_tokens, source_column_needed,
                      source_text, status_handles, table_hardware, value_text, warn)


def check(t):
    """InputError unless the table can be drawn (read once, before any PNG)."""
    for c in ("policy", "max_num_batched_tokens", "capacity_req_s"):
        if c not in t.table.columns:
            raise InputError(f"missing dataset /capacity/{c}")


def source_label(split, values, policy):
    """'GPU, model, TP n, file: policy' with only the parts known and varying."""
    parts = []
    for col, v in zip(split, values):
        if v in ("", "n/a", "nan"):
            continue
        parts.append(f"TP {v}" if col == "tp" else v)
    return (", ".join(parts) + ": " if parts else "") + policy


def heavy_rule(max_share):
    """What a hollow row means: servesim's flag (no capacity: it rejects more than the search's
    --max-rejected-share at every rate), or with MAX_SHARE the row's own rejected share."""
    if max_share is None:
        return "rejects requests at every rate (more than the search's --max-rejected-share)"
    return f"rejects > {percent(max_share)} of requests"


def plot(path, stem, parts, args, out):
    """Capacity against token budget, one line per policy (and per file, GPU or model when
    several are drawn together). PARTS: (file stem, file path, Table)."""
    name = f"{stem}_capacity.png"
    heavy, over = [], []
    for _, p, t in parts:
        h, o = flag_columns(out, p, t.table)
        heavy.append(rejects_more_than(t.table, args.max_rejected_share, h))
        over.append(o)
    frames = [t.table.assign(file=s) for s, _, t in parts]
    cap = pd.concat(frames, ignore_index=True)
    heavy, over = np.concatenate(heavy), np.concatenate(over)
    n = len(cap)
    b = cap["max_num_batched_tokens"].to_numpy(dtype=float)
    c = cap["capacity_req_s"].to_numpy(dtype=float)
    ok = np.isfinite(b) & (b > 0) & np.isfinite(c)
    if n == 0 or not ok.any():
        warn(path, f"nothing to draw in {name}: " +
             ("the table is empty" if n == 0 else "no row has a capacity and a positive budget")
             + "; skipped")
        return
    if (~ok).any():
        warn(path, f"{name}: {int((~ok).sum())} of {n} rows have no capacity or no positive "
                   "budget; left out")
    slos = sorted({str(t.attrs["slo"]) for _, _, t in parts if t.attrs.get("slo")})
    share = cap["rejected_share"].to_numpy(dtype=float) if "rejected_share" in cap.columns \
        else np.full(n, math.nan)
    # servesim's note column: "at least..." is a lower bound (the SLO held at --rate-max), and
    # "rejects..." a configuration that refuses requests at any rate (capacity 0).
    note_text = [str(v) for v in cap["note"]] if "note" in cap.columns else [""] * n
    lower = np.array([t.startswith("at least") for t in note_text], dtype=bool)
    rejects_any = np.array([t.startswith("rejects") for t in note_text], dtype=bool)
    replicas = cap["replicas"].to_numpy(dtype=float) if "replicas" in cap.columns \
        else np.full(n, math.nan)
    labels_col = [str(v) for v in cap["label"]] if "label" in cap.columns else None

    # Lines: policy, plus whatever tells files or hardware apart.
    split = [col for col in ("gpu", "model", "tp")
             if col in cap.columns and cap[col][ok].map(value_text).nunique() > 1]
    if source_column_needed([(s, f) for f, (s, _, _) in zip(frames, parts)]):
        split.append("file")

    def line_key(i):
        return tuple(value_text(cap[col].iat[i]) for col in split) + (str(cap["policy"].iat[i]),)
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
        labels.append(source_label(split, key[:-1], key[-1]))
        for k, i in enumerate(idx):
            tag = []
            if heavy[i]:
                tag.append("rejects requests" if rejects_any[i] or not math.isfinite(share[i])
                           else f"rejects {percent(share[i])}")
            if over[i]:
                cross(ax, b[i], shown[k])
                tag.append("overloaded")
            if lower[i]:
                tag.append(f">= {c[i]:g} (SLO met at --rate-max)")
            if math.isfinite(replicas[i]) and replicas[i] > 0:
                tag.append(f"{int(replicas[i])} repl.")
            if tag:
                notes.append((", ".join(tag), b[i], shown[k],
                              "dimgray" if heavy[i] or over[i] else col))
    sh, sl = status_handles(int((heavy & ok).sum()), int((over & ok).sum()),
                            heavy_rule(args.max_rejected_share), "row")
    best_rec = None
    if best is not None:
        shown_best = min(c[best], top) if top is not None and lower[best] else c[best]
        draw_best(ax, "capacity", b[best], shown_best)
        what = source_label(split, line_key(best)[:-1],
                            labels_col[best] if labels_col else line_key(best)[-1])
        sh.append(best_handle("capacity"))
        sl.append(f"highest capacity (clean rows): {what}, {c[best]:g} req/s")
        best_rec = {"label": labels_col[best] if labels_col else None,
                    "policy": str(cap["policy"].iat[best]), "file": str(cap["file"].iat[best]),
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
    files = [s for s, _, _ in parts]
    old = [s for s, p, _ in parts if p in out.warned]
    set_title(fig, [
        f"{stem}: highest request rate meeting the SLO" + (f" ({'; '.join(slos)})" if slos else "")
        + (f" ({len(files)} files: {', '.join(files)})" if len(files) > 1 else ""),
        hardware_text(table_hardware(cap[ok]))] +
        ([f"{', '.join(old)}: written before servesim flagged rows, so no row of it is marked "
          "rejecting or overloaded"] if old else []) +
        ([] if best is not None else
         [f"NO CLEAN ROW: every row is overloaded or {heavy_rule(args.max_rejected_share)}; "
          "none is best"]),
        source_text(cap["cost_source"][ok] if "cost_source" in cap.columns else [""]))
    ax.grid(True, alpha=0.3)
    place_notes(ax, notes)
    out.save(fig, name, {
        "kind": "capacity", "files": files, "best": best_rec,
        "max_rejected_share": args.max_rejected_share,
        "flagged": [{"label": labels_col[i] if labels_col else None,
                     "file": str(cap["file"].iat[i]),
                     "why": (["rejects"] if heavy[i] else []) + (["overloaded"] if over[i] else [])}
                    for i in np.nonzero(ok & (heavy | over))[0]]})
