"""structured-merge-diff's merge/nested_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, Parser, TestCase, Update, V, _KBF, _NS, _P, _V

# Known differences from kube-apiserver and structured-merge-diff (strict xfail, see tests/conftest.py)
KNOWN_GAPS: dict[str, str] = {}


nestedTypeParser = Parser(
    """types:
- name: type
  map:
    fields:
      - name: listOfLists
        type:
          namedType: listOfLists
      - name: listOfMaps
        type:
          namedType: listOfMaps
      - name: mapOfLists
        type:
          namedType: mapOfLists
      - name: mapOfMaps
        type:
          namedType: mapOfMaps
      - name: mapOfMapsRecursive
        type:
          namedType: mapOfMapsRecursive
      - name: struct
        type:
          namedType: struct
- name: struct
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: value
      type:
        scalar: numeric
- name: listOfLists
  list:
    elementType:
      map:
        fields:
        - name: name
          type:
            scalar: string
        - name: value
          type:
            namedType: list
    elementRelationship: associative
    keys:
    - name
- name: list
  list:
    elementType:
      scalar: string
    elementRelationship: associative
- name: listOfMaps
  list:
    elementType:
      map:
        fields:
        - name: name
          type:
            scalar: string
        - name: value
          type:
            namedType: map
    elementRelationship: associative
    keys:
    - name
- name: map
  map:
    elementType:
      scalar: string
    elementRelationship: associative
- name: mapOfLists
  map:
    elementType:
      namedType: list
    elementRelationship: associative
- name: mapOfMaps
  map:
    elementType:
      namedType: map
    elementRelationship: associative
- name: mapOfMapsRecursive
  map:
    elementType:
      namedType: mapOfMapsRecursive
    elementRelationship: associative
""",
    "type",
)

UPDATE_NESTED_TYPE = {
    "listOfLists_change_value": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						listOfLists:
						- name: a
						  value:
						  - b
						  - c
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						listOfLists:
						- name: a
						  value:
						  - a
						  - c
					""",
                api_version="v1",
            ),
        ],
        object="""
				listOfLists:
				- name: a
				  value:
				  - a
				  - c
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("listOfLists", _KBF("name", "a")),
                    _P("listOfLists", _KBF("name", "a"), "name"),
                    _P("listOfLists", _KBF("name", "a"), "value", _V("a")),
                    _P("listOfLists", _KBF("name", "a"), "value", _V("c")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "listOfLists_change_key_and_value": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						listOfLists:
						- name: a
						  value:
						  - b
						  - c
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						listOfLists:
						- name: b
						  value:
						  - a
						  - c
					""",
                api_version="v1",
            ),
        ],
        object="""
				listOfLists:
				- name: b
				  value:
				  - a
				  - c
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("listOfLists", _KBF("name", "b")),
                    _P("listOfLists", _KBF("name", "b"), "name"),
                    _P("listOfLists", _KBF("name", "b"), "value", _V("a")),
                    _P("listOfLists", _KBF("name", "b"), "value", _V("c")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "listOfMaps_change_value": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						listOfMaps:
						- name: a
						  value:
						    b: "x"
						    c: "y"
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						listOfMaps:
						- name: a
						  value:
						    a: "x"
						    c: "z"
					""",
                api_version="v1",
            ),
        ],
        object="""
				listOfMaps:
				- name: a
				  value:
				    a: "x"
				    c: "z"
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("listOfMaps", _KBF("name", "a")),
                    _P("listOfMaps", _KBF("name", "a"), "name"),
                    _P("listOfMaps", _KBF("name", "a"), "value", "a"),
                    _P("listOfMaps", _KBF("name", "a"), "value", "c"),
                ),
                "v1",
                True,
            ),
        },
    ),
    "listOfMaps_change_key_and_value": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						listOfMaps:
						- name: a
						  value:
						    b: "x"
						    c: "y"
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						listOfMaps:
						- name: b
						  value:
						    a: "x"
						    c: "z"
					""",
                api_version="v1",
            ),
        ],
        object="""
				listOfMaps:
				- name: b
				  value:
				    a: "x"
				    c: "z"
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("listOfMaps", _KBF("name", "b")),
                    _P("listOfMaps", _KBF("name", "b"), "name"),
                    _P("listOfMaps", _KBF("name", "b"), "value", "a"),
                    _P("listOfMaps", _KBF("name", "b"), "value", "c"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "mapOfLists_change_value": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						mapOfLists:
						  a:
						  - b
						  - c
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						mapOfLists:
						  a:
						  - a
						  - c
					""",
                api_version="v1",
            ),
        ],
        object="""
				mapOfLists:
				  a:
				  - a
				  - c
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("mapOfLists", "a"),
                    _P("mapOfLists", "a", _V("a")),
                    _P("mapOfLists", "a", _V("c")),
                ),
                "v1",
                True,
            ),
        },
    ),
    "mapOfLists_change_key_and_value": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						mapOfLists:
						  a:
						  - b
						  - c
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						mapOfLists:
						  b:
						  - a
						  - c
					""",
                api_version="v1",
            ),
        ],
        object="""
				mapOfLists:
				  b:
				  - a
				  - c
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("mapOfLists", "b"),
                    _P("mapOfLists", "b", _V("a")),
                    _P("mapOfLists", "b", _V("c")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "mapOfMaps_change_value": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						mapOfMaps:
						  a:
						    b: "x"
						    c: "y"
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						mapOfMaps:
						  a:
						    a: "x"
						    c: "z"
					""",
                api_version="v1",
            ),
        ],
        object="""
				mapOfMaps:
				  a:
				    a: "x"
				    c: "z"
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("mapOfMaps", "a"),
                    _P("mapOfMaps", "a", "a"),
                    _P("mapOfMaps", "a", "c"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "mapOfMaps_change_key_and_value": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						mapOfMaps:
						  a:
						    b: "x"
						    c: "y"
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						mapOfMaps:
						  b:
						    a: "x"
						    c: "z"
					""",
                api_version="v1",
            ),
        ],
        object="""
				mapOfMaps:
				  b:
				    a: "x"
				    c: "z"
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("mapOfMaps", "b"),
                    _P("mapOfMaps", "b", "a"),
                    _P("mapOfMaps", "b", "c"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "mapOfMapsRecursive_change_middle_key": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						mapOfMapsRecursive:
						  a:
						    b:
						      c:
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						mapOfMapsRecursive:
						  a:
						    d:
						      c:
					""",
                api_version="v1",
            ),
        ],
        object="""
				mapOfMapsRecursive:
				  a:
				    d:
				      c:
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("mapOfMapsRecursive", "a"),
                    _P("mapOfMapsRecursive", "a", "d"),
                    _P("mapOfMapsRecursive", "a", "d", "c"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "struct_apply_remove_all": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						struct:
						  name: a
						  value: 1
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
					""",
                api_version="v1",
            ),
        ],
        object="""
			""",
        api_version="v1",
        managed={},
    ),
    "struct_apply_remove_dangling": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						struct:
						  name: a
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						struct:
					""",
                api_version="v1",
            ),
        ],
        object="""
				struct:
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("struct"),
                ),
                "v1",
                True,
            ),
        },
    ),
    "struct_apply_update_remove_all": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						struct:
						  name: a
					""",
                api_version="v1",
            ),
            Update(
                manager="controller",
                object="""
						struct:
						  name: a
						  value: 1
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
					""",
                api_version="v1",
            ),
        ],
        object="""
				struct:
				  value: 1
			""",
        api_version="v1",
    ),
    "struct_apply_update_dict_dangling": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						struct:
						  name: a
					""",
                api_version="v1",
            ),
            Update(
                manager="controller",
                object="""
						struct:
						  name: a
						  value: 1
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						struct: {}
					""",
                api_version="v1",
            ),
        ],
        object="""
				struct:
				  value: 1
			""",
        api_version="v1",
    ),
    "struct_apply_update_dict_null": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						struct:
						  name: a
					""",
                api_version="v1",
            ),
            Update(
                manager="controller",
                object="""
						struct:
						  name: a
						  value: 1
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						struct:
					""",
                api_version="v1",
            ),
        ],
        object="""
				struct:
				  value: 1
			""",
        api_version="v1",
    ),
    "struct_apply_update_took_over": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						struct:
						  name: a
					""",
                api_version="v1",
            ),
            Update(
                manager="controller",
                object="""
						struct:
						  name: b
						  value: 1
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						struct:
					""",
                api_version="v1",
            ),
        ],
        object="""
				struct:
				  name: b
				  value: 1
			""",
        api_version="v1",
    ),
}


@pytest.mark.parametrize("name", sorted(UPDATE_NESTED_TYPE))
def test_update_nested_type(name: str) -> None:
    UPDATE_NESTED_TYPE[name].run(nestedTypeParser)
