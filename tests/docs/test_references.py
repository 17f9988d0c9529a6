"""The generated reference pages match what they are generated from, and the hand-written pages
name only flags that exist (the site's pages drift no more than the code's help)."""

from __future__ import annotations

import argparse
import re

from prometheus_client import generate_latest

from kapi.__main__ import build_parser
from tests.docs._tools import ROOT, load_tool


def test_flag_reference_is_current() -> None:
    gen = load_tool("gen_flag_reference")
    assert gen.OUT.read_text() == gen.render(), (
        "docs/reference/flags.md differs from what kapi's argument parser says: "
        "run python tools/gen_flag_reference.py and commit the page")


def test_metrics_reference_is_current() -> None:
    gen = load_tool("gen_metrics_reference")
    assert gen.OUT.read_text() == gen.render(), (
        "docs/reference/metrics.md differs from the metrics a server registers: "
        "run python tools/gen_metrics_reference.py and commit the page")


def test_metrics_reference_names_what_metrics_exposes() -> None:
    """Each family's name on the page is the one /metrics writes, once the family has a sample."""
    gen = load_tool("gen_metrics_reference")
    registry = gen.server_registry()
    for collector in list(registry._collector_to_names):
        for family in collector.collect():
            labels = gen._label_names(collector, family.name)
            if hasattr(collector, "labels") and labels:
                collector.labels(*["x"] * len(labels))
            elif hasattr(collector, "inc") and not hasattr(collector, "labels"):
                collector.inc(family.name, *["x"] * len(labels))
    exposed = {line.split("{")[0].split(" ")[0] for line in generate_latest(registry).decode().splitlines()
               if line and not line.startswith("#")}
    rows = gen.families(gen.server_registry())
    assert rows
    for name, kind, _, _ in rows:
        assert (f"{name}_bucket" if kind == "histogram" else name) in exposed, name


def _serve_flags() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {o for a in sub.choices["serve"]._actions for o in a.option_strings if o.startswith("--")}


def test_serving_guide_table_names_every_serve_flag() -> None:
    """docs/guide/serving.md's table explains each flag at length: every row is a real flag, and
    every flag has a row."""
    table: set[str] = set()
    for line in (ROOT / "docs" / "guide" / "serving.md").read_text().splitlines():
        if line.startswith("| `-"):
            first = line.split("|")[1]
            table |= set(re.findall(r"(--[a-z0-9-]+)", first))
    flags = _serve_flags() - {"--help"}
    assert not table - flags, f"the serving guide names flags kapi serve does not have: {sorted(table - flags)}"
    assert not flags - table, f"the serving guide's table lacks: {sorted(flags - table)}"


def test_docs_name_no_missing_kapi_flag() -> None:
    """A `kapi serve --flag` written in the docs or the README is a flag kapi serve has."""
    flags = _serve_flags()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        for match in re.finditer(r"kapi serve([^`\n]*)", page.read_text()):
            for flag in re.findall(r"(--[a-z0-9-]+)", match.group(1)):
                assert flag in flags, f"{page.relative_to(ROOT)}: kapi serve {flag} is not a flag of kapi serve"


def test_bench_chart_copy_is_current() -> None:
    """The site shows a copy of the bench's chart (MkDocs serves only what is under docs/)."""
    copy = ROOT / "docs" / "img" / "bench-summary.png"
    assert copy.read_bytes() == (ROOT / "bench" / "results" / "summary.png").read_bytes(), (
        "cp bench/results/summary.png docs/img/bench-summary.png")
