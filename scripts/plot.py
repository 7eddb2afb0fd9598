#!/usr/bin/python3
"""Plots servesim's HDF5 output files as PNGs: `python3 -m servesim.plot`, kept for old
commands (docs/manual/plots.md)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from servesim.plot import main  # noqa: E402

sys.exit(main())
