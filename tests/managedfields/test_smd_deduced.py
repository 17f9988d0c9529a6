"""structured-merge-diff's merge/deduced_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, Conflict, DeducedParser, ForceApply, TestCase, Update, V, _NS, _P

DEDUCED = {
    "leaf_apply_twice": TestCase(
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
    "leaf_apply_update_apply_no_conflict": TestCase(
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
    "leaf_apply_update_apply_with_conflict": TestCase(
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
    "leaf_apply_twice_remove": TestCase(
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
    "leaf_update_remove_empty_set": TestCase(
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
    "apply_twice_list_is_atomic": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- c
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- d
						- c
						- b
					""",
            ),
        ],
        object="""
				list:
				- a
				- d
				- c
				- b
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(_P("list")),
                "v1",
                False,
            ),
        },
    ),
    "apply_update_apply_list": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- c
					""",
            ),
            Update(
                manager="controller",
                api_version="v1",
                object="""
						list:
						- a
						- b
						- c
						- d
					""",
            ),
            ForceApply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- b
						- c
					""",
            ),
        ],
        object="""
				list:
				- a
				- b
				- c
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(_P("list")),
                "v1",
                False,
            ),
        },
    ),
    "leaf_apply_remove_empty_set": TestCase(
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
                object="""""",
            ),
        ],
        object="""""",
        api_version="v1",
        managed={},
    ),
    "apply_update_apply_nested": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						a: 1
						b:
						  c:
						    d: 2
						    e:
						    - 1
						    - 2
						    - 3
						    f:
						    - name: n
						      value: 1
					""",
            ),
            Update(
                manager="controller",
                api_version="v1",
                object="""
						a: 1
						b:
						  c:
						    d: 3
						    e:
						    - 1
						    - 2
						    - 3
						    - 4
						    f:
						    - name: n
						      value: 2
						g: 5
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						a: 2
						b:
						  c:
						    d: 2
						    e:
						    - 3
						    - 2
						    - 1
						    f:
						    - name: n
						      value: 1
					""",
                conflicts=[
                    Conflict(manager="controller", path=_P("b", "c", "d")),
                    Conflict(manager="controller", path=_P("b", "c", "e")),
                    Conflict(manager="controller", path=_P("b", "c", "f")),
                ],
            ),
            ForceApply(
                manager="default",
                api_version="v1",
                object="""
						a: 2
						b:
						  c:
						    d: 2
						    e:
						    - 3
						    - 2
						    - 1
						    f:
						    - name: n
						      value: 1
					""",
            ),
        ],
        object="""
				a: 2
				b:
				  c:
				    d: 2
				    e:
				    - 3
				    - 2
				    - 1
				    f:
				    - name: n
				      value: 1
				g: 5
			""",
        api_version="v1",
    ),
    "apply_update_apply_nested_different_version": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						a: 1
						b:
						  c:
						    d: 2
						    e:
						    - 1
						    - 2
						    - 3
						    f:
						    - name: n
						      value: 1
					""",
            ),
            Update(
                manager="controller",
                api_version="v2",
                object="""
						a: 1
						b:
						  c:
						    d: 3
						    e:
						    - 1
						    - 2
						    - 3
						    - 4
						    f:
						    - name: n
						      value: 2
						g: 5
					""",
            ),
            Apply(
                manager="default",
                api_version="v3",
                object="""
						a: 2
						b:
						  c:
						    d: 2
						    e:
						    - 3
						    - 2
						    - 1
						    f:
						    - name: n
						      value: 1
					""",
                conflicts=[
                    Conflict(manager="controller", path=_P("b", "c", "d")),
                    Conflict(manager="controller", path=_P("b", "c", "e")),
                    Conflict(manager="controller", path=_P("b", "c", "f")),
                ],
            ),
            ForceApply(
                manager="default",
                api_version="v3",
                object="""
						a: 2
						b:
						  c:
						    d: 2
						    e:
						    - 3
						    - 2
						    - 1
						    f:
						    - name: n
						      value: 1
					""",
            ),
        ],
        object="""
				a: 2
				b:
				  c:
				    d: 2
				    e:
				    - 3
				    - 2
				    - 1
				    f:
				    - name: n
				      value: 1
				g: 5
			""",
        api_version="v1",
    ),
}


@pytest.mark.parametrize("name", sorted(DEDUCED))
def test_deduced(name: str) -> None:
    DEDUCED[name].run(DeducedParser)
