#!/usr/bin/python3
"""`servesim report` end to end, in a real browser: for each kind of file servesim writes (a run
and a compare with their results file and JSON, a sweep over seeds, a capacity table, a day plan
with an autoscaler, a diagnose and a check verdict, a timeline), the page (made in this process
by the package `servesim report` runs; the command itself makes the page of several files) loads
in headless Chromium (Debian's chromium) with no console error, no exception and no network
request; the figures its DOM holds are the file's, read here independently of the page (h5py,
json); the same figures are in the HTML itself, before any script runs; a screenshot of each page
is written. Damaged files and files servesim did not write exit 2 with one line naming the file
and write no page.

    tests/report/test_pages.py SERVESIM [OUTDIR]    # OUTDIR: keep files, pages and screenshots

Exit 0: passed; 1: failed; 77: skipped (no Chromium, and CI is not set: in CI it fails)."""
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402

FIGURES = ["requests.completed", "requests.rejected", "ttft_ms.p50", "ttft_ms.p99", "itl_ms.p99",
           "tpot_ms.mean", "e2e_ms.p99", "otps.p50", "throughput.output_tokens_per_s",
           "overloaded.overloaded"]
# Every figure the page holds, its provenance lines, its charts and drawn marks, after load.
EXPR = """(() => {
  const f = {}, dups = [];
  document.querySelectorAll('[data-figure]').forEach(e => {
    if (e.dataset.figure in f) dups.push(e.dataset.figure);
    f[e.dataset.figure] = JSON.parse(e.dataset.value); });
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  const p = {};
  document.querySelectorAll('[data-provenance]').forEach(e => {
    (p[e.closest('section').id] = p[e.closest('section').id] || {})[e.dataset.provenance] =
      e.textContent; });
  const visible = [...document.querySelectorAll('svg.chart')]
    .filter(s => s.getClientRects().length);
  return {figures: f, duplicates: dups, ids: ids.filter((x, i) => ids.indexOf(x) !== i),
          provenance: p, sections: document.querySelectorAll('section').length,
          charts: visible.length,
          marks: visible.map(s => [s.id, s.querySelectorAll('circle.mark').length,
                                   s.querySelectorAll('rect').length]),
          flags: [...document.querySelectorAll('.flags li')].map(l => l.textContent),
          text: document.body.innerText};
})()"""

failures = []


def fail(msg):
    failures.append(msg)
    print("test_pages: FAIL: " + msg, file=sys.stderr)


def close(a, b):
    """A page's figure A against the file's B: equal text or flag; numbers to 1e-12; a page's
    null for the file's NaN."""
    def undefined(v):
        return v is None or isinstance(v, float) and math.isnan(v)
    if undefined(a) or undefined(b):
        return undefined(a) and undefined(b)
    if isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return a == b
    return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0)


def expect(page, figures, key, want):
    if key not in figures:
        fail("%s: no figure %s on the page" % (page, key))
    elif not close(figures[key], want):
        fail("%s: %s is %r on the page, %r in the file" % (page, key, figures[key], want))


def static_figures(html_path):
    """data-figure keys in the HTML text itself (what a reader without JavaScript gets)."""
    with open(html_path, encoding="utf-8") as f:
        return {html.unescape(k) for k in re.findall(r'data-figure="([^"]*)"', f.read())}


def sh(servesim, *args, cwd):
    p = subprocess.run([servesim, *args], cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("test_pages: servesim %s failed (%d): %s" % (" ".join(args),
                                                                     p.returncode, p.stderr))
    return p


def make_files(servesim, d):
    """Small files of every kind, in D."""
    sh(servesim, "run", "--num-requests", "200", "--request-rate", "6", "--model", "llama-3-8b",
       "--input-len", "uniform:200:12000", "--out", "run.h5", "--json", "run.json",
       "--timeline", "timeline.json", "--timeline-window", "0:8", cwd=d)
    sh(servesim, "compare", "--num-requests", "200", "--request-rate", "40",
       "--scheduler", "vllm-v0,chunked:512", "--period-s", "2", "--out", "compare.h5",
       "--json", "compare.json", cwd=d)
    sh(servesim, "sweep", "--num-requests", "60", "--scheduler", "vllm-v0,chunked",
       "--request-rate", "2,30", "--seed", "0,1", "--gpu", "h100-sxm,a100-80g", "--out",
       "sweep.h5", cwd=d)
    sh(servesim, "compare", "--num-requests", "60", "--request-rate", "4", "--scheduler",
       "vllm-v0,chunked:512", "--num-seeds", "2", "--out", "seeds.h5", "--json", "seeds.json",
       cwd=d)
    os.makedirs(os.path.join(d, "again"), exist_ok=True)  # the same name in another folder
    sh(servesim, "run", "--num-requests", "40", "--out", os.path.join("again", "run.h5"), cwd=d)
    sh(servesim, "capacity", "--num-requests", "100", "--scheduler", "vllm-v0,chunked:512",
       "--slo", "ttft_p99_ms=1500", "--gpu-hour-cost", "2.5", "--out", "capacity.h5", cwd=d)
    sh(servesim, "capacity", "--num-requests", "1500", "--request-rate", "10",
       "--rate-pattern", "diurnal", "--scheduler", "chunked:512", "--slo", "ttft_p99_ms=1000",
       "--over-time", "40", "--autoscale", "running", "--autoscale-target", "12",
       "--max-replicas", "4", "--out", "plan.h5", cwd=d)
    sh(servesim, "diagnose", "compare.h5", "run.h5", "--baseline-run", "chunked:512",
       "--period-s", "5", "--json", "diagnose.json", cwd=d)
    with open(os.path.join(d, "check.ini"), "w") as f:
        f.write("baseline = base.h5\nnum-requests = 80\nrequest-rate = 6\nseed = 1\n"
                "[tolerance]\nttft_ms.p50 = +10%\n[scenario.v1]\nscheduler = vllm-v1\n")
    sh(servesim, "check", "check.ini", "--update", cwd=d)
    with open(os.path.join(d, "check-a100.ini"), "w") as f:
        f.write(open(os.path.join(d, "check.ini")).read().replace("seed = 1\n",
                                                                 "seed = 1\ngpu = a100-80g\n"))
    subprocess.run([servesim, "check", "check-a100.ini", "--json", "check.json"], cwd=d,
                   capture_output=True)  # a regression: exit 1, the verdict written


def check_results(name, got, path, sid="f0"):
    fig = got["figures"]
    with h5py.File(path) as f:
        runs = f.attrs["runs"].decode().split("\n")
        command = f.attrs["command_line"].decode()
        version = f.attrs["servesim_version"].decode()
        threshold = float(f.attrs["alarm_threshold_otps"])
        summaries = {r: json.loads(f["runs"][r].attrs["summary"]) for r in runs}
        windows = {r: (f["runs"][r]["windows"]["start_s"][()], f["runs"][r]["windows"]["otps"][()])
                   for r in runs}
    prov = got["provenance"][sid]
    if prov.get("command line") != command or prov.get("servesim version") != version:
        fail("%s: provenance %r, the file's %r, %r" % (name, prov, command, version))
    seeds = ", ".join(sorted({str(s["config"]["workload"]["seed"]) for s in summaries.values()}))
    if prov.get("seed") != seeds:
        fail("%s: seed %r on the page, %r in the file" % (name, prov.get("seed"), seeds))
    for run, s in summaries.items():
        for key in FIGURES:
            v = s
            for k in key.split("."):
                v = v[k]
            expect(name, fig, "%s|%s|%s" % (sid, run, key), v)
        for key, (lo, hi) in s["prediction_intervals"]["figures"].items():
            # Throughput's intervals are named without "throughput." in the file.
            key = "throughput." + key if "throughput." + key in FIGURES else key
            if key in FIGURES:
                got_iv = fig.get("%s|%s|%s.interval" % (sid, run, key))
                if got_iv is None or not (close(got_iv[0], lo) and close(got_iv[1], hi)):
                    fail("%s: %s %s interval %r, the file's %r" % (name, run, key, got_iv,
                                                                   [lo, hi]))
        for w in s["warnings"]:
            if not w.startswith("overloaded") and "were rejected" not in w and \
                    ("%s: %s" % (run, w)) not in got["flags"]:
                fail("%s: the warning %r is not among the page's flags" % (name, w))
        if s["overloaded"]["overloaded"] and not any(f.startswith(run + ": OVERLOADED")
                                                     for f in got["flags"]):
            fail("%s: %s is overloaded, and no flag says so" % (name, run))
        if s["requests"]["rejected"] and not any(run + ": " + str(s["requests"]["rejected"])
                                                 in f for f in got["flags"]):
            fail("%s: %s rejected requests, and no flag says so" % (name, run))
        for start, otps in zip(*windows[run]):
            expect(name, fig, "%s/windows|%s@%r|otps" % (sid, run, float(start)), float(otps))
    expect(name, fig, "%s|alarm|threshold_otps" % sid, threshold)


def check_table(name, got, path, group, key_col, cols, sid="f0", prefix=""):
    fig = got["figures"]
    with h5py.File(path) as f:
        g = f[group]
        n = len(g[key_col])
        for i in range(n):
            k = g[key_col][i]
            if isinstance(k, bytes):
                k = k.decode()
            elif k.dtype.kind == "f":  # a window's start: the page keys it by its repr
                k = repr(float(k))
            for c in cols:
                v = g[c][i]
                v = v.decode() if isinstance(v, bytes) else v.item()
                expect(name, fig, "%s%s|%s|%s" % (sid, prefix, k, c), v)
    return n


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    servesim = os.path.abspath(sys.argv[1])
    if browser.chromium_path() is None:
        msg = "no Chromium (Debian's chromium package; scripts/install-deps installs it)"
        if os.environ.get("CI"):
            print("test_pages: FAIL: " + msg, file=sys.stderr)
            return 1
        print("test_pages: skipped: " + msg, file=sys.stderr)
        return 77
    keep = len(sys.argv) > 2
    d = os.path.abspath(sys.argv[2]) if keep else tempfile.mkdtemp(prefix="servesim-pages.")
    os.makedirs(d, exist_ok=True)
    make_files(servesim, d)
    kinds = ["run.h5", "run.json", "compare.h5", "compare.json", "sweep.h5", "capacity.h5",
             "plan.h5", "diagnose.json", "check.json", "timeline.json", "seeds.h5", "seeds.json"]
    # The pages of the package beside the binary (what `servesim report` runs), made in this
    # process; the command itself makes the page of several files and refuses the bad ones below.
    sys.path.insert(0, os.path.join(os.path.dirname(servesim), "python"))
    from servesim import Error, report
    pages = {}
    with browser.Browser() as b:
        for f in kinds:
            page = os.path.join(d, f.replace(".", "_") + ".html")
            try:
                report.write([os.path.join(d, f)], page)
            except Error as e:
                fail("servesim report %s: %s" % (f, e))
                continue
            shot = page.replace(".html", ".png")
            r = b.check_page(page, shot, EXPR)
            with open(shot, "rb") as s:
                if s.read(8) != b"\x89PNG\r\n\x1a\n":
                    fail("%s: no screenshot written" % f)
            for what in ("console", "exceptions", "requests", "failed"):
                if r.get(what):
                    fail("%s: %s: %s" % (f, what, r[what]))
            got = r["value"] or {}
            if got.get("duplicates") or got.get("ids"):
                fail("%s: figures or ids on the page twice: %s" % (
                    f, (got.get("duplicates") or got.get("ids"))[:5]))
            if got.get("sections") != 1 or not got.get("figures") and f != "timeline.json":
                fail("%s: %s sections, %d figures" % (f, got.get("sections"),
                                                      len(got.get("figures", {}))))
            missing = set(got.get("figures", {})) - static_figures(page)
            if missing:
                fail("%s: figures only a script puts there: %s" % (f, sorted(missing)[:5]))
            pages[f] = got
        # Several files on one page: a section each, their ids apart.
        both = os.path.join(d, "together.html")
        sh(servesim, "report", "run.h5", "sweep.h5", "diagnose.json", "again/run.h5", "-o", both,
           cwd=d)
        r = b.check_page(both, both.replace(".html", ".png"), EXPR)
        if r["value"]["sections"] != 4 or r["console"] or r["exceptions"] or r["requests"] or \
                r["value"]["duplicates"] or r["value"]["ids"]:
            fail("together.html: %s" % {k: r[k] for k in ("console", "exceptions", "requests")})
        check_results("together.html", r["value"], os.path.join(d, "run.h5"))
    at = lambda f: os.path.join(d, f)  # noqa: E731
    if "run.h5" in pages:
        check_results("run.h5", pages["run.h5"], at("run.h5"))
        if not any("rejected" in x for x in pages["run.h5"]["flags"]):
            fail("run.h5: its run rejects requests (Llama-3-8B's context), unflagged")
    if "compare.h5" in pages:
        check_results("compare.h5", pages["compare.h5"], at("compare.h5"))
    if "seeds.h5" in pages:  # a run a policy and seed, named LABEL@seed=K as the file names it
        check_results("seeds.h5", pages["seeds.h5"], at("seeds.h5"))
    if "seeds.json" in pages:  # each policy's statistics over its seeds
        for row in json.load(open(at("seeds.json")))["runs"]:
            for metric, m in row["replicates"]["metrics"].items():
                key = "f0/seeds|%s/%s|" % (row["label"], metric)
                expect("seeds.json", pages["seeds.json"]["figures"], key + "mean", m["mean"])
                if m.get("ci95"):
                    got = pages["seeds.json"]["figures"].get(key + "ci95")
                    if got is None or not all(close(a, b) for a, b in zip(got, m["ci95"])):
                        fail("seeds.json: %s ci95 %r, the file's %r" % (key, got, m["ci95"]))
    for f in ("run.json", "compare.json"):
        if f in pages:
            j = json.load(open(at(f)))
            for s in j.get("runs", [j]):
                for key in FIGURES:
                    v = s
                    for k in key.split("."):
                        v = v[k]
                    expect(f, pages[f]["figures"], "f0|%s|%s" % (s["label"], key), v)
            if pages[f]["provenance"]["f0"].get("command line") != j["servesim"]["command"]:
                fail("%s: the command line is not the file's" % f)
    if "sweep.h5" in pages:
        n = check_table("sweep.h5", pages["sweep.h5"], at("sweep.h5"), "intervals", "point",
                        ["ttft_ms_p99", "ttft_ms_p99_ci95", "itl_ms_p99", "overloaded"])
        # Each configuration's prediction interval (its seeds' mean ends) under its figure.
        with h5py.File(at("sweep.h5")) as f:
            g = f["intervals"]
            for i, point in enumerate(g["point"][()]):
                key = "f0|%d|ttft_ms_p99.predicted" % point
                want = [g["ttft_ms_p99_lo"][i], g["ttft_ms_p99_hi"][i]]
                got = pages["sweep.h5"]["figures"].get(key)
                if got is None or not all(close(a, float(b)) for a, b in zip(got, want)):
                    fail("sweep.h5: %s is %r, the file's %r" % (key, got, want))
        if pages["sweep.h5"]["provenance"]["f0"].get("seed") != "0, 1":
            fail("sweep.h5: seeds %r" % pages["sweep.h5"]["provenance"]["f0"].get("seed"))
        # Series apart by GPU, the axis the labels do not hold.
        if "vllm-v0:131072 gpu=a100-80g" not in pages["sweep.h5"]["text"]:
            fail("sweep.h5: the GPUs are not told apart")
        # The frontier drawn: one marker a configuration (over its seeds).
        marks = [m for m in pages["sweep.h5"]["marks"] if "frontier" in m[0]]
        if len(marks) != 1 or marks[0][1] != n:
            fail("sweep.h5: the frontier shown: %s, expected one chart with %d markers" %
                 (marks, n))
    if "capacity.h5" in pages:
        check_table("capacity.h5", pages["capacity.h5"], at("capacity.h5"), "capacity", "point",
                    ["capacity_req_s", "binding", "replicas", "cost_per_million_output_tokens"])
    if "plan.h5" in pages:
        n = check_table("plan.h5", pages["plan.h5"], at("plan.h5"), "fleets", "fleet",
                        ["peak_replicas", "replica_hours", "usd", "ttft_ms_p99"],
                        prefix="/fleets")
        if n != 3:
            fail("plan.h5: %d fleets in the file, expected fixed, plan and autoscaler" % n)
        check_table("plan.h5", pages["plan.h5"], at("plan.h5"), "windows", "start_s",
                    ["rate_req_s", "replicas"], prefix="/windows")
    if "diagnose.json" in pages:
        j = json.load(open(at("diagnose.json")))
        fig = pages["diagnose.json"]["figures"]
        expect("diagnose.json", fig, "f0|verdict|headline", j["verdict"]["headline"])
        for q in ("p50", "p95"):
            for k, v in j["baseline"][q].items():
                expect("diagnose.json", fig, "f0|%s.%s|baseline" % (q, k), v)
                expect("diagnose.json", fig, "f0|%s.%s|current" % (q, k), j["current"][q][k])
        for w in j["alarm"]["windows"]:
            expect("diagnose.json", fig, "f0/alarm|%r|otps" % float(w["start_s"]), w["otps"])
    if "check.json" in pages:
        j = json.load(open(at("check.json")))
        if j["passed"]:
            fail("check.json: the A100 check should regress (test data)")
        for line in j["lines"]:
            key = "f0|%s/%s|" % (line["scenario"], line["metric"])
            for c in ("baseline", "current", "change_pct", "verdict", "regression"):
                expect("check.json", pages["check.json"]["figures"], key + c, line[c])
        if "FAILED" not in pages["check.json"]["text"]:
            fail("check.json: the page does not say the check failed")
    if "timeline.json" in pages:
        steps = [e for e in json.load(open(at("timeline.json")))["traceEvents"]
                 if e.get("ph") == "X" and e.get("cat") == "step"]
        drawn = sum(m[2] for m in pages["timeline.json"]["marks"]) - \
            len(pages["timeline.json"]["marks"])  # less each chart's frame rectangle
        if drawn != len(steps):
            fail("timeline.json: %d step bars drawn, the file has %d steps" % (drawn, len(steps)))

    # Damaged files, and files that are no study: exit 2, one line naming the file, no page.
    with open(at("run.h5"), "rb") as f:
        head = f.read(4096)
    # (tests/python/test_report.py tries more through the module: mutated JSON, bad encodings.)
    bad = {"truncated.h5": head, "shape.json": b'{"a": 1}'}
    for name, data in bad.items():
        with open(at(name), "wb") as f:
            f.write(data)
    sh(servesim, "trace", "synth", "--num-requests", "10", "-o", "trace.h5", cwd=d)
    for name in list(bad) + ["trace.h5", "missing.h5"]:
        page = at("bad.html")
        p = subprocess.run([servesim, "report", "run.h5", name, "-o", page], cwd=d,
                           capture_output=True, text=True)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 2 or len(lines) != 1 or name not in lines[0] or os.path.exists(page):
            fail("servesim report %s: exit %d, stderr %r, page written: %s" % (
                name, p.returncode, p.stderr, os.path.exists(page)))
    if failures or keep:
        print("test_pages: %s; pages and screenshots in %s" % (
            "ok" if not failures else "%d failure(s)" % len(failures), d))
    else:
        shutil.rmtree(d)
        print("test_pages: ok (%d pages)" % (len(pages) + 1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
