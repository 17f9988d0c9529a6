"""structured-merge-diff's merge/multiple_appliers_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kapi.object.managedfields.updater import MissingVersion
from tests.managedfields.smd_harness import (
    Apply,
    Conflict,
    DeducedParser,
    ForceApply,
    Parser,
    TestCase,
    Update,
    V,
    _KBF,
    _NS,
    _P,
    _V,
)

from tests.managedfields.test_smd_key import associativeListParser
from tests.managedfields.test_smd_nested import nestedTypeParser

# Known differences from kube-apiserver and structured-merge-diff (strict xfail, see tests/conftest.py)
KNOWN_GAPS: dict[str, str] = {}


structMultiversionParser = Parser(
    """types:
- name: v1
  map:
    fields:
      - name: struct
        type:
          namedType: struct
      - name: version
        type:
          scalar: string
- name: struct
  map:
    fields:
      - name: name
        type:
          scalar: string
      - name: scalarField_v1
        type:
          scalar: string
      - name: complexField_v1
        type:
          namedType: complex
- name: complex
  map:
    fields:
      - name: name
        type:
          scalar: string
- name: v2
  map:
    fields:
      - name: struct
        type:
          namedType: struct_v2
      - name: version
        type:
          scalar: string
- name: struct_v2
  map:
    fields:
      - name: name
        type:
          scalar: string
      - name: scalarField_v2
        type:
          scalar: string
      - name: complexField_v2
        type:
          namedType: complex_v2
- name: complex_v2
  map:
    fields:
      - name: name
        type:
          scalar: string
- name: v3
  map:
    fields:
      - name: struct
        type:
          namedType: struct_v3
      - name: version
        type:
          scalar: string
- name: struct_v3
  map:
    fields:
      - name: name
        type:
          scalar: string
      - name: scalarField_v3
        type:
          scalar: string
      - name: complexField_v3
        type:
          namedType: complex_v3
- name: complex_v3
  map:
    fields:
      - name: name
        type:
          scalar: string
""",
    "v1",
)

atomicMapParser = Parser(
    """types:
- name: v1
  map:
    fields:
      - name: atomicMap
        type:
          namedType: atomicMap
- name: atomicMap
  map:
    fields:
      - name: field1
        type:
          scalar: string
      - name: field2
        type:
          scalar: string
    elementRelationship: atomic
""",
    "v1",
)

multiversionWithReliantFieldsParser = Parser(
    """types:
- name: v1
  map:
    fields:
      - name: field_foo_rely_on_bar
        type:
          scalar: string
      - name: common_field
        type:
          scalar: string
- name: v2
  map:
    fields:
      - name: required_field_bar
        type:
          scalar: string
      - name: common_field
        type:
          scalar: string
""",
    "v1",
)

versionDoesntMatchTypeName = Parser(
    """types:
- name: TypeV1
  map:
    fields:
      - name: field_foo_rely_on_bar
        type:
          scalar: string
      - name: common_field
        type:
          scalar: string
- name: TypeV2
  map:
    fields:
      - name: required_field_bar
        type:
          scalar: string
      - name: common_field
        type:
          scalar: string
""",
    "TypeV2",
)

MULTIPLE_APPLIERS_SET = {
    "remove_one": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                api_version="v1",
                object="""
						list:
						- name: a
						- name: b
					""",
            ),
            Apply(
                manager="apply-two",
                api_version="v2",
                object="""
						list:
						- name: c
					""",
            ),
            Apply(
                manager="apply-one",
                api_version="v3",
                object="""
						list:
						- name: a
					""",
            ),
        ],
        object="""
				list:
				- name: a
				- name: c
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "a"), "name"),
                ),
                "v3",
                False,
            ),
            "apply-two": V(
                _NS(
                    _P("list", _KBF("name", "c")),
                    _P("list", _KBF("name", "c"), "name"),
                ),
                "v2",
                False,
            ),
        },
    ),
    "same_value_no_conflict": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                api_version="v1",
                object="""
						list:
						- name: a
						  value: 0
					""",
            ),
            Apply(
                manager="apply-two",
                api_version="v2",
                object="""
						list:
						- name: a
						  value: 0
					""",
            ),
        ],
        object="""
				list:
				- name: a
				  value: 0
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "a"), "name"),
                    _P("list", _KBF("name", "a"), "value"),
                ),
                "v1",
                False,
            ),
            "apply-two": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "a"), "name"),
                    _P("list", _KBF("name", "a"), "value"),
                ),
                "v2",
                False,
            ),
        },
    ),
    "change_value_yes_conflict": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                api_version="v1",
                object="""
						list:
						- name: a
						  value: 0
					""",
            ),
            Apply(
                manager="apply-two",
                api_version="v2",
                object="""
						list:
						- name: a
						  value: 1
					""",
                conflicts=[
                    Conflict(manager="apply-one", path=_P("list", _KBF("name", "a"), "value")),
                ],
            ),
        ],
        object="""
				list:
				- name: a
				  value: 0
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "a"), "name"),
                    _P("list", _KBF("name", "a"), "value"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "remove_one_keep_one": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                api_version="v1",
                object="""
						list:
						- name: a
						- name: b
						- name: c
					""",
            ),
            Apply(
                manager="apply-two",
                api_version="v2",
                object="""
						list:
						- name: c
						- name: d
					""",
            ),
            Apply(
                manager="apply-one",
                api_version="v3",
                object="""
						list:
						- name: a
					""",
            ),
        ],
        object="""
				list:
				- name: a
				- name: c
				- name: d
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("list", _KBF("name", "a")),
                    _P("list", _KBF("name", "a"), "name"),
                ),
                "v3",
                False,
            ),
            "apply-two": V(
                _NS(
                    _P("list", _KBF("name", "c")),
                    _P("list", _KBF("name", "d")),
                    _P("list", _KBF("name", "c"), "name"),
                    _P("list", _KBF("name", "d"), "name"),
                ),
                "v2",
                False,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(MULTIPLE_APPLIERS_SET))
def test_multiple_appliers_set(name: str) -> None:
    MULTIPLE_APPLIERS_SET[name].run(associativeListParser)


MULTIPLE_APPLIERS_NESTED_TYPE = {
    "remove_one_keep_one_with_two_sub_items": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
						- name: b
						  value:
						  - c
					""",
                api_version="v1",
            ),
            Apply(
                manager="apply-two",
                object="""
						listOfLists:
						- name: b
						  value:
						  - d
					""",
                api_version="v2",
            ),
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
					""",
                api_version="v3",
            ),
        ],
        object="""
				listOfLists:
				- name: a
				- name: b
				  value:
				  - d
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("listOfLists", _KBF("name", "a")),
                    _P("listOfLists", _KBF("name", "a"), "name"),
                ),
                "v3",
                False,
            ),
            "apply-two": V(
                _NS(
                    _P("listOfLists", _KBF("name", "b")),
                    _P("listOfLists", _KBF("name", "b"), "name"),
                    _P("listOfLists", _KBF("name", "b"), "value", _V("d")),
                ),
                "v2",
                False,
            ),
        },
    ),
    "remove_one_keep_one_with_dangling_subitem": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
						- name: b
						  value:
						  - c
					""",
                api_version="v1",
            ),
            Apply(
                manager="apply-two",
                object="""
						listOfLists:
						- name: b
						  value:
						  - d
					""",
                api_version="v2",
            ),
            Update(
                manager="controller",
                object="""
						listOfLists:
						- name: a
						- name: b
						  value:
						  - c
						  - d
						  - e
					""",
                api_version="v2",
            ),
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
					""",
                api_version="v3",
            ),
        ],
        object="""
				listOfLists:
				- name: a
				- name: b
				  value:
				  - d
				  - e
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("listOfLists", _KBF("name", "a")),
                    _P("listOfLists", _KBF("name", "a"), "name"),
                ),
                "v3",
                False,
            ),
            "apply-two": V(
                _NS(
                    _P("listOfLists", _KBF("name", "b")),
                    _P("listOfLists", _KBF("name", "b"), "name"),
                    _P("listOfLists", _KBF("name", "b"), "value", _V("d")),
                ),
                "v2",
                False,
            ),
            "controller": V(
                _NS(
                    _P("listOfLists", _KBF("name", "b"), "value", _V("e")),
                ),
                "v2",
                False,
            ),
        },
    ),
    "remove_one_with_dangling_subitem_keep_one": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
						- name: b
						  value:
						  - c
					""",
                api_version="v1",
            ),
            Apply(
                manager="apply-two",
                object="""
						listOfLists:
						- name: a
						  value:
						  - b
					""",
                api_version="v2",
            ),
            Update(
                manager="controller",
                object="""
						listOfLists:
						- name: a
						  value:
						  - b
						- name: b
						  value:
						  - c
						  - d
					""",
                api_version="v2",
            ),
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
					""",
                api_version="v3",
            ),
        ],
        object="""
				listOfLists:
				- name: a
				  value:
				  - b
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("listOfLists", _KBF("name", "a")),
                    _P("listOfLists", _KBF("name", "a"), "name"),
                ),
                "v3",
                False,
            ),
            "apply-two": V(
                _NS(
                    _P("listOfLists", _KBF("name", "a")),
                    _P("listOfLists", _KBF("name", "a"), "name"),
                    _P("listOfLists", _KBF("name", "a"), "value", _V("b")),
                ),
                "v2",
                False,
            ),
        },
    ),
    "remove_one_with_managed_subitem_keep_one": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
						- name: b
						  value:
						  - c
					""",
                api_version="v1",
            ),
            Apply(
                manager="apply-two",
                object="""
						listOfLists:
						- name: a
						  value:
						  - b
					""",
                api_version="v2",
            ),
            Update(
                manager="controller",
                object="""
						listOfLists:
						- name: a
						  value:
						  - b
						- name: b
						  value:
						  - c
						  - d
					""",
                api_version="v2",
            ),
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
					""",
                api_version="v3",
            ),
        ],
        object="""
				listOfLists:
				- name: a
				  value:
				  - b
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("listOfLists", _KBF("name", "a")),
                    _P("listOfLists", _KBF("name", "a"), "name"),
                ),
                "v3",
                False,
            ),
            "apply-two": V(
                _NS(
                    _P("listOfLists", _KBF("name", "a")),
                    _P("listOfLists", _KBF("name", "a"), "name"),
                    _P("listOfLists", _KBF("name", "a"), "value", _V("b")),
                ),
                "v2",
                False,
            ),
        },
    ),
    "remove_one_keep_one_with_sub_item": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
						- name: b
						  value:
						  - c
					""",
                api_version="v1",
            ),
            Apply(
                manager="apply-two",
                object="""
						listOfLists:
						- name: b
						  value:
						  - d
					""",
                api_version="v2",
            ),
            Apply(
                manager="apply-one",
                object="""
						listOfLists:
						- name: a
					""",
                api_version="v3",
            ),
        ],
        object="""
				listOfLists:
				- name: a
				- name: b
				  value:
				  - d
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("listOfLists", _KBF("name", "a")),
                    _P("listOfLists", _KBF("name", "a"), "name"),
                ),
                "v3",
                False,
            ),
            "apply-two": V(
                _NS(
                    _P("listOfLists", _KBF("name", "b")),
                    _P("listOfLists", _KBF("name", "b"), "name"),
                    _P("listOfLists", _KBF("name", "b"), "value", _V("d")),
                ),
                "v2",
                False,
            ),
        },
    ),
    "multiple_appliers_recursive_map": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                object="""
						mapOfMapsRecursive:
						  a:
						    b:
						  c:
						    d:
					""",
                api_version="v1",
            ),
            Apply(
                manager="apply-two",
                object="""
						mapOfMapsRecursive:
						  a:
						  c:
						    d:
					""",
                api_version="v2",
            ),
            Update(
                manager="controller-one",
                object="""
						mapOfMapsRecursive:
						  a:
						    b:
						      c:
						  c:
						    d:
						      e:
					""",
                api_version="v3",
            ),
            Update(
                manager="controller-two",
                object="""
						mapOfMapsRecursive:
						  a:
						    b:
						      c:
						        d:
						  c:
						    d:
						      e:
						        f:
					""",
                api_version="v2",
            ),
            Update(
                manager="controller-one",
                object="""
						mapOfMapsRecursive:
						  a:
						    b:
						      c:
						        d:
						          e:
						  c:
						    d:
						      e:
						        f:
						          g:
					""",
                api_version="v3",
            ),
            Apply(
                manager="apply-one",
                object="""
						mapOfMapsRecursive:
					""",
                api_version="v4",
            ),
        ],
        object="""
				mapOfMapsRecursive:
				  a:
				  c:
				    d:
				      e:
				        f:
				          g:
			""",
        api_version="v1",
        managed={
            "apply-one": V(
                _NS(
                    _P("mapOfMapsRecursive"),
                ),
                "v4",
                False,
            ),
            "apply-two": V(
                _NS(
                    _P("mapOfMapsRecursive", "a"),
                    _P("mapOfMapsRecursive", "c"),
                    _P("mapOfMapsRecursive", "c", "d"),
                ),
                "v2",
                False,
            ),
            "controller-one": V(
                _NS(
                    _P("mapOfMapsRecursive", "c", "d", "e"),
                    _P("mapOfMapsRecursive", "c", "d", "e", "f", "g"),
                ),
                "v3",
                False,
            ),
            "controller-two": V(
                _NS(
                    _P("mapOfMapsRecursive", "c", "d", "e", "f"),
                ),
                "v2",
                False,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(MULTIPLE_APPLIERS_NESTED_TYPE))
def test_multiple_appliers_nested_type(name: str) -> None:
    MULTIPLE_APPLIERS_NESTED_TYPE[name].run(nestedTypeParser)


MULTIPLE_APPLIERS_DEDUCED_TYPE = {
    "multiple_appliers_recursive_map_deduced": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                object="""
						a:
						  b:
						c:
						  d:
					""",
                api_version="v1",
            ),
            Apply(
                manager="apply-two",
                object="""
						a:
						c:
						  d:
					""",
                api_version="v2",
            ),
            Update(
                manager="controller-one",
                object="""
						a:
						  b:
						    c:
						c:
						  d:
						    e:
					""",
                api_version="v3",
            ),
            Update(
                manager="controller-two",
                object="""
						a:
						  b:
						    c:
						      d:
						c:
						  d:
						    e:
						      f:
					""",
                api_version="v2",
            ),
            Update(
                manager="controller-one",
                object="""
						a:
						  b:
						    c:
						      d:
						        e:
						c:
						  d:
						    e:
						      f:
						        g:
					""",
                api_version="v3",
            ),
            Apply(
                manager="apply-one",
                object="""""",
                api_version="v4",
            ),
        ],
        object="""
				a:
				c:
				  d:
				    e:
				      f:
				        g:
			""",
        api_version="v1",
        managed={
            "apply-two": V(
                _NS(
                    _P("a"),
                    _P("c"),
                    _P("c", "d"),
                ),
                "v2",
                False,
            ),
            "controller-one": V(
                _NS(
                    _P("c", "d", "e"),
                    _P("c", "d", "e", "f", "g"),
                ),
                "v3",
                False,
            ),
            "controller-two": V(
                _NS(
                    _P("c", "d", "e", "f"),
                ),
                "v2",
                False,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(MULTIPLE_APPLIERS_DEDUCED_TYPE))
def test_multiple_appliers_deduced_type(name: str) -> None:
    MULTIPLE_APPLIERS_DEDUCED_TYPE[name].run(DeducedParser)


MULTIPLE_APPLIER_ATOMIC_MAPS = {
    "force": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                api_version="v1",
                object="""
						atomicMap:
						  field1: a
					""",
            ),
            Apply(
                manager="apply-two",
                api_version="v1",
                object="""
						atomicMap:
						  field2: b
					""",
                conflicts=[
                    Conflict(manager="apply-one", path=_P("atomicMap")),
                ],
            ),
            ForceApply(
                manager="apply-two",
                api_version="v1",
                object="""
						atomicMap:
						  field2: b
					""",
            ),
        ],
        object="""
				atomicMap:
				  field2: b
			""",
        api_version="v1",
        managed={
            "apply-two": V(
                _NS(
                    _P("atomicMap"),
                ),
                "v1",
                False,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(MULTIPLE_APPLIER_ATOMIC_MAPS))
def test_multiple_applier_atomic_maps(name: str) -> None:
    MULTIPLE_APPLIER_ATOMIC_MAPS[name].run(atomicMapParser)


class RepeatingConverter:
    """SMD's repeatingConverter: in version vN every key below the root's first repeats its first
    letter N times (``a`` in v1 is ``aaa`` in v3); a version not of that form is missing."""

    def convert(self, obj: Any, api_version: str) -> Any:
        if not re.fullmatch(r"v[0-9]+", api_version):
            raise MissingVersion("cannot convert to invalid version")
        n = int(api_version[1:])

        def rename(v: Any) -> Any:
            return {k[0] * n: rename(x) for k, x in v.items()} if isinstance(v, dict) else None

        return {k: rename(v) for k, v in list(obj.items())[:1]}


MULTIPLE_APPLIERS_REAL_CONVERSION = {
    "multiple_appliers_recursive_map_real_conversion": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                api_version="v1",
                object="""
            mapOfMapsRecursive:
              a:
                b:
              c:
                d:
        """,
            ),
            Apply(
                manager="apply-two",
                api_version="v2",
                object="""
            mapOfMapsRecursive:
              aa:
              cc:
                dd:
        """,
            ),
            Update(
                manager="controller",
                api_version="v3",
                object="""
            mapOfMapsRecursive:
              aaa:
                bbb:
                  ccc:
                    ddd:
              ccc:
                ddd:
                  eee:
                    fff:
        """,
            ),
            Apply(
                manager="apply-one",
                api_version="v4",
                object="""
            mapOfMapsRecursive:
        """,
            ),
        ],
        object="""
        mapOfMapsRecursive:
          aaaa:
          cccc:
            dddd:
              eeee:
                ffff:
    """,
        api_version="v4",
        managed={
            "apply-one": V(_NS(_P("mapOfMapsRecursive")), "v4", False),
            "apply-two": V(
                _NS(
                    _P("mapOfMapsRecursive", "aa"), _P("mapOfMapsRecursive", "cc"), _P("mapOfMapsRecursive", "cc", "dd")
                ),
                "v2",
                False,
            ),
            "controller": V(
                _NS(
                    _P("mapOfMapsRecursive", "ccc", "ddd", "eee"), _P("mapOfMapsRecursive", "ccc", "ddd", "eee", "fff")
                ),
                "v3",
                False,
            ),
        },
    ),
    "appliers_remove_from_controller_real_conversion": TestCase(
        ops=[
            Apply(
                manager="apply",
                api_version="v3",
                object="""
            mapOfMapsRecursive:
              aaa:
                bbb:
        """,
            ),
            Update(
                manager="controller",
                api_version="v1",
                object="""
            mapOfMapsRecursive:
              a:
                b:
                  c:
        """,
            ),
            Apply(
                manager="apply",
                api_version="v2",
                object="""
            mapOfMapsRecursive:
              aa:
                bb:
              cc:
                dd:
        """,
            ),
            Apply(
                manager="apply",
                api_version="v3",
                object="""
            mapOfMapsRecursive:
              aaa:
              ccc:
        """,
            ),
        ],
        object="""
        mapOfMapsRecursive:
          aaa:
          ccc:
    """,
        api_version="v3",
        managed={
            "apply": V(_NS(_P("mapOfMapsRecursive", "aaa"), _P("mapOfMapsRecursive", "ccc")), "v3", False),
        },
    ),
    "applier_updater_shared_ownership_real_conversion": TestCase(
        ops=[
            Update(
                manager="updater",
                api_version="v1",
                object="""
            mapOfMapsRecursive:
              a:
                b:
                  c:
        """,
            ),
            Apply(
                manager="apply",
                api_version="v2",
                object="""
            mapOfMapsRecursive:
              aa:
                bb:
              cc:
                dd:
        """,
            ),
            Apply(
                manager="apply",
                api_version="v3",
                object="""
            mapOfMapsRecursive:
              aaa:
              ccc:
        """,
            ),
        ],
        object="""
        mapOfMapsRecursive:
          aaa:
            bbb:
              ccc:
          ccc:
    """,
        api_version="v3",
        managed={
            "updater": V(
                _NS(
                    _P("mapOfMapsRecursive"),
                    _P("mapOfMapsRecursive", "a"),
                    _P("mapOfMapsRecursive", "a", "b"),
                    _P("mapOfMapsRecursive", "a", "b", "c"),
                ),
                "v1",
                False,
            ),
            "apply": V(_NS(_P("mapOfMapsRecursive", "aaa"), _P("mapOfMapsRecursive", "ccc")), "v3", False),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(MULTIPLE_APPLIERS_REAL_CONVERSION))
def test_multiple_appliers_real_conversion(name: str) -> None:
    """SMD's TestMultipleAppliersRealConversion: each manager judged and pruned in its own version."""
    MULTIPLE_APPLIERS_REAL_CONVERSION[name].run(nestedTypeParser, RepeatingConverter())
