"""``python -m predictor``: the prediction server (see :mod:`predictor.server`)."""

import sys

from predictor.server import main

sys.exit(main())
