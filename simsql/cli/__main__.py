"""``python -m simsql.cli``: the same command line as the ``simsql`` console script."""

import sys

from simsql.cli import main

sys.exit(main())
