"""Plots servesim's HDF5 output files as PNGs, drawing only what servesim wrote into them.

    python3 -m servesim.plot FILE [FILE...] -o OUTDIR [--baseline BASE.h5 [--baseline-run NAME]]
                    [--current-run NAME] [--alarm-fraction 0.8] [--baseline-otps X]
                    [--self-threshold] [--together [NAME]] [--max-rejected-share X]
                    [--describe JSON]
    servesim.plot.plot(["sweep.h5"], "plots", together="gpus")  # the PNGs' paths

(scripts/plot.py runs the same.) Each FILE is read with servesim.read and drawn by its kind
(layouts: docs/manual/run-and-compare.md, sweeps.md, capacity.md; what each PNG shows:
docs/manual/plots.md):
  results   (run|compare --out)  STEM_ttft_cdf.png, STEM_itl_cdf.png, STEM_timeseries.png,
                                 STEM_fleet_size.png when autoscaled, and with --baseline
                                 STEM_vs_BASESTEM_otps.png
  sweep     (sweep --out)        STEM_frontier.png
  capacity  (capacity --out)     STEM_capacity.png
With --together [NAME] (NAME defaults to "together") all sweep files are drawn on one chart,
NAME_frontier.png, and all capacity files on another, NAME_capacity.png.
STEM is the file name without its extension. Every PNG written is printed, one path a line. A plot
with nothing to draw is skipped with a message on stderr. An unreadable file, an unknown kind or a
missing dataset is one error line naming the file, exit status 2; every file is read before any
PNG is written, so nothing is written then.

No statistic is computed here: a sweep's means and 95% intervals over seeds are its intervals
group, what is not comparable is servesim's rejection_heavy and overloaded flags (drawn hollow
and crossed, never best; --max-rejected-share X instead compares each rejected_share the file
gives with X), and the OTPS alarm threshold is --alarm-fraction x the baseline run's
baseline_otps, servesim diagnose's figure. A file alone gets no threshold unless
--baseline-otps X or --self-threshold (labelled self-referenced) asks for one.
--describe JSON writes what each PNG shows (titles, legend entries, best and flagged points, the
threshold, anything clipped) for scripts and tests.
Output is deterministic: no timestamps or version strings in the PNGs.
"""
import argparse
import json
import math
import os
import sys

from ..errors import Error
from . import capacity, results, sweep
from ._common import PROG, InputError, Output, load

__all__ = ["main", "plot"]

CHECKS = {"results": results.check, "sweep": sweep.check, "capacity": capacity.check}
TOGETHER = {"sweep": sweep.plot, "capacity": capacity.plot}
DEFAULTS = {"baseline": None, "baseline_run": None, "current_run": None, "alarm_fraction": 0.8,
            "baseline_otps": None, "self_threshold": False, "together": None,
            "max_rejected_share": None, "describe": None}


def parser():
    p = argparse.ArgumentParser(
        prog=PROG, description="Plots servesim HDF5 results, sweep and capacity files as PNGs.")
    p.add_argument("files", nargs="*", metavar="FILE", help="servesim .h5 output files")
    p.add_argument("-o", "--outdir", metavar="OUTDIR", help="directory for the PNGs (created)")
    p.add_argument("--baseline", metavar="BASE.h5",
                   help="a results file: each results FILE is also drawn against it "
                        "(STEM_vs_BASESTEM_otps.png) and the alarm threshold is "
                        "--alarm-fraction x its run's baseline_otps, servesim diagnose's figure")
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
    p.add_argument("--max-rejected-share", type=float, default=None, metavar="X",
                   help="flag what rejects more than this share of its requests (the file's "
                        "rejected_share) instead of servesim's rejection_heavy flag (its 1%% "
                        "rule)")
    p.add_argument("--describe", metavar="JSON",
                   help="write what each PNG shows (titles, legends, best and flagged points, "
                        "threshold, clipped artists) as JSON")
    return p


def check_options(args):
    """The options' own errors, as messages (main: a usage error; plot(): servesim.Error)."""
    if not args.files:
        return "no input FILE given"
    if not args.outdir:
        return "-o OUTDIR is required"
    if not math.isfinite(args.alarm_fraction) or args.alarm_fraction <= 0:
        return "--alarm-fraction must be a positive number"
    if args.baseline_otps is not None and not (math.isfinite(args.baseline_otps)
                                               and args.baseline_otps > 0):
        return "--baseline-otps must be a positive number"
    if args.baseline and args.baseline_otps is not None:
        return "--baseline and --baseline-otps both set the baseline; give one"
    if args.max_rejected_share is not None and not (0 <= args.max_rejected_share < 1):
        return "--max-rejected-share must be in [0, 1)"
    if args.together is not None and (not args.together or os.sep in args.together):
        return "--together NAME must be a plain file name stem"
    return None


class PathError(Error):
    """A file that cannot be plotted: 'plot.py: PATH: why', and PATH as the error's file."""

    def __init__(self, path, msg):
        super().__init__(f"{PROG}: {path}: {msg}", file=path, reason=msg)


def load_all(args):
    """Reads every file; returns (loaded, baseline) or raises PathError."""
    loaded, stems = [], {}
    for path in args.files:
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem in stems and stems[stem] != os.path.realpath(path):
            raise PathError(path, f"has the same name stem {stem!r} as {stems[stem]}; "
                                  "their PNGs would overwrite each other")
        stems[stem] = os.path.realpath(path)
        kind = "servesim"
        try:
            kind, data = load(path)
            CHECKS[kind](data)
        except InputError as e:
            raise PathError(path, str(e)) from None
        except (KeyError, OSError, ValueError, TypeError) as e:
            raise PathError(path, f"malformed {kind} file ({e.__class__.__name__}: {e})") \
                from None
        loaded.append((path, stem, kind, data))
    baseline = None
    if args.baseline:
        try:
            baseline = results.load_baseline(args.baseline, args.baseline_run)
        except InputError as e:
            raise PathError(args.baseline, str(e)) from None
        except (KeyError, OSError, ValueError, TypeError) as e:
            raise PathError(args.baseline, f"malformed results file ({e.__class__.__name__}: "
                                           f"{e})") from None
        if not any(kind == "results" for _, _, kind, _ in loaded):
            raise PathError(args.baseline, "--baseline needs at least one results FILE to "
                                           "compare with it")
    return loaded, baseline


def draw(args, on_written=None):
    """Reads every file completely, then draws: a bad file raises PathError and leaves no PNG
    behind. Returns the paths written, each also passed to ON_WRITTEN as it is."""
    loaded, baseline = load_all(args)
    try:
        os.makedirs(args.outdir, exist_ok=True)
    except OSError as e:
        raise PathError(args.outdir, f"cannot create the output directory ({e.strerror})") \
            from None
    out = Output(args.outdir, on_written)
    try:
        for path, stem, kind, data in loaded:
            if kind == "results":
                results.plot(path, stem, data, args, out, baseline)
            elif args.together is None:
                TOGETHER[kind](path, stem, [(stem, path, data)], args, out)
        if args.together is not None:
            for kind, plotter in TOGETHER.items():
                parts = [(stem, path, data) for path, stem, k, data in loaded if k == kind]
                if parts:
                    plotter(", ".join(p for _, p, _ in parts), args.together, parts, args, out)
    finally:
        if args.describe:
            with open(args.describe, "w") as f:
                json.dump(out.describe, f, indent=1, sort_keys=True, default=str)
    return out.written


def plot(paths, outdir, **options):
    """Plots the servesim files PATHS into OUTDIR with main's options (baseline, baseline_run,
    current_run, alarm_fraction, baseline_otps, self_threshold, together, max_rejected_share,
    describe); returns the PNGs' paths. Raises servesim.Error (its file: the bad one)."""
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise Error(f"servesim.plot: unknown option {unknown[0]!r}", field=unknown[0])
    args = argparse.Namespace(files=[str(p) for p in paths], outdir=str(outdir),
                              **dict(DEFAULTS, **options))
    msg = check_options(args)
    if msg:
        raise Error(f"servesim.plot: {msg}", reason=msg)
    return draw(args)


def main(argv=None):
    """The command line: exit status 0, or 2 with one error line naming the bad file."""
    p = parser()
    args = p.parse_args(argv)
    if args.together is not None and (args.together.endswith(".h5") or
                                      os.path.isfile(args.together)):
        # `--together a.h5 b.h5`: a file, not a NAME.
        args.files.insert(0, args.together)
        args.together = "together"
    msg = check_options(args)
    if msg:
        p.error(msg)
    try:
        draw(args, lambda path: print(path, flush=True))
    except PathError as e:
        print(e, file=sys.stderr)
        return 2
    return 0
