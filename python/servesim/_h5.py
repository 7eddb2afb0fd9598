"""Readers of the HDF5 files servesim writes (results, sweeps, capacity tables, traces) into
pandas, with proper dtypes: text as str, integer columns as integers (and the counts the sweep and
capacity tables store as reals as nullable integers), status and rejection reason as categories.
Layouts: docs/manual/run-and-compare.md (results), sweeps.md and capacity.md (tables),
traces.md (traces). A file damaged, cut short or written by something else is an Error naming
the file and, where known, the attribute or column that could not be read."""
import json

import h5py
import numpy as np
import pandas as pd

from .errors import Error

MAGICS = {"servesim-results": "results", "servesim-sweep": "sweep",
          "servesim-capacity": "capacity", "servesim-capacity-plan": "capacity-plan",
          "servesim-trace": "trace"}
VERSION = 1  # every layout's, as analysis/results.cpp, sweep.cpp and traces/trace_store.cpp write


class Reading:
    """Where a reader is in file PATH: the object (a group's name) and the field (an attribute
    or a column) it reads, so that anything going wrong there is an Error naming them."""

    def __init__(self, path):
        self.path = str(path)
        self.where = ""
        self.field = ""

    def at(self, where, field):
        self.where, self.field = where, field
        return self

    def error(self, reason):
        """An Error at the current place, for REASON."""
        if self.where and self.where != "/":
            reason = "in %s: %s" % (self.where, reason)
        field = "field '%s': " % self.field if self.field else ""
        return Error("%s: %s%s" % (self.path, field, reason), file=self.path, field=self.field,
                     reason=reason)

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        failed = kind is not None and issubclass(kind, Exception)
        if not failed or issubclass(kind, (Error, MemoryError)):
            return False
        if isinstance(e, KeyError):
            reason = "missing: %s" % (e.args[0] if e.args else e)
        else:
            reason = "cannot read it (%s: %s)" % (kind.__name__, e)
        raise self.error(reason) from None


def open_file(path):
    """PATH opened for reading, or an Error naming it."""
    try:
        return h5py.File(path, "r")
    except Exception as e:  # OSError for most; h5py raises others for some damage
        if isinstance(e, MemoryError):
            raise
        raise Error("%s: cannot read as HDF5: %s" % (path, e), file=str(path),
                    reason=str(e)) from None


def text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.ndarray) and v.shape == ():
        return text(v[()])
    return str(v)


def attr_text(obj, name, default="", r=None):
    if r is not None:
        r.at(obj.name, name)
    return text(obj.attrs[name]) if name in obj.attrs else default


def attr_json(r, obj, name, default):
    """Attribute NAME of OBJ as JSON (DEFAULT's type: a dict or list), DEFAULT if absent."""
    t = attr_text(obj, name, "", r)
    if not t.strip():
        return default
    try:
        v = json.loads(t)
    except ValueError as e:
        raise r.error("not JSON: %s" % e) from None
    if not isinstance(v, type(default)):
        raise r.error("JSON %s, expected an object" % type(v).__name__)
    return v


def need_attr(r, obj, name):
    """Attribute NAME of OBJ as text; an Error naming it if absent."""
    r.at(obj.name, name)
    if name not in obj.attrs:
        raise r.error("missing attribute '%s'" % name)
    return attr_text(obj, name)


def number_attr(r, obj, name, default=float("nan")):
    r.at(obj.name, name)
    if name not in obj.attrs:
        return default
    v = attr_value(obj.attrs[name])
    if isinstance(v, str) or not isinstance(v, (int, float, np.number)):
        raise r.error("%r is not a number" % (v,))
    return float(v)


def subgroup(r, g, name):
    """Group NAME of G; an Error naming it if absent or not a group."""
    r.at(g.name, name)
    if name not in g or not isinstance(g[name], h5py.Group):
        raise r.error("missing group '%s'" % name)
    return g[name]


def kind_of(path):
    """results, sweep, capacity or trace, from the file's magic attribute; an Error for a
    layout version this reader does not know (as servesim's own readers refuse it)."""
    with open_file(path) as f, Reading(path) as r:
        magic = attr_text(f, "magic", "", r)
        r.at("/", "version")
        version = attr_value(f.attrs["version"]) if "version" in f.attrs else None
        if isinstance(version, bool) or not isinstance(version, (int, str)):
            version = None if version is None else repr(version)
    if magic not in MAGICS:
        raise Error("%s: not a file servesim wrote (magic '%s')" % (path, magic), file=path,
                    field="magic", reason="not a servesim file")
    if version != VERSION:
        raise Error("%s: field 'version': layout version %s, this reader knows %d" %
                    (path, version, VERSION), file=path, field="version",
                    reason="unsupported layout version")
    return MAGICS[magic]


def column(r, g, name, length=None):
    """Column NAME of group G: a 1-D dataset (of LENGTH rows, when given)."""
    r.at(g.name, name)
    if name not in g:
        raise r.error("missing column '%s'" % name)
    ds = g[name]
    if not isinstance(ds, h5py.Dataset) or ds.ndim != 1:
        raise r.error("not a column (a 1-D dataset)")
    if length is not None and ds.shape[0] != length:
        raise r.error("%d rows where the group's other columns have %d" % (ds.shape[0], length))
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
              "kv_blocks_used", "cached_tokens", "flops", "bytes", "power_w"],
    "windows": ["start_s", "end_s", "arrivals", "completions", "ttft_ms_p50", "ttft_ms_p95",
                "e2e_ms_p50", "e2e_ms_p95", "output_tokens_p50", "output_tokens_p95", "otps",
                "input_tokens_p50", "queue_ms_p50"],
    "itl": ["upper_ms", "count"],
}


def ordered(names, order):
    """Column NAMES (as HDF5 lists a group's members: by name) with ORDER's first."""
    names = list(names)
    if order:
        names = [n for n in order if n in names] + [n for n in names if n not in order]
    return names


def group_frame(r, g, order=None):
    """A group of equal-length 1-D columns: ORDER's first, then the rest."""
    names = ordered(g.keys(), order)
    cols, length = {}, None
    for n in names:
        cols[n] = column(r, g, n, length)
        length = len(cols[n])
    return pd.DataFrame(cols, columns=names)


STATUS = ["completed", "rejected"]


def requests_frame(r, g):
    """A run's requests: status (completed | rejected) and reason (none | context_length | ...)
    as categories from the status codes."""
    df = group_frame(r, g, ORDER["requests"])
    return with_status(r, df, attr_text(g, "status_codes", "", r), g.name)


def with_status(r, df, status_codes, where):
    """DF with its status codes (STATUS_CODES: 'CODE NAME' lines) as the status and reason
    categories."""
    codes = {}
    for line in status_codes.splitlines():
        k, _, name = line.partition(" ")
        try:
            codes[int(k)] = name
        except ValueError:
            raise r.error("%r is not 'CODE NAME'" % line) from None
    r.at(where, "status")
    if "status" not in df.columns:
        raise r.error("missing column 'status'")
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
    with open_file(path) as f, Reading(path) as r:
        workload = attr_json(r, f, "workload", {})
        period_s = number_attr(r, f, "period_s")
        names = need_attr(r, f, "runs").splitlines()
        if not names:
            raise r.error("no runs listed")
        groups = subgroup(r, f, "runs")
        for name in names:
            g = subgroup(r, groups, name)
            runs[name] = {
                "label": attr_text(g, "label", name, r),
                "baseline_otps": number_attr(r, g, "baseline_otps"),
                "flags": {k: bool(number_attr(r, g, k)) for k in ("rejection_heavy", "overloaded")
                          if k in g.attrs},
                "summary": summary_of(r, g),
                "requests": requests_frame(r, subgroup(r, g, "requests")),
                "steps": group_frame(r, g["steps"], ORDER["steps"]) if "steps" in g
                else pd.DataFrame(),
                "windows": group_frame(r, g["windows"], ORDER["windows"]) if "windows" in g
                else pd.DataFrame(),
                "itl": group_frame(r, g["itl"], ORDER["itl"]) if "itl" in g else pd.DataFrame(),
            }
        alarm = {}
        for k in ("alarm_fraction", "alarm_baseline_run", "alarm_threshold_otps"):
            if k in f.attrs:
                alarm[k] = attr_value(f.attrs[r.at("/", k).field])
    return runs, workload, period_s, alarm


def memory_frame(columns, order):
    """A table servesim handed back in memory ({column: numpy array}) as group_frame reads it
    from a file: the same columns, order and dtypes."""
    names = ordered(sorted(columns), order)
    return pd.DataFrame({n: columns[n] for n in names})  # columns= would take 4x as long


def results_in_memory(image):
    """What read_results returns, from the results `servesim run` or `compare` handed back in
    memory (_servesim.captured): no file between them."""
    r = Reading("(results in memory)")
    runs = {}
    for name, g in zip(image["runs"], image["run_groups"]):
        runs[name] = {
            "label": g["label"],
            "baseline_otps": g["baseline_otps"],
            "flags": {k: bool(g[k]) for k in ("rejection_heavy", "overloaded")},
            "summary": json.loads(g["summary"]),
            "requests": with_status(r, memory_frame(g["requests"], ORDER["requests"]),
                                    g["status_codes"], "/runs/%s/requests" % name),
            "steps": memory_frame(g["steps"], ORDER["steps"]) if "steps" in g
            else pd.DataFrame(),
            "windows": memory_frame(g["windows"], ORDER["windows"]),
            "itl": memory_frame(g["itl"], ORDER["itl"]),
        }
    workload = json.loads(image["workload"]) if image["workload"].strip() else {}
    alarm = {k: image[k] for k in ("alarm_fraction", "alarm_baseline_run", "alarm_threshold_otps")}
    return runs, workload, image["period_s"], alarm


def summary_of(r, g):
    """A run's summary attribute (its --json object); an Error naming the run if absent."""
    r.at(g.name, "summary")
    if "summary" not in g.attrs:
        raise r.error("missing attribute 'summary'")
    return attr_json(r, g, "summary", {})


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


def read_table(path, group, required=True):
    """A sweep's or a capacity search's table (GROUP: points, intervals, capacity or a day
    plan's windows): text, integer and real columns in the file's order, the reals the file
    names as counts (count_columns) as nullable integers where whole; and the file's
    attributes. None when the file has no GROUP and it is not REQUIRED (a sweep written before
    intervals were)."""
    with open_file(path) as f, Reading(path) as r:
        # A list attribute servesim leaves empty is written as " " (HDF5 has no empty string).
        attrs = {}
        for k in f.attrs:
            attrs[k] = attr_value(f.attrs[r.at("/", k).field])
        attrs = {k: v.strip() if isinstance(v, str) and not v.strip() else v
                 for k, v in attrs.items()}
        if group not in f and not required:
            return None, attrs
        order = ["point"] + [c for k in ("text_columns", "int_columns", "real_columns")
                             for c in str(attrs.get(k, "")).splitlines()]
        if group == "intervals":  # each metric's mean, then its interval; the replicates
            order = [c for c in order if c in f[group]] + ["replicates"]
            order = [x for c in order for x in (c, c + "_ci95")]
        df = group_frame(r, subgroup(r, f, group), order)
        counts = set(str(attrs.get("count_columns", "")).splitlines())
        for name in df.columns:
            r.at(f[group].name, name)
            if name in counts and whole(df[name].to_numpy(dtype=float)):
                df[name] = df[name].astype(float).where(np.isfinite(df[name]),
                                                        np.nan).astype("Int64")
    return df, attrs


def read_trace(path):
    """A servesim HDF5 trace's requests: arrival_s, input_tokens, output_tokens and, when the
    trace has them, priority, lora (with its adapter names), session_id and request_class."""
    with open_file(path) as f, Reading(path) as r:
        arrival_s = column(r, f, "arrival_s")
        n = len(arrival_s)
        df = pd.DataFrame({
            "arrival_s": arrival_s,
            "input_tokens": column(r, f, "input_tokens", n).astype(np.int64),
            "output_tokens": column(r, f, "output_tokens", n).astype(np.int64),
        })
        for name in ("priority", "lora", "session_id"):
            if name in f:
                df[name] = column(r, f, name, n).astype(np.int64)
        if "request_class" in f:
            names = attr_text(f, "class_names", "", r).splitlines()
            codes = column(r, f, "request_class", n).astype(int)
            if len(codes) and (codes.min() < -1 or codes.max() >= len(names)):
                raise r.error("class codes outside the %d class_names" % len(names))
            df["request_class"] = pd.Categorical.from_codes(codes, categories=names)
        info = {k: attr_text(f, k, "", r) for k in ("source_file", "source_format", "options")}
        info["timed"] = bool(number_attr(r, f, "timed", 1))
        info["lora_names"] = attr_text(f, "lora_names", "", r).splitlines()
    return df, info
