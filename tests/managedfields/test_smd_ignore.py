"""structured-merge-diff's merge/ignore_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, DeducedParser, TestCase, Update, V, _NS, _P

IGNORED_FIELDS = {
    "update_does_not_own_ignored": TestCase(
        api_version="v1",
        ops=[
            Update(
                manager="default",
                api_version="v1",
                object="""
						numeric: 1
						string: "some string"
					""",
            ),
        ],
        object="""
				numeric: 1
				string: "some string"
			""",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                ),
                "v1",
                False,
            ),
        },
        ignored={
            "v1": _NS(
                _P("string"),
            ),
        },
    ),
    "update_does_not_own_deep_ignored": TestCase(
        api_version="v1",
        ops=[
            Update(
                manager="default",
                api_version="v1",
                object="""{"numeric": 1, "obj": {"string": "foo", "numeric": 2}}""",
            ),
        ],
        object="""{"numeric": 1, "obj": {"string": "foo", "numeric": 2}}""",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                ),
                "v1",
                False,
            ),
        },
        ignored={
            "v1": _NS(
                _P("obj"),
            ),
        },
    ),
    "apply_does_not_own_ignored": TestCase(
        api_version="v1",
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 1
						string: "some string"
					""",
            ),
        ],
        object="""
				numeric: 1
				string: "some string"
			""",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                ),
                "v1",
                True,
            ),
        },
        ignored={
            "v1": _NS(
                _P("string"),
            ),
        },
    ),
    "apply_does_not_own_deep_ignored": TestCase(
        api_version="v1",
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""{"numeric": 1, "obj": {"string": "foo", "numeric": 2}}""",
            ),
        ],
        object="""{"numeric": 1, "obj": {"string": "foo", "numeric": 2}}""",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                ),
                "v1",
                True,
            ),
        },
        ignored={
            "v1": _NS(
                _P("obj"),
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(IGNORED_FIELDS))
def test_ignored_fields(name: str) -> None:
    IGNORED_FIELDS[name].run(DeducedParser)
