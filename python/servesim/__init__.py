"""servesim from Python: the simulator's commands as functions, their results as pandas frames.

    import servesim
    r = servesim.run(scheduler="vllm-v1", num_requests=2000, request_rate=9)
    r.summary["ttft_ms"]["p99"], r.requests.ttft_ms.median(), r.steps, r.windows

Keyword arguments are `servesim run`'s flags with underscores (vLLM's spellings:
max_num_batched_tokens, enable_prefix_caching, speculative_config, ...): the same typed
configuration the command line builds, the same checks, the same errors (servesim.Error, with the
file, line and field), and the same numbers, byte for byte: each function runs the command line's
own code, with the GIL released while it simulates. Policies written in Python (an admission key,
a preemption victim, a router's scores) plug into run and compare.

Functions: run, compare, sweep, capacity, validate, check, diagnose, read; classes Result,
Results, Comparison, Table (sweeps, capacity searches and day plans), Trace, Verdict. Plots:
servesim.plot. Pages: servesim.report.write(files, "page.html"), or report="page.html" to run,
compare, sweep, capacity, diagnose and check (one self-contained HTML page of what they return).
"""
import contextlib
import json
import numbers
import os
import tempfile

import pandas as pd

from . import _h5
from ._args import (a_kind, checked, core, flag_kind, flag_name, keyword_error, option_flags,
                    refuse, run_flags, value_text)
from .errors import Error

__all__ = ["run", "compare", "sweep", "capacity", "validate", "check", "diagnose", "read",
           "report", "command", "Result", "Results", "Comparison", "Table", "Trace", "Verdict",
           "Error"]


POLICIES = ("admission_key", "preemption_victim", "router_score")


def command(*args, admission_key=None, preemption_victim=None, router_score=None):
    """Runs `servesim ARGS...` in this process and returns what it prints; raises Error."""
    policies = (admission_key, preemption_victim, router_score)
    status, out = core().command(_argv(args, policies), *policies)
    if status != 0:
        raise Error("servesim %s exited with status %d:\n%s" % (args[0], status, out))
    return out


def _argv(args, policies):
    """ARGS as the command line's text, after checking them and the POLICIES."""
    argv = []
    for i, a in enumerate(args):
        a = os.fspath(a) if isinstance(a, os.PathLike) else a
        a = a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a)
        if "\0" in a:
            raise Error("argument %d (%r): contains a NUL character, which would cut it short"
                        % (i, a), field=a.split("=", 1)[0].lstrip("-") if i else "command",
                        reason="contains a NUL character")
        argv.append(a)
    if not argv:
        raise Error("no command given (servesim.command('run', ...))", field="command",
                    reason="no command given")
    for name, policy in zip(POLICIES, policies):
        if policy is not None and not callable(policy):
            raise Error("field '%s': a policy is a function (or None), not %s" %
                        (name, a_kind(policy)), field=name, reason="not callable")
    return argv


def _captured(args, policies):
    """`servesim run` or `compare` ARGS with POLICIES, its results kept in memory rather than
    written to --out and --json and read back: (what it printed, its JSON text, its Results)."""
    order = [policies.get(k) for k in POLICIES]
    status, text, json_text, image = core().captured(_argv(args, order), *order)
    if status != 0:
        raise Error("servesim %s exited with status %d:\n%s" % (args[0], status, text))
    runs, workload, period_s, alarm = _h5.results_in_memory(image)
    return text, json_text, _results_of(runs, workload, period_s, alarm)


class Result:
    """One run: `summary` (the run's JSON summary, as `run --json` writes it), `requests`,
    `steps`, `windows` and `itl` (pandas frames: the results file's tables, with status and
    reason as categories), `config` (the resolved configuration), `label`, `workload`, and
    `text` (what `servesim run` prints) when it was simulated here; `baseline_otps`: its whole-log
    p50 OTPS as `servesim diagnose` takes a baseline's (the alarm threshold's base); `flags`:
    rejection_heavy and overloaded, servesim's judgement that the run is not comparable."""

    def __init__(self, label, summary, requests, steps, windows, itl, workload, text="",
                 json_text="", baseline_otps=float("nan"), flags=None):
        self.label = label
        self.baseline_otps = baseline_otps
        self.flags = flags or {}
        self.summary = summary
        self.requests = requests
        self.steps = steps
        self.windows = windows
        self.itl = itl
        self.workload = workload
        self.text = text
        self.json_text = json_text

    @property
    def config(self):
        return self.summary.get("config", {})

    @property
    def intervals(self):
        """The prediction intervals of the predicted figures (run --interval): a frame indexed
        by figure (ttft_ms.mean, ...) with its point, lo and hi; empty with interval=None."""
        p = self.summary.get("prediction_intervals", {})
        rows = []
        for name, (lo, hi) in p.get("figures", {}).items():
            metric, _, stat = name.rpartition(".")
            point = (self.summary.get(metric, {}).get(stat) if metric else
                     self.summary.get("throughput", {}).get(name))
            rows.append({"figure": name, "point": point, "lo": lo, "hi": _upper(hi)})
        df = pd.DataFrame(rows, columns=["figure", "point", "lo", "hi"]).set_index("figure")
        df.attrs["level"] = p.get("level", 0)
        df.attrs["extrapolated"] = p.get("extrapolated", [])
        return df

    def __repr__(self):
        def figure(*keys):
            v = self.summary
            for k in keys:
                v = v.get(k) if isinstance(v, dict) else None
            return v
        return "<servesim.Result %s: %s requests, TTFT p50 %s ms, TPOT p50 %s ms>" % (
            self.label, figure("requests", "total"), figure("ttft_ms", "p50"),
            figure("tpot_ms", "p50"))


class Results(dict):
    """The runs of a results file, by name (their label, or a check scenario's name), in order;
    `workload` and `period_s` as the file records them; `alarm`: servesim diagnose's OTPS alarm
    with the first run as baseline (alarm_fraction, alarm_baseline_run, alarm_threshold_otps)."""

    def __init__(self, runs, workload, period_s, path="", alarm=None):
        super().__init__(runs)
        self.workload = workload
        self.period_s = period_s
        self.path = path
        self.alarm = alarm or {}


def _upper(hi):
    """An interval's upper end: JSON writes an unbounded one (an MLA model's) as null."""
    return float("inf") if hi is None else hi


def summary_row(summary):
    """A run's summary as one flat row: nested keys joined with '_' (ttft_ms_p99); each
    prediction interval's ends as FIGURE_lo and FIGURE_hi (ttft_ms_p99_lo)."""
    row = {}
    figures = summary.get("prediction_intervals", {}).get("figures", {})
    for name, (lo, hi) in figures.items():
        row[name.replace(".", "_") + "_lo"] = lo
        row[name.replace(".", "_") + "_hi"] = _upper(hi)

    def walk(prefix, v):
        if isinstance(v, dict):
            for k, x in v.items():
                if prefix == "" and k in ("config", "metrics_as"):
                    continue
                walk(prefix + "_" + k if prefix else k, x)
        elif not isinstance(v, list):
            row[prefix] = v
    walk("", summary)
    return row


class Comparison:
    """Several policies on the same requests: `runs` (label -> Result, in order), `table` (one
    row per run: its summary flattened, ttft_ms_p99 and so on), `text` (what compare prints)."""

    def __init__(self, runs, text=""):
        self.runs = runs
        self.text = text
        self.table = pd.DataFrame([summary_row(r.summary) for r in runs.values()],
                                  index=pd.Index(list(runs), name="label"))

    def __getitem__(self, label):
        return self.runs[label]

    def __repr__(self):
        return "<servesim.Comparison of %s>" % ", ".join(self.runs)


class Table:
    """A sweep's points, a capacity search's configurations or a day plan's windows
    (capacity --over-time): `table` (a frame, one row each: the varied flags as text, the
    summary metrics, counts as integers, the flags rejection_heavy and overloaded, cost_source;
    a plan's window, rate and replicas), `kind` (sweep, capacity or capacity-plan), `attrs` (the
    file's attributes: the grid, its id, the shard, ...), `text`; for a sweep `intervals`: one
    row per configuration over its replicates (seeds), each metric's mean and its 95% interval's
    half-width (METRIC_ci95), as servesim computes them."""

    def __init__(self, kind, table, attrs, text="", csv_text="", intervals=None):
        self.kind = kind
        self.intervals = intervals
        self.table = table
        self.attrs = attrs
        self.text = text
        self.csv_text = csv_text

    def __repr__(self):
        return "<servesim.Table (%s), %d rows>" % (self.kind, len(self.table))


class Trace:
    """A workload's requests: `requests` (arrival_s, input_tokens, output_tokens, and priority,
    lora, session_id, request_class when it has them) and `info` (its source and options)."""

    def __init__(self, requests, info=None, path=""):
        self.requests = requests
        self.info = info or {}
        self.path = path

    @classmethod
    def read(cls, path, **import_options):
        """Any trace servesim reads (Azure, BurstGPT, Mooncake, Vidur, csv, servesim HDF5),
        imported with `servesim trace import`'s options and what-if transforms
        (trace_format, col_arrival, window, time_scale, max_requests, ...)."""
        path = _path("path", path)
        if not import_options and _is_h5(path) and _h5.kind_of(path) == "trace":
            df, info = _h5.read_trace(path)
            return cls(df, info, path)
        with tempfile.TemporaryDirectory(prefix="servesim-") as d:
            out = os.path.join(d, "trace.h5")
            command("trace", "import", path, "-o", out, *run_flags(import_options))
            df, info = _h5.read_trace(out)
        return cls(df, info, path)

    @classmethod
    def from_frame(cls, df):
        """A DataFrame with arrival_s (seconds), input_tokens and output_tokens (and optionally
        priority and lora: adapter names or ids)."""
        if not isinstance(df, pd.DataFrame):
            raise Error("field 'workload': a DataFrame, not %s" % a_kind(df),
                        field="workload", reason="not a DataFrame")
        for c in ("arrival_s", "input_tokens", "output_tokens"):
            if c not in df.columns:
                raise Error("field '%s': the frame needs arrival_s, input_tokens and "
                            "output_tokens columns" % c, field=c, reason="missing column")
        return cls(df.reset_index(drop=True), {"source_format": "frame"})

    def write(self, path):
        """A servesim HDF5 trace (`servesim trace import`'s format)."""
        with tempfile.TemporaryDirectory(prefix="servesim-") as d, _frame_errors(d):
            source, flags = self._source(d)
            command("trace", "import", source, *flags, "-o", _path("path", path))

    def _source(self, d):
        """The file the trace comes from and how to read it: its own file, or the frame written
        as a csv (arrivals with repr: exact) and its columns named."""
        if self.path and self.info.get("source_format") != "frame":
            return str(self.path), []
        csv = os.path.join(d, FRAME_CSV)
        cols = [c for c in ("arrival_s", "input_tokens", "output_tokens", "priority", "lora")
                if c in self.requests.columns]
        frame = self.requests[cols].copy()
        for c in cols:  # a line break or NUL in a name would end the CSV's line or text there
            for row, v in enumerate(frame[c]):
                if isinstance(v, str) and ("\n" in v or "\r" in v or "\0" in v):
                    reason = "row %d: %r holds a line break or NUL character" % (row, v)
                    raise Error("the frame's column '%s', %s" % (c, reason), field=c,
                                reason=reason)
        frame["arrival_s"] = [repr(float(x)) for x in frame["arrival_s"]]
        frame.to_csv(csv, index=False)
        flags = ["--trace-format=csv", "--col-arrival=arrival_s", "--col-input=input_tokens",
                 "--col-output=output_tokens"]
        if "priority" in cols:
            flags.append("--col-priority=priority")
        if "lora" in cols:
            flags.append("--col-lora=lora")
        return csv, flags

    def __len__(self):
        return len(self.requests)

    def __repr__(self):
        return "<servesim.Trace %d requests>" % len(self.requests)


FRAME_CSV = "workload.csv"  # a frame's requests, as the module writes them for the command


@contextlib.contextmanager
def _frame_errors(d):
    """An Error about the csv a frame was written to (in D) as one about the frame's column
    and row (line 2 of the csv is row 0)."""
    try:
        yield
    except Error as e:
        if e.file != os.path.join(d, FRAME_CSV):
            raise
        where = "the frame's column '%s'" % e.field if e.field else "the frame"
        if e.line >= 2:
            where += ", row %d" % (e.line - 2)
        raise Error("%s: %s" % (where, e.reason), field=e.field, reason=e.reason) from None


@contextlib.contextmanager
def _frame_folder(workload):
    """A temporary folder for a DataFrame or Trace WORKLOAD's csv (the command reads a file),
    its errors named by the frame's column and row; None, and no folder, for any other."""
    if not isinstance(workload, (pd.DataFrame, Trace)):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="servesim-") as d, _frame_errors(d):
        yield d


def _path(name, value):
    """VALUE as a file name (text or a path-like), or an Error naming argument NAME."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    if not isinstance(value, str):
        raise Error("field '%s': a file name, not %s" % (name, a_kind(value)), field=name,
                    reason="not a file name")
    return checked(name, value)


def _is_h5(path):
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"\x89HDF\r\n\x1a\n"
    except OSError:
        return False


def _workload_flags(workload, d):
    if workload is None:
        return []
    if isinstance(workload, pd.DataFrame):
        workload = Trace.from_frame(workload)
    if isinstance(workload, Trace):
        source, flags = workload._source(d)
        return ["--trace=" + source, *flags]
    return ["--trace=" + _path("workload", workload)]


def _results(path):
    return _results_of(*_h5.read_results(path), path)


def _results_of(runs, workload, period_s, alarm, path=""):
    out = {}
    for name, p in runs.items():
        out[name] = Result(p["label"], p["summary"], p["requests"], p["steps"], p["windows"],
                           p["itl"], workload, baseline_otps=p["baseline_otps"], flags=p["flags"])
    return Results(out, workload, period_s, path, alarm)


def _page(page, path):
    """With PAGE (a file name; None: none), servesim.report's page of the file PATH there."""
    if page is not None:
        report.write([path], _path("report", page))


def _report_out(page, d, args):
    """ARGS with --out to a results file in folder D when a PAGE is wanted (run, compare): the
    page is drawn from that file. Returns the file ("" when no page)."""
    if page is None:
        return ""
    out = os.path.join(d, "results.h5")
    args.append("--out=" + out)
    return out


def _policies(kwargs):
    return {k: kwargs.pop(k, None) for k in POLICIES}


# The keywords run and compare set themselves, and why a user's would not do.
OWN = {
    "out": "the module takes the results in memory, not from a file (use servesim.command("
           "'run', ..., '--out=FILE') to keep one)",
    "json": "the module takes the JSON in memory (the result's json_text holds it; write that, or "
            "use servesim.command('run', ..., '--json=FILE'))",
    "help": "use servesim.command('run', '--help') for the flags",
    "no_steps": "use keep_steps=False",
}


def _refuse_own(config, workload, command_name, owned=None):
    """An Error for a keyword of CONFIG that COMMAND_NAME's function sets itself (OWNED: run's
    and compare's by default), or for trace= beside a WORKLOAD."""
    own = dict(OWN if owned is None else owned)
    own["help"] = "use servesim.command('%s', '--help') for the flags" % command_name
    refuse(config, own)
    if workload is not None and config.get("trace") is not None:
        raise keyword_error("trace", "given twice: as the workload and as trace=")


def _routed(policies, results):
    """An Error when router_score was given and a run had no fleet to route (it was never
    called)."""
    if policies.get("router_score") is None:
        return
    for r in results.values():
        if r.config.get("router") != "custom":
            reason = ("routes between replicas and was never called: give num_replicas > 1 "
                      "(a fleet)")
            raise Error("field 'router_score': " + reason, field="router_score", reason=reason)


def _interval_flags(interval):
    """--interval's flag: a level in (0, 1), or None/"none" for no intervals."""
    if interval is None:
        return ["--interval=none"]
    return ["--interval=" + checked("interval", value_text("interval", interval))]


def run(workload=None, *, keep_steps=True, period_s=None, interval=0.9, report=None, **config):
    """Simulates one configuration: `servesim run` with CONFIG's flags. WORKLOAD: a DataFrame of
    arrivals and lengths, a Trace, or a trace file (else config's generator flags). Policies in
    Python: admission_key(request) -> number (waiting requests by ascending key), 
    preemption_victim(running requests) -> id, router_score(request, replicas) -> scores.
    INTERVAL: the prediction intervals' level (None: none), in summary and `intervals`.
    REPORT: a file name for servesim.report's page of the run."""
    policies = _policies(config)
    _refuse_own(config, workload, "run")
    with _frame_folder(workload) as d, tempfile.TemporaryDirectory(prefix="servesim-") as pd:
        args = ["run", *run_flags(config), *_workload_flags(workload, d),
                *_interval_flags(interval)]
        if not keep_steps:
            args.append("--no-steps")
        if period_s is not None:
            args.append("--period-s=" + checked("period_s", value_text("period_s", period_s)))
        out = _report_out(report, pd, args)
        text, json_text, results = _captured(args, policies)
        _page(report, out)
    _routed(policies, results)
    r = next(iter(results.values()))
    r.text = text
    r.json_text = json_text
    return r


def compare(schedulers=None, workload=None, *, keep_steps=True, interval=0.9, report=None,
            **config):
    """Several policies on the same requests: `servesim compare` (default policies when
    SCHEDULERS is None), as a Comparison; its table has each figure's INTERVAL-level
    prediction interval as FIGURE_lo and FIGURE_hi (None: none). REPORT: a file name for
    servesim.report's page of the comparison."""
    policies = _policies(config)
    _refuse_own(config, workload, "compare")
    if schedulers is not None and config.get("scheduler") is not None:
        raise keyword_error("scheduler", "given twice: as schedulers and as scheduler=")
    with _frame_folder(workload) as d, tempfile.TemporaryDirectory(prefix="servesim-") as pd:
        sched = [] if schedulers is None else ["--scheduler=" + _schedulers(schedulers)]
        args = ["compare", *sched, *run_flags(config), *_workload_flags(workload, d),
                *_interval_flags(interval)]
        if not keep_steps:
            args.append("--no-steps")
        out = _report_out(report, pd, args)
        text, json_text, results = _captured(args, policies)
        _page(report, out)
    _routed(policies, results)
    rows = json.loads(json_text)["runs"]
    if rows and "replicates" in rows[0]:  # --num-seeds: one run per policy and seed
        c = Comparison({k: v for k, v in results.items()}, text)
        c.intervals = _intervals(rows)
    else:
        c = Comparison(dict(results), text)
    c.json_text = json_text
    return c


def _schedulers(schedulers):
    """compare's --scheduler value from SCHEDULERS: a name or a list of names."""
    if isinstance(schedulers, str):
        schedulers = [schedulers]
    elif not isinstance(schedulers, (list, tuple)):
        raise keyword_error("schedulers", "a scheduler's name or a list of them, not %s" %
                            a_kind(schedulers))
    for s in schedulers:
        if not isinstance(s, str):
            raise keyword_error("schedulers", "%r is not a scheduler's name" % (s,))
    return checked("schedulers", ",".join(schedulers))


def _intervals(rows):
    """compare --num-seeds: each policy's metrics over the seeds (mean, 95% interval, stddev,
    n) and, against the first policy, the paired change and its interval, as servesim computes
    them (analysis/replicates.hpp)."""
    out = []
    for row in rows:
        paired = row.get("paired_change", {}).get("metrics", {})
        for metric, m in row["replicates"]["metrics"].items():
            p = paired.get(metric, {})
            ci = m.get("ci95") or [None, None]
            pci = p.get("ci95") or [None, None]
            out.append({"label": row["label"], "metric": metric, "mean": m.get("mean"),
                        "ci95_low": ci[0], "ci95_high": ci[1], "stddev": m.get("stddev"),
                        "n": m.get("n"), "change": p.get("change"), "change_ci95_low": pci[0],
                        "change_ci95_high": pci[1], "test": p.get("test")})
    return pd.DataFrame(out)


def _table(kind, argv, d, page=None):
    h5, csv = os.path.join(d, kind + ".h5"), os.path.join(d, kind + ".csv")
    with _frame_errors(d):
        text = command(*argv, "--out=" + h5, "--csv=" + csv)
    t = _read_table(h5, _h5.kind_of(h5))
    _page(page, h5)
    t.text = text
    if os.path.exists(csv):
        with open(csv) as f:
            t.csv_text = f.read()
    return t


# Each table file's kind and the group holding its rows.
TABLE_GROUPS = {"sweep": "points", "capacity": "capacity", "capacity-plan": "windows"}


def _read_table(path, kind):
    df, attrs = _h5.read_table(path, TABLE_GROUPS[kind])
    intervals = _h5.read_table(path, "intervals", False)[0] if kind == "sweep" else None
    return Table(kind, df, attrs, intervals=intervals)


# The keywords sweep, capacity and validate set themselves.
TABLE_OWN = {
    "out": "the module writes its own table file and reads it back (use servesim.command(...) "
           "with --out=FILE to keep one)",
    "csv": "the module writes its own CSV (the table's csv_text holds it; write that, or use "
           "servesim.command(...) with --csv=FILE)",
}


def _axis(key, values):
    """One grid axis as its flag: --FLAG=V1,V2,..."""
    if not isinstance(key, str):
        raise Error("field 'grid': %r is not a flag's name" % (key,), field="grid",
                    reason="not a flag's name")
    kind = flag_kind(key)
    if isinstance(values, (str, bytes, dict, numbers.Number, os.PathLike)) or values is None:
        values = [values]
    else:
        try:
            values = list(values)
        except TypeError:
            raise keyword_error(key, "a grid axis is a value or a list of values, not %s" %
                                a_kind(values)) from None
    if not values:
        raise keyword_error(key, "a grid axis needs at least one value")
    texts = []
    for v in values:
        if v is None:
            raise keyword_error(key, "a grid value of None (give a value)")
        if kind == "switch" and not isinstance(v, bool):
            raise keyword_error(key, "a switch takes True or False")
        texts.append(checked(key, value_text(key, v)))
    return "--%s=%s" % (flag_name(key), core().flag_separator(flag_name(key)).join(texts))


def sweep(grid, *, jobs=None, workload=None, report=None, **config):
    """A grid of runs: `servesim sweep` with GRID's axes ({flag: [values]}) and CONFIG's fixed
    flags, JOBS threads (default: all cores). Returns a Table, one row per point. REPORT: a
    file name for servesim.report's page of it."""
    if not isinstance(grid, dict):
        raise keyword_error("grid", "a dict {flag: [values]}, not %s" % a_kind(grid))
    _refuse_own(config, workload, "sweep", TABLE_OWN)
    axes = [_axis(key, values) for key, values in grid.items()]
    with tempfile.TemporaryDirectory(prefix="servesim-") as d:
        argv = ["sweep", *axes, *run_flags(config), *_workload_flags(workload, d),
                *option_flags({"jobs": jobs})]
        return _table("sweep", argv, d, report)


def capacity(slo=None, *, workload=None, jobs=None, options=None, report=None, **config):
    """The highest request rate each configuration sustains under SLO ({metric: bound} or
    "ttft_p99_ms=2000,..."): `servesim capacity`. OPTIONS: its own flags (attainment,
    slo_ttft_ms, gpu_hour_cost, target_rate, over_time, ...). Returns a Table, one row per
    configuration; with over_time (a day plan), kind capacity-plan and one row per window.
    REPORT: a file name for servesim.report's page of it."""
    if isinstance(slo, dict):
        slo = ",".join("%s=%s" % (k, value_text("slo", v)) for k, v in slo.items())
    elif slo is not None and not isinstance(slo, str):
        raise keyword_error("slo", "{metric: bound} or text like 'ttft_p99_ms=2000', not %s" %
                            a_kind(slo))
    if options is not None and not isinstance(options, dict):
        raise keyword_error("options", "a dict of capacity's own flags, not %s" %
                            a_kind(options))
    own = dict(options or {})
    _refuse_own(own, None, "capacity", TABLE_OWN)
    _refuse_own(config, workload, "capacity", TABLE_OWN)
    own.update({k: v for k, v in (("slo", slo), ("jobs", jobs)) if v is not None})
    with tempfile.TemporaryDirectory(prefix="servesim-") as d:
        argv = ["capacity", *option_flags(own), *run_flags(config), *_workload_flags(workload, d)]
        return _table("capacity", argv, d, report)


def validate(path, **options):
    """Replays a ground-truth CSV of real vLLM runs: `servesim validate` (options: experiment,
    calibration, model_dir, use_measured_kv, kv_offloading_size, jobs). A frame of every
    measured and predicted figure."""
    _refuse_own(options, None, "validate",
                {"csv": TABLE_OWN["csv"].replace("the table's csv_text holds it; ", "")})
    path = _path("path", path)
    with tempfile.TemporaryDirectory(prefix="servesim-") as d:
        csv = os.path.join(d, "validate.csv")
        text = command("validate", path, *option_flags(options), "--csv=" + csv)
        df = pd.read_csv(csv)
    df.attrs["text"] = text
    return df


class Verdict(dict):
    """A verdict of `servesim check` or `servesim diagnose`: the command's JSON (--json) as a
    dict; `passed`: what its exit status says (check: no metric moved beyond its tolerance;
    diagnose: no alarm it was asked to fail on); `text`: what it printed. check's `lines` and
    diagnose's `finding` and `headline` are there as attributes too."""

    def __init__(self, data, passed, text):
        super().__init__(data)
        self.passed = passed
        self.text = text

    @property
    def lines(self):
        """check's lines, one a scenario and metric, as a frame."""
        return pd.DataFrame(self.get("lines", []))

    @property
    def finding(self):
        return self.get("verdict", {}).get("finding")

    @property
    def headline(self):
        return self.get("verdict", {}).get("headline")


def _verdict(argv, d, page=None):
    """Runs ARGV with --json into D: exit status 0 passes, 1 fails (bad input raised already).
    With PAGE, servesim.report's page of the verdict there."""
    js = os.path.join(d, "verdict.json")
    status, text = core().command([*argv, "--json=" + js], None, None, None)
    if status not in (0, 1):
        raise Error("servesim %s exited with status %d:\n%s" % (argv[0], status, text))
    _page(page, js)
    with open(js) as f:
        return Verdict(json.load(f), status == 0, text)


def check(spec, *, jobs=None, update=False, report=None):
    """The CI gate from a notebook: `servesim check SPEC.ini` (spec's baseline, tolerances and
    scenarios). Returns a Verdict (passed, lines, text). UPDATE: rerun the scenarios and rewrite
    the baseline instead: a Verdict {"updated": True} with the text printed and no lines (nothing
    was compared). REPORT: a file name for servesim.report's page of the verdict."""
    spec = _path("spec", spec)
    own = option_flags({"jobs": jobs})
    if update and report is not None:
        raise keyword_error("report", "update=True rewrites the baseline and compares nothing")
    if update:
        return Verdict({"updated": True}, True, command("check", spec, *own, "--update"))
    with tempfile.TemporaryDirectory(prefix="servesim-") as d:
        return _verdict(["check", spec, *own], d, report)


def _log(name, value):
    """A results file or request log for diagnose: a path, or Results read from a file."""
    if isinstance(value, Results):
        if not value.path:
            raise keyword_error(name, "these Results hold no file: give the file's name")
        return value.path
    return _path(name, value)


def diagnose(baseline, current, report=None, **options):
    """What changed between two runs or request logs, and the OTPS alarm: `servesim diagnose`.
    BASELINE, CURRENT: results files (or Results read from one) or request-log CSVs; OPTIONS:
    its own flags (baseline_run, current_run, tolerance, period_s, fail_on_alarm, ...).
    Returns a Verdict: finding, headline, the dict of --json (verdict, alarm, change, ...).
    REPORT: a file name for servesim.report's page of the verdict."""
    for key in ("json", "baseline", "current"):
        if key in options:
            raise keyword_error(key, "diagnose sets it itself (the Verdict holds the JSON)"
                                if key == "json" else "given as the positional argument")
    argv = ["diagnose", _log("baseline", baseline), _log("current", current),
            *option_flags(options)]
    with tempfile.TemporaryDirectory(prefix="servesim-") as d:
        return _verdict(argv, d, report)


def read(path):
    """Any HDF5 file servesim writes: a results file (Results), a sweep or capacity table
    (Table), a trace (Trace)."""
    path = _path("path", path)
    kind = _h5.kind_of(path)
    if kind == "results":
        return _results(path)
    if kind == "trace":
        return Trace.read(path)
    return _read_table(path, kind)


from . import report  # noqa: E402  (it reads files through read, above)
