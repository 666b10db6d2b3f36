"""``python -m simsql.demo``: the demo without the CLI."""

from simsql.demo.run import main

raise SystemExit(main())
