"""``python -m simsql.cli``: the same command line as the ``simsql`` console script."""

import sys

from . import main

sys.exit(main())
