"""What the reference-page generators share: write the page, or with ``--check`` say whether the
committed one is what the generator makes now."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable


def main(argv: list[str] | None, script: str, out: Path, root: Path, render: Callable[[], str]) -> int:
    """The command line of generator ``script`` (its path): ``out`` written from ``render()``; ``--check``
    exits 1 when the committed page differs."""
    doc = (sys.modules["__main__"].__doc__ or "") if argv is None else ""
    ap = argparse.ArgumentParser(description=(doc.splitlines() or [""])[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed page differs")
    args = ap.parse_args(argv)
    page = render()
    name = out.relative_to(root)
    if args.check:
        if not out.exists() or out.read_text() != page:
            print(f"{name} is stale: run python {Path(script).resolve().relative_to(root)}", file=sys.stderr)
            return 1
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page)
    print(f"wrote {name}")
    return 0
