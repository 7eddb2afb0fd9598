"""Readers of the HDF5 files servesim writes (results, sweeps, capacity tables, traces) into
pandas, with proper dtypes: text as str, integer columns as integers (and the counts the sweep and
capacity tables store as reals as nullable integers), status and rejection reason as categories.
Layouts: docs/manual/run-and-compare.md (results), sweeps.md and capacity.md (tables),
traces.md (traces)."""
import json

import h5py
import numpy as np
import pandas as pd

from .errors import Error

MAGICS = {"servesim-results": "results", "servesim-sweep": "sweep",
          "servesim-capacity": "capacity", "servesim-trace": "trace"}
VERSION = 1  # every layout's, as analysis/results.cpp, sweep.cpp and traces/trace_store.cpp write


def text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.ndarray) and v.shape == ():
        return text(v[()])
    return str(v)


def attr_text(obj, name, default=""):
    return text(obj.attrs[name]) if name in obj.attrs else default


def kind_of(path):
    """results, sweep, capacity or trace, from the file's magic attribute; an Error for a
    layout version this reader does not know (as servesim's own readers refuse it)."""
    try:
        with h5py.File(path, "r") as f:
            magic = attr_text(f, "magic")
            version = attr_value(f.attrs["version"]) if "version" in f.attrs else None
    except OSError as e:
        raise Error("%s: cannot read as HDF5: %s" % (path, e), file=path, reason=str(e)) from None
    if magic not in MAGICS:
        raise Error("%s: not a file servesim wrote (magic '%s')" % (path, magic), file=path,
                    field="magic", reason="not a servesim file")
    if version != VERSION:
        raise Error("%s: field 'version': layout version %s, this reader knows %d" %
                    (path, version, VERSION), file=path, field="version",
                    reason="unsupported layout version")
    return MAGICS[magic]


def column(ds):
    a = ds[()]
    if a.dtype.kind == "S":
        return np.array([v.decode("utf-8") for v in a], dtype=object)
    return a


# The tables' columns in the order the CSV and the docs give them (HDF5 keeps names sorted).
ORDER = {
    "requests": ["id", "arrival_s", "input_tokens", "output_tokens", "first_token_s",
                 "finish_s", "ttft_ms", "e2e_ms", "tpot_ms", "otps", "max_itl_ms", "queue_ms",
                 "preemptions", "cached_tokens", "status", "kv_loaded_tokens", "kv_load_ms"],
    "steps": ["start_s", "duration_s", "prefill_tokens", "decode_tokens", "batch_size",
              "kv_blocks_used", "cached_tokens", "flops", "bytes"],
    "windows": ["start_s", "end_s", "arrivals", "completions", "ttft_ms_p50", "ttft_ms_p95",
                "e2e_ms_p50", "e2e_ms_p95", "output_tokens_p50", "output_tokens_p95", "otps",
                "input_tokens_p50", "queue_ms_p50"],
    "itl": ["upper_ms", "count"],
}


def group_frame(g, order=None):
    """A group of equal-length 1-D columns: ORDER's first, then the rest."""
    names = list(g.keys())
    listed = order
    if listed:
        names = [n for n in listed if n in names] + [n for n in names if n not in listed]
    return pd.DataFrame({n: column(g[n]) for n in names}, columns=names)


STATUS = ["completed", "rejected"]


def requests_frame(g):
    """A run's requests: status (completed | rejected) and reason (none | context_length | ...)
    as categories from the status codes."""
    df = group_frame(g, ORDER["requests"])
    codes = {}
    for line in attr_text(g, "status_codes").splitlines():
        k, _, name = line.partition(" ")
        codes[int(k)] = name
    at = list(df.columns).index("status")
    status = df.pop("status").astype(int)
    reasons = ["none"] + sorted({n.split(":", 1)[1] for n in codes.values() if ":" in n})
    df.insert(at, "status", pd.Categorical(
        ["completed" if s == 0 else "rejected" for s in status], categories=STATUS))
    df.insert(at + 1, "reason", pd.Categorical(
        ["none" if s == 0 else codes.get(int(s), "rejected:?").split(":", 1)[-1]
         for s in status], categories=reasons))
    return df


def read_results(path):
    """Every run of a results file: (runs {name: parts}, workload, period_s)."""
    runs = {}
    with h5py.File(path, "r") as f:
        workload = json.loads(attr_text(f, "workload", "{}") or "{}")
        period_s = float(f.attrs["period_s"]) if "period_s" in f.attrs else float("nan")
        for name in attr_text(f, "runs").splitlines():
            g = f["runs"][name]
            runs[name] = {
                "label": attr_text(g, "label", name),
                "baseline_otps": float(g.attrs["baseline_otps"]) if "baseline_otps" in g.attrs
                else float("nan"),
                "flags": {k: bool(attr_value(g.attrs[k])) for k in ("rejection_heavy", "overloaded")
                          if k in g.attrs},
                "summary": summary_of(path, g),
                "requests": requests_frame(g["requests"]),
                "steps": group_frame(g["steps"], ORDER["steps"]) if "steps" in g
                else pd.DataFrame(),
                "windows": group_frame(g["windows"], ORDER["windows"]) if "windows" in g
                else pd.DataFrame(),
                "itl": group_frame(g["itl"], ORDER["itl"]) if "itl" in g else pd.DataFrame(),
            }
        alarm = {k: attr_value(f.attrs[k]) for k in ("alarm_fraction", "alarm_baseline_run",
                                                      "alarm_threshold_otps") if k in f.attrs}
    return runs, workload, period_s, alarm


def summary_of(path, g):
    """A run's summary attribute (its --json object); an Error naming the run if absent."""
    if "summary" not in g.attrs:
        raise Error("%s: %s: missing attribute 'summary'" % (path, g.name), file=path,
                    field="summary", reason="missing attribute")
    return json.loads(attr_text(g, "summary"))


def attr_value(v):
    if isinstance(v, (bytes, str)):
        return text(v)
    if isinstance(v, np.ndarray) and v.shape == ():
        return attr_value(v[()])
    if isinstance(v, np.generic):
        return v.item()
    return v


def whole(values):
    v = values[np.isfinite(values)]
    return np.all(v == np.round(v))


def read_table(path, group):
    """A sweep's or a capacity search's table (GROUP: points, intervals or capacity): text,
    integer and real columns in the file's order, the reals the file names as counts
    (count_columns) as nullable integers where whole; and the file's attributes. None when the
    file has no GROUP (a sweep written before intervals were)."""
    with h5py.File(path, "r") as f:
        # A list attribute servesim leaves empty is written as " " (HDF5 has no empty string).
        attrs = {k: attr_value(v) for k, v in f.attrs.items()}
        attrs = {k: v.strip() if isinstance(v, str) and not v.strip() else v
                 for k, v in attrs.items()}
        if group not in f:
            return None, attrs
        order = ["point"] + [c for k in ("text_columns", "int_columns", "real_columns")
                             for c in str(attrs.get(k, "")).splitlines()]
        if group == "intervals":  # each metric's mean, then its interval; the replicates
            order = [c for c in order if c in f[group]] + ["replicates"]
            order = [x for c in order for x in (c, c + "_ci95")]
        df = group_frame(f[group], order)
    counts = set(str(attrs.get("count_columns", "")).splitlines())
    for name in df.columns:
        if name in counts and whole(df[name].to_numpy(dtype=float)):
            df[name] = df[name].astype(float).where(np.isfinite(df[name]), np.nan).astype("Int64")
    return df, attrs


def read_trace(path):
    """A servesim HDF5 trace's requests: arrival_s, input_tokens, output_tokens and, when the
    trace has them, priority, lora (with its adapter names), session_id and request_class."""
    with h5py.File(path, "r") as f:
        df = pd.DataFrame({
            "arrival_s": f["arrival_s"][()],
            "input_tokens": f["input_tokens"][()].astype(np.int64),
            "output_tokens": f["output_tokens"][()].astype(np.int64),
        })
        for name in ("priority", "lora", "session_id"):
            if name in f:
                df[name] = f[name][()].astype(np.int64)
        if "request_class" in f:
            names = attr_text(f, "class_names").splitlines()
            df["request_class"] = pd.Categorical.from_codes(f["request_class"][()].astype(int),
                                                            categories=names)
        info = {k: attr_text(f, k) for k in ("source_file", "source_format", "options")}
        info["timed"] = bool(int(f.attrs["timed"])) if "timed" in f.attrs else True
        info["lora_names"] = attr_text(f, "lora_names").splitlines()
    return df, info
