"""``python -m vertex_training.local serve [--port PORT] [--root DIR]``."""

import sys

from vertex_training.local.server import main

sys.exit(main())
