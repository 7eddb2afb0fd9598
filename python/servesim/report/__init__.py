"""servesim's results as one self-contained HTML page a planner can send: `servesim report
FILE... -o report.html`, `python3 -m servesim.report FILE... -o report.html`, or from Python
servesim.report.write([FILE, ...], "report.html") and the report= keyword of servesim.run,
compare, sweep, capacity, diagnose and check.

Each FILE gets a section: a results file of run or compare (figures with their prediction
intervals and flags, the TTFT, ITL and OTPS distributions, the OTPS windows and the alarm, the
fleet's size), run's or compare's --json, a sweep (its frontier, any two metrics, with 95%
intervals over seeds), a capacity table, a day plan (capacity --over-time: windows, arrivals,
fixed vs plan vs autoscaler), a diagnose or check verdict (--json), a --timeline file. The page
draws what the files hold and computes no statistic of its own. Everything is inline (SVG
charts drawn here, a few lines of script); it loads nothing from anywhere.

A file servesim did not write, or a damaged one, raises servesim.Error naming it (the command
line: one line on stderr, exit status 2), and no page is written."""
import argparse
import os
import sys

from ..errors import Error
from . import _page, _sections

VERSION_UNKNOWN = "(version not recorded)"


def build(paths, title=None):
    """The page for PATHS (a list of files) as text."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    paths = [os.fsdecode(p) for p in paths]
    if not paths:
        raise Error("no file to report on", field="files", reason="no file given")
    sections = [_sections.load(p, i) for i, p in enumerate(paths)]
    versions = {v for s in sections for k, v in s.provenance if k == "servesim version"}
    version = ", ".join(sorted(versions - {"not recorded"})) or VERSION_UNKNOWN
    if title is None:
        title = "servesim report: " + ", ".join(os.path.basename(p) for p in paths)
    return _page.render(title, version, sections)


def write(paths, out, title=None):
    """Writes the page for PATHS to OUT (through a temporary file beside it: a failure leaves
    no half page and keeps what was there). Returns OUT."""
    page = build(paths, title)
    out = os.fsdecode(out)
    tmp = "%s.tmp-%d" % (out, os.getpid())
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(page)
        os.replace(tmp, out)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise Error("%s: cannot write: %s" % (out, e.strerror or e), file=out, field="out",
                    reason="cannot write") from None
    return out


def main(argv=None, prog="servesim report"):
    p = argparse.ArgumentParser(
        prog=prog, description="One self-contained HTML page of servesim's results files.")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="results, sweep, capacity or day-plan .h5; run, compare, diagnose or "
                        "check --json; a --timeline file")
    p.add_argument("-o", "--out", required=True, metavar="PAGE.html", help="the page to write")
    p.add_argument("--title", help="the page's title (default: the files' names)")
    args = p.parse_args(argv)
    try:
        write(args.files, args.out, args.title)
    except Error as e:
        print("%s: error: %s" % (prog, e), file=sys.stderr)
        return 2
    except ImportError as e:  # the page's template engine: Debian's python3-jinja2
        print("%s: error: %s: install it with scripts/install-deps (python3-jinja2)" % (prog, e),
              file=sys.stderr)
        return 2
    print("wrote %s" % args.out)
    return 0
