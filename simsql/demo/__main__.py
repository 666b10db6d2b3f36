"""``python -m simsql.demo``: the demo without the CLI."""

from .run import main

raise SystemExit(main())
