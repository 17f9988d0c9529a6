"""``python -m bench``: the compiled-against-pure harness (see ``bench/harness.py``)."""

from __future__ import annotations

import sys

from bench.harness import main

if __name__ == "__main__":
    sys.exit(main())
