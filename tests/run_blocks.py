"""``python -m tests.run_blocks FILE``: run a page's Python blocks in order, in one namespace, as
a reader pasting them into one interpreter would. ``FILE`` holds ``{"name": ..., "blocks": [...]}``
as JSON. Each block is announced with a ``--- block N`` line, so a caller can count them.
A deprecated name of simsql used by a block is an error: the documentation shows the names to use."""

import json
import sys
import warnings
from pathlib import Path


def main(path: str) -> None:  # no __future__ import here: see dont_inherit
    spec = json.loads(Path(path).read_text(encoding="utf-8"))
    namespace = {"__name__": "__main__"}
    warnings.filterwarnings("error", message=r"simsql\.\w+ is deprecated", category=DeprecationWarning)
    for number, code in enumerate(spec["blocks"], 1):
        print(f"--- block {number}", flush=True)
        # dont_inherit: the blocks see no __future__ import of this file, as a reader's would not
        exec(compile(code, f"{spec['name']} python block {number}", "exec", dont_inherit=True), namespace)


if __name__ == "__main__":
    main(sys.argv[1])
