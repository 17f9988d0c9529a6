"""structured-merge-diff's merge/preserve_unknown_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, Parser, TestCase, V, _NS, _P

preserveUnknownParser = Parser(
    """types:
- name: type
  map:
    fields:
      - name: num
        type:
          scalar: numeric
    elementType:
      scalar: string
""",
    "type",
)

PRESERVE_UNKNOWN_FIELDS = {
    "preserve_unknown_fields": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						num: 5
						unknown: value
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						num: 6
						unknown: new
					""",
                api_version="v1",
            ),
        ],
        object="""
				num: 6
				unknown: new
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("num"),
                    _P("unknown"),
                ),
                "v1",
                False,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(PRESERVE_UNKNOWN_FIELDS))
def test_preserve_unknown_fields(name: str) -> None:
    PRESERVE_UNKNOWN_FIELDS[name].run(preserveUnknownParser)
