"""``python -m companion.slides notebooks/``: see :mod:`companion.slides`."""
import sys

from . import main

sys.exit(main())
