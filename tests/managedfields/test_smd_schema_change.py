"""structured-merge-diff's merge/schema_change_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, ChangeParser, Conflict, ForceApply, Parser, TestCase, V, _NS, _P

# Known differences from kube-apiserver and structured-merge-diff (strict xfail, see tests/conftest.py)
KNOWN_GAPS: dict[str, str] = {}


structParser = Parser(
    """types:
- name: v1
  map:
    fields:
      - name: struct
        type:
          namedType: struct
- name: struct
  map:
    fields:
    - name: numeric
      type:
        scalar: numeric
    - name: string
      type:
        scalar: string""",
    "v1",
)

structWithAtomicParser = Parser(
    """types:
- name: v1
  map:
    fields:
      - name: struct
        type:
          namedType: struct
- name: struct
  map:
    fields:
    - name: numeric
      type:
        scalar: numeric
    - name: string
      type:
        scalar: string
    elementRelationship: atomic""",
    "v1",
)

associativeListParserOld = Parser(
    """types:
- name: v1
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
    "v1",
)

associativeListParserNewOptionalKey = Parser(
    """types:
- name: v1
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
    - id
- name: myElement
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: id
      type:
        scalar: numeric
    - name: value
      type:
        scalar: numeric
""",
    "v1",
)

associativeListParserNewKeyWithDefault = Parser(
    """types:
- name: v1
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
    - id
- name: myElement
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: id
      type:
        scalar: numeric
      default: 1
    - name: value
      type:
        scalar: numeric
""",
    "v1",
)

associativeListParserPromoteKeyBefore = Parser(
    """types:
- name: v1
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
    - name: id
      type:
        scalar: numeric
    - name: value
      type:
        scalar: numeric
""",
    "v1",
)

associativeListParserPromoteKeyAfter = Parser(
    """types:
- name: v1
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
    - id
- name: myElement
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: id
      type:
        scalar: numeric
    - name: value
      type:
        scalar: numeric
""",
    "v1",
)

GRANULAR_TO_ATOMIC_SCHEMA_CHANGES = {
    "to-atomic": TestCase(
        ops=[
            Apply(
                manager="one",
                object="""
						struct:
						  numeric: 1
					""",
                api_version="v1",
            ),
            ChangeParser(parser=structWithAtomicParser),
            Apply(
                manager="two",
                object="""
						struct:
						  string: "string"
					""",
                api_version="v1",
                conflicts=[
                    Conflict(manager="one", path=_P("struct")),
                ],
            ),
            ForceApply(
                manager="two",
                object="""
						struct:
						  string: "string"
					""",
                api_version="v1",
            ),
        ],
        object="""
				struct:
				  string: "string"
			""",
        api_version="v1",
        managed={
            "two": V(
                _NS(
                    _P("struct"),
                ),
                "v1",
                True,
            ),
        },
    ),
    "to-atomic-owner-with-no-child-fields": TestCase(
        ops=[
            Apply(
                manager="one",
                object="""
						struct:
						  numeric: 1
					""",
                api_version="v1",
            ),
            ForceApply(
                manager="two",
                object="""
						struct:
						  numeric: 2
					""",
                api_version="v1",
            ),
            ChangeParser(parser=structWithAtomicParser),
            Apply(
                manager="three",
                object="""
						struct:
						  string: "string"
					""",
                api_version="v1",
                conflicts=[
                    Conflict(manager="two", path=_P("struct")),
                ],
            ),
            ForceApply(
                manager="two",
                object="""
						struct:
						  string: "string"
					""",
                api_version="v1",
            ),
        ],
        object="""
				struct:
				  string: "string"
			""",
        api_version="v1",
        managed={
            "two": V(
                _NS(
                    _P("struct"),
                ),
                "v1",
                True,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(GRANULAR_TO_ATOMIC_SCHEMA_CHANGES))
def test_granular_to_atomic_schema_changes(name: str) -> None:
    GRANULAR_TO_ATOMIC_SCHEMA_CHANGES[name].run(structParser)


ATOMIC_TO_GRANULAR_SCHEMA_CHANGES = {
    "to-granular": TestCase(
        ops=[
            Apply(
                manager="one",
                object="""
						struct:
						  numeric: 1
						  string: "a"
					""",
                api_version="v1",
            ),
            Apply(
                manager="two",
                object="""
						struct:
						  string: "b"
					""",
                api_version="v1",
                conflicts=[
                    Conflict(manager="one", path=_P("struct")),
                ],
            ),
            ChangeParser(parser=structParser),
            Apply(
                manager="two",
                object="""
						struct:
						  string: "b"
					""",
                api_version="v1",
            ),
        ],
        object="""
				struct:
				  numeric: 1
				  string: "b"
			""",
        api_version="v1",
        managed={
            "one": V(
                _NS(
                    _P("struct"),
                ),
                "v1",
                True,
            ),
            "two": V(
                _NS(
                    _P("struct", "string"),
                ),
                "v1",
                True,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(ATOMIC_TO_GRANULAR_SCHEMA_CHANGES))
def test_atomic_to_granular_schema_changes(name: str) -> None:
    ATOMIC_TO_GRANULAR_SCHEMA_CHANGES[name].run(structWithAtomicParser)
