"""structured-merge-diff's merge/duplicates_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, Conflict, ForceApply, Parser, TestCase, Update, V, _KBF, _NS, _P, _V

# Known differences from kube-apiserver and structured-merge-diff (strict xfail, see tests/conftest.py)
KNOWN_GAPS: dict[str, str] = {}


duplicatesParser = Parser(
    """types:
- name: type
  map:
    fields:
      - name: list
        type:
          namedType: associativeList
      - name: unrelated
        type:
          scalar: numeric
      - name: set
        type:
          namedType: set
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
    - name: value1
      type:
        scalar: numeric
    - name: value2
      type:
        scalar: numeric
- name: set
  list:
    elementType:
      scalar: numeric
    elementRelationship: associative
""",
    "type",
)

DUPLICATES = {
    "sets/ownership/duplicates": TestCase(
        ops=[
            Update(
                manager="updater-one",
                object="""
						set: [1, 1, 3, 4]
					""",
                api_version="v1",
            ),
        ],
        managed={
            "updater-one": V(
                _NS(
                    _P("set"),
                    _P("set", _V(1)),
                    _P("set", _V(3)),
                    _P("set", _V(4)),
                ),
                "v1",
                False,
            ),
        },
    ),
    "sets/ownership/add_duplicate": TestCase(
        ops=[
            Update(
                manager="updater-one",
                object="""
						set: [1, 3, 4]
					""",
                api_version="v1",
            ),
            Update(
                manager="updater-two",
                object="""
						set: [1, 1, 3, 4]
					""",
                api_version="v1",
            ),
        ],
        managed={
            "updater-one": V(
                _NS(
                    _P("set"),
                    _P("set", _V(3)),
                    _P("set", _V(4)),
                ),
                "v1",
                False,
            ),
            "updater-two": V(
                _NS(
                    _P("set", _V(1)),
                ),
                "v1",
                False,
            ),
        },
    ),
    "sets/ownership/remove_duplicate": TestCase(
        ops=[
            Update(
                manager="updater-one",
                object="""
						set: [1, 1, 3, 4]
					""",
                api_version="v1",
            ),
            Update(
                manager="updater-two",
                object="""
						set: [1, 3, 4]
					""",
                api_version="v1",
            ),
        ],
        managed={
            "updater-one": V(
                _NS(
                    _P("set"),
                    _P("set", _V(3)),
                    _P("set", _V(4)),
                ),
                "v1",
                False,
            ),
            "updater-two": V(
                _NS(
                    _P("set", _V(1)),
                ),
                "v1",
                False,
            ),
        },
    ),
    "sets/merging/remove_duplicate": TestCase(
        ops=[
            Update(
                manager="updater",
                object="""
						set: [1, 1, 3, 4]
					""",
                api_version="v1",
            ),
            Apply(
                manager="applier",
                object="""
						set: [1]
					""",
                api_version="v1",
                conflicts=[
                    Conflict(manager="updater", path=_P("set", _V(1))),
                ],
            ),
            ForceApply(
                manager="applier",
                object="""
						set: [1]
					""",
                api_version="v1",
            ),
        ],
        object="""
				set: [1, 3, 4]
			""",
        api_version="v1",
        managed={
            "updater": V(
                _NS(
                    _P("set"),
                    _P("set", _V(3)),
                    _P("set", _V(4)),
                ),
                "v1",
                False,
            ),
            "applier": V(
                _NS(
                    _P("set", _V(1)),
                ),
                "v1",
                True,
            ),
        },
    ),
    "sets/merging/ignore_duplicate": TestCase(
        ops=[
            Update(
                manager="updater",
                object="""
						set: [1, 1, 3, 4]
					""",
                api_version="v1",
            ),
            Apply(
                manager="applier",
                object="""
						set: [5]
					""",
                api_version="v1",
            ),
        ],
        object="""
				set: [1, 1, 3, 4, 5]
			""",
        api_version="v1",
        managed={
            "updater": V(
                _NS(
                    _P("set"),
                    _P("set", _V(1)),
                    _P("set", _V(3)),
                    _P("set", _V(4)),
                ),
                "v1",
                False,
            ),
            "applier": V(
                _NS(
                    _P("set", _V(5)),
                ),
                "v1",
                True,
            ),
        },
    ),
    "list/ownership/duplicated_items": TestCase(
        ops=[
            Update(
                manager="updater",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
        ],
        managed={
            "updater": V(
                _NS(
                    _P("list"),
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "list/ownership/change_duplicated_items": TestCase(
        ops=[
            Update(
                manager="updater-one",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
            Update(
                manager="updater-two",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 3
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
        ],
        managed={
            "updater-one": V(
                _NS(
                    _P("list"),
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                False,
            ),
            "updater-two": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "list/ownership/change_fields_duplicated_items": TestCase(
        ops=[
            Update(
                manager="updater-one",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
            Update(
                manager="updater-two",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						  value2: 3 # New field
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
        ],
        managed={
            "updater-one": V(
                _NS(
                    _P("list"),
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                False,
            ),
            "updater-two": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "list/ownership/add_duplicated_items_different_field": TestCase(
        ops=[
            Update(
                manager="updater-one",
                object="""
						list:
						- name: a
						  value1: 1
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
            Update(
                manager="updater-two",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value2: 3 # New field
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
        ],
        managed={
            "updater-one": V(
                _NS(
                    _P("list"),
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                False,
            ),
            "updater-two": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "list/ownership/add_unrelated_to_list_with_duplicates": TestCase(
        ops=[
            Update(
                manager="updater-one",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
					""",
                api_version="v1",
            ),
            Update(
                manager="updater-two",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
        ],
        managed={
            "updater-one": V(
                _NS(
                    _P("list"),
                    _P("list", _KBF("name", "a")),
                ),
                "v1",
                False,
            ),
            "updater-two": V(
                _NS(
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "list/merge/unrelated_with_duplicated_items": TestCase(
        ops=[
            Update(
                manager="updater",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
            ForceApply(
                manager="applier",
                object="""
						unrelated: 5
					""",
                api_version="v1",
            ),
        ],
        object="""
				list:
				- name: a
				  value1: 1
				- name: a
				  value1: 2
				- name: b
				  value1: 3
				unrelated: 5
			""",
        api_version="v1",
        managed={
            "updater": V(
                _NS(
                    _P("list"),
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                False,
            ),
            "applier": V(
                _NS(
                    _P("unrelated"),
                ),
                "v1",
                True,
            ),
        },
    ),
    "list/merge/change_duplicated_item": TestCase(
        ops=[
            Update(
                manager="updater",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
            Apply(
                manager="applier",
                object="""
						list:
						- name: a
						  value1: 3
					""",
                api_version="v1",
                conflicts=[
                    Conflict(manager="updater", path=_P("list", _KBF("name", "a"))),
                ],
            ),
            ForceApply(
                manager="applier",
                object="""
						list:
						- name: a
						  value1: 3
					""",
                api_version="v1",
            ),
        ],
        object="""
				list:
				- name: a
				  value1: 3
				- name: b
				  value1: 3
			""",
        api_version="v1",
        managed={
            "updater": V(
                _NS(
                    _P("list"),
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                False,
            ),
            "applier": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "a"), "name"),
                    _P("list", _KBF("name", "a"), "value1"),
                ),
                "v1",
                True,
            ),
        },
    ),
    "list/merge/unchanged_duplicated_item": TestCase(
        ops=[
            Update(
                manager="updater",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
            Apply(
                manager="applier",
                object="""
						list:
						- name: a
						  value1: 2
					""",
                api_version="v1",
                conflicts=[
                    Conflict(manager="updater", path=_P("list", _KBF("name", "a"))),
                ],
            ),
            ForceApply(
                manager="applier",
                object="""
						list:
						- name: a
						  value1: 3
					""",
                api_version="v1",
            ),
        ],
        object="""
				list:
				- name: a
				  value1: 3
				- name: b
				  value1: 3
			""",
        api_version="v1",
        managed={
            "updater": V(
                _NS(
                    _P("list"),
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                False,
            ),
            "applier": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "a"), "name"),
                    _P("list", _KBF("name", "a"), "value1"),
                ),
                "v1",
                True,
            ),
        },
    ),
    "list/merge/change_non_duplicated_item": TestCase(
        ops=[
            Update(
                manager="updater",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
            ForceApply(
                manager="applier",
                object="""
						list:
						- name: b
						  value1: 4
					""",
                api_version="v1",
            ),
        ],
        object="""
				list:
				- name: a
				  value1: 1
				- name: a
				  value1: 2
				- name: b
				  value1: 4
			""",
        api_version="v1",
        managed={
            "updater": V(
                _NS(
                    _P("list"),
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                ),
                "v1",
                False,
            ),
            "applier": V(
                _NS(
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                True,
            ),
        },
    ),
    "list/merge/apply_update_duplicates_apply_without": TestCase(
        ops=[
            Apply(
                manager="applier",
                object="""
						list:
						- name: a
						  value1: 1
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
            Update(
                manager="updater",
                object="""
						list:
						- name: a
						  value1: 1
						- name: a
						  value1: 2
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
            Apply(
                manager="applier",
                object="""
						list:
						- name: b
						  value1: 3
					""",
                api_version="v1",
            ),
        ],
        object="""
				list:
				- name: a
				  value1: 1
				- name: a
				  value1: 2
				- name: b
				  value1: 3
			""",
        api_version="v1",
        managed={
            "applier": V(
                _NS(
                    _P("list", _KBF("name", "b")),
                    _P("list", _KBF("name", "b"), "name"),
                    _P("list", _KBF("name", "b"), "value1"),
                ),
                "v1",
                True,
            ),
            "updater": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                ),
                "v1",
                False,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(DUPLICATES))
def test_duplicates(name: str) -> None:
    DUPLICATES[name].run(duplicatesParser)
