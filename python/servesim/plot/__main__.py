"""python3 -m servesim.plot FILE... -o OUTDIR: see servesim.plot."""
import sys

from . import main

sys.exit(main())
