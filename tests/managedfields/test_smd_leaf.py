"""structured-merge-diff's merge/leaf_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, Conflict, ForceApply, Parser, TestCase, Update, V, _NS, _P

leafFieldsParser = Parser(
    """types:
- name: leafFields
  map:
    fields:
    - name: numeric
      type:
        scalar: numeric
    - name: string
      type:
        scalar: string
    - name: bool
      type:
        scalar: boolean""",
    "leafFields",
)

UPDATE_LEAF = {
    "apply_twice": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						numeric: 1
						string: "string"
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						numeric: 2
						string: "string"
						bool: false
					""",
                api_version="v1",
            ),
        ],
        object="""
				numeric: 2
				string: "string"
				bool: false
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                    _P("string"),
                    _P("bool"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_twice_different_versions": TestCase(
        ops=[
            Apply(
                manager="default",
                object="""
						numeric: 1
						string: "string"
					""",
                api_version="v1",
            ),
            Apply(
                manager="default",
                object="""
						numeric: 2
						string: "string"
						bool: false
					""",
                api_version="v2",
            ),
        ],
        object="""
				numeric: 2
				string: "string"
				bool: false
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                    _P("string"),
                    _P("bool"),
                ),
                "v2",
                False,
            ),
        },
    ),
    "apply_update_apply_no_conflict": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 1
						string: "string"
					""",
            ),
            Update(
                manager="controller",
                api_version="v1",
                object="""
						numeric: 1
						string: "string"
						bool: true
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 2
						string: "string"
					""",
            ),
        ],
        object="""
				numeric: 2
				string: "string"
				bool: true
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                    _P("string"),
                ),
                "v1",
                False,
            ),
            "controller": V(
                _NS(
                    _P("bool"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_update_apply_no_conflict_different_version": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 1
						string: "string"
					""",
            ),
            Update(
                manager="controller",
                api_version="v2",
                object="""
						numeric: 1
						string: "string"
						bool: true
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 2
						string: "string"
					""",
            ),
        ],
        object="""
				numeric: 2
				string: "string"
				bool: true
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                    _P("string"),
                ),
                "v1",
                False,
            ),
            "controller": V(
                _NS(
                    _P("bool"),
                ),
                "v2",
                False,
            ),
        },
    ),
    "apply_update_apply_with_conflict": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 1
						string: "string"
					""",
            ),
            Update(
                manager="controller",
                api_version="v1",
                object="""
						numeric: 1
						string: "controller string"
						bool: true
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 2
						string: "user string"
					""",
                conflicts=[
                    Conflict(manager="controller", path=_P("string")),
                ],
            ),
            ForceApply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 2
						string: "user string"
					""",
            ),
        ],
        object="""
				numeric: 2
				string: "user string"
				bool: true
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                    _P("string"),
                ),
                "v1",
                False,
            ),
            "controller": V(
                _NS(
                    _P("bool"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_update_apply_with_conflict_across_version": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 1
						string: "string"
					""",
            ),
            Update(
                manager="controller",
                api_version="v2",
                object="""
						numeric: 1
						string: "controller string"
						bool: true
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 2
						string: "user string"
					""",
                conflicts=[
                    Conflict(manager="controller", path=_P("string")),
                ],
            ),
            ForceApply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 2
						string: "user string"
					""",
            ),
        ],
        object="""
				numeric: 2
				string: "user string"
				bool: true
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("numeric"),
                    _P("string"),
                ),
                "v1",
                False,
            ),
            "controller": V(
                _NS(
                    _P("bool"),
                ),
                "v2",
                False,
            ),
        },
    ),
    "apply_twice_remove": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 1
						string: "string"
						bool: false
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						string: "new string"
					""",
            ),
        ],
        object="""
				string: "new string"
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("string"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "update_apply_omits": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 2
					""",
            ),
            Update(
                manager="controller",
                api_version="v1",
                object="""
						numeric: 1
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""""",
            ),
        ],
        object="""
						numeric: 1
			""",
        api_version="v1",
        managed={
            "controller": V(
                _NS(
                    _P("numeric"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_twice_remove_different_version": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						numeric: 1
						string: "string"
						bool: false
					""",
            ),
            Apply(
                manager="default",
                api_version="v2",
                object="""
						string: "new string"
					""",
            ),
        ],
        object="""
				string: "new string"
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("string"),
                ),
                "v2",
                False,
            ),
        },
    ),
    "update_remove_empty_set": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						string: "string"
					""",
            ),
            Update(
                manager="controller",
                api_version="v1",
                object="""
						string: "new string"
					""",
            ),
        ],
        object="""
				string: "new string"
			""",
        api_version="v1",
        managed={
            "controller": V(
                _NS(
                    _P("string"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_remove_empty_set": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						string: "string"
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="",
            ),
        ],
        object="""
			""",
        api_version="v1",
        managed={},
    ),
}


@pytest.mark.parametrize("name", sorted(UPDATE_LEAF))
def test_update_leaf(name: str) -> None:
    UPDATE_LEAF[name].run(leafFieldsParser)
