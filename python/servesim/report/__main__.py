import sys

try:
    from . import main
except ImportError as e:  # python3-jinja2 (or h5py, numpy, pandas) missing
    print("servesim report: error: %s: install it with scripts/install-deps (Debian's "
          "python3-jinja2, python3-h5py, python3-pandas)" % e, file=sys.stderr)
    sys.exit(2)

sys.exit(main())
