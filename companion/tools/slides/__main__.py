"""``python -m companion.tools.slides notebooks/``: see :mod:`companion.tools.slides`."""
import sys

from . import main

sys.exit(main())
