"""structured-merge-diff's merge/set_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, Parser, TestCase, Update, V, _NS, _P, _V

setFieldsParser = Parser(
    """types:
- name: sets
  map:
    fields:
    - name: list
      type:
        list:
          elementType:
            scalar: string
          elementRelationship: associative""",
    "sets",
)

UPDATE_SET = {
    "apply_twice": TestCase(
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
						- b
						- c
						- d
					""",
            ),
        ],
        object="""
				list:
				- a
				- b
				- c
				- d
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("b")),
                    _P("list", _V("c")),
                    _P("list", _V("d")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_update_apply_no_overlap": TestCase(
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
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- aprime
						- c
						- cprime
					""",
            ),
        ],
        object="""
				list:
				- a
				- b
				- aprime
				- c
				- d
				- cprime
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("aprime")),
                    _P("list", _V("c")),
                    _P("list", _V("cprime")),
                ),
                "v1",
                False,
            ),
            "controller": V(
                _NS(
                    _P("list", _V("b")),
                    _P("list", _V("d")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_update_apply_no_overlap_and_different_version": TestCase(
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
                api_version="v2",
                object="""
						list:
						- a
						- b
						- c
						- d
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- aprime
						- c
						- cprime
					""",
            ),
        ],
        object="""
				list:
				- a
				- b
				- aprime
				- c
				- d
				- cprime
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("aprime")),
                    _P("list", _V("c")),
                    _P("list", _V("cprime")),
                ),
                "v1",
                False,
            ),
            "controller": V(
                _NS(
                    _P("list", _V("b")),
                    _P("list", _V("d")),
                ),
                "v2",
                False,
            ),
        },
    ),
    "apply_update_apply_with_overlap": TestCase(
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
            Apply(
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
				- d
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("b")),
                    _P("list", _V("c")),
                ),
                "v1",
                False,
            ),
            "controller": V(
                _NS(
                    _P("list", _V("b")),
                    _P("list", _V("d")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_update_apply_with_overlap_and_different_version": TestCase(
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
                api_version="v2",
                object="""
						list:
						- a
						- b
						- c
						- d
					""",
            ),
            Apply(
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
				- d
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("b")),
                    _P("list", _V("c")),
                ),
                "v1",
                False,
            ),
            "controller": V(
                _NS(
                    _P("list", _V("b")),
                    _P("list", _V("d")),
                ),
                "v2",
                False,
            ),
        },
    ),
    "apply_twice_reorder": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- b
						- c
						- d
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
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("b")),
                    _P("list", _V("c")),
                    _P("list", _V("d")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_update_apply_reorder": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- b
						- c
						- d
					""",
            ),
            Update(
                manager="controller",
                api_version="v1",
                object="""
						list:
						- a
						- d
						- c
						- b
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- b
						- c
						- d
					""",
            ),
        ],
        object="""
				list:
				- a
				- b
				- c
				- d
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("b")),
                    _P("list", _V("c")),
                    _P("list", _V("d")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_update_apply_reorder_across_versions": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- b
						- c
						- d
					""",
            ),
            Update(
                manager="controller",
                api_version="v1",
                object="""
						list:
						- a
						- d
						- c
						- b
					""",
            ),
            Apply(
                manager="default",
                api_version="v2",
                object="""
						list:
						- a
						- b
						- c
						- d
					""",
            ),
        ],
        object="""
				list:
				- a
				- b
				- c
				- d
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("b")),
                    _P("list", _V("c")),
                    _P("list", _V("d")),
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
						list:
						- a
						- b
						- c
						- d
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- c
					""",
            ),
        ],
        object="""
				list:
				- a
				- c
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("c")),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_twice_remove_across_versions": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						list:
						- a
						- b
						- c
						- d
					""",
            ),
            Apply(
                manager="default",
                api_version="v2",
                object="""
						list:
						- a
						- c
						- e
					""",
            ),
        ],
        object="""
				list:
				- a
				- c
				- e
			""",
        api_version="v1",
        managed={
            "default": V(
                _NS(
                    _P("list", _V("a")),
                    _P("list", _V("c")),
                    _P("list", _V("e")),
                ),
                "v2",
                False,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(UPDATE_SET))
def test_update_set(name: str) -> None:
    UPDATE_SET[name].run(setFieldsParser)
