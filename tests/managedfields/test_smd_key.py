"""structured-merge-diff's merge/key_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, Parser, TestCase, V, _KBF, _NS, _P

associativeListParser = Parser(
    """types:
- name: type
  map:
    fields:
      - name: list
        type:
          namedType: associativeList
- name: associativeList
  list:
    elementType:
      namedType: myElement
    elementRelationship: associative
    keys:
    - name
- name: myElement
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: value
      type:
        scalar: numeric
""",
    "type",
)

UPDATE_ASSOCIATIVE_LISTS = {
    "removing_obsolete_applied_structs": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						list:
						- name: a
						  value: 1
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						list:
						- name: b
						  value: 2
					""",
                api_version="v1",
            ),
        ],
        object="""
				list:
				- name: b
				  value: 2
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value"),
                ),
                "v1",
                False,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(UPDATE_ASSOCIATIVE_LISTS))
def test_update_associative_lists(name: str) -> None:
    UPDATE_ASSOCIATIVE_LISTS[name].run(associativeListParser)
