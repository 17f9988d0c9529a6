"""structured-merge-diff's merge/default_keys_test.go tables, run on kapi's Updater."""

from __future__ import annotations

import pytest

from tests.managedfields.smd_harness import Apply, Conflict, Parser, TestCase, V, _KBF, _NS, _P

# Known differences from kube-apiserver and structured-merge-diff (strict xfail, see tests/conftest.py)
KNOWN_GAPS: dict[str, str] = {}


portListParser = Parser(
    """types:
- name: v1
  map:
    fields:
      - name: containerPorts
        type:
          list:
            elementType:
              map:
                fields:
                - name: port
                  type:
                    scalar: numeric
                - name: protocol
                  default: "TCP"
                  type:
                    scalar: string
                - name: name
                  type:
                    scalar: string
            elementRelationship: associative
            keys:
            - port
            - protocol
""",
    "v1",
)

bookParser = Parser(
    """types:
- name: v1
  map:
    fields:
      - name: book
        type:
          list:
            elementType:
              map:
                fields:
                - name: chapter
                  default: 1
                  type:
                    scalar: numeric
                - name: section
                  default: "A"
                  type:
                    scalar: string
                - name: sentences
                  type:
                    list:
                      elementType:
                        map:
                          fields:
                          - name: page
                            default: 2.0
                            type:
                              scalar: numeric
                          - name: line
                            default: 3
                            type:
                              scalar: numeric
                          - name: text
                            type:
                              scalar: string
                      elementRelationship: associative
                      keys:
                      - page
                      - line
            elementRelationship: associative
            keys:
            - chapter
            - section
""",
    "v1",
)

DEFAULT_KEYS_FLAT = {
    "apply_missing_defaulted_key_A": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						containerPorts:
						- port: 80
					""",
            ),
        ],
        api_version="v1",
        object="""
				containerPorts:
				- port: 80
			""",
        managed={
            "default": V(
                _NS(
                    _P("containerPorts", _KBF("port", 80, "protocol", "TCP")),
                    _P("containerPorts", _KBF("port", 80, "protocol", "TCP"), "port"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_missing_defaulted_key_B": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						containerPorts:
						- port: 80
						- port: 80
						  protocol: UDP
					""",
            ),
        ],
        api_version="v1",
        object="""
				containerPorts:
				- port: 80
				- port: 80
				  protocol: UDP
			""",
        managed={
            "default": V(
                _NS(
                    _P("containerPorts", _KBF("port", 80, "protocol", "TCP")),
                    _P("containerPorts", _KBF("port", 80, "protocol", "TCP"), "port"),
                    _P("containerPorts", _KBF("port", 80, "protocol", "UDP")),
                    _P("containerPorts", _KBF("port", 80, "protocol", "UDP"), "port"),
                    _P("containerPorts", _KBF("port", 80, "protocol", "UDP"), "protocol"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_missing_defaulted_key_with_conflict": TestCase(
        ops=[
            Apply(
                manager="apply-one",
                api_version="v1",
                object="""
						containerPorts:
						- port: 80
						  protocol: TCP
						  name: foo
					""",
            ),
            Apply(
                manager="apply-two",
                api_version="v1",
                object="""
						containerPorts:
						- port: 80
						  name: bar
					""",
                conflicts=[
                    Conflict(
                        manager="apply-one", path=_P("containerPorts", _KBF("port", 80, "protocol", "TCP"), "name")
                    ),
                ],
            ),
        ],
        api_version="v1",
        object="""
				containerPorts:
				- port: 80
				  protocol: TCP
				  name: foo
			""",
        managed={
            "apply-one": V(
                _NS(
                    _P("containerPorts", _KBF("port", 80, "protocol", "TCP")),
                    _P("containerPorts", _KBF("port", 80, "protocol", "TCP"), "port"),
                    _P("containerPorts", _KBF("port", 80, "protocol", "TCP"), "protocol"),
                    _P("containerPorts", _KBF("port", 80, "protocol", "TCP"), "name"),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_missing_undefaulted_defaulted_key": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						containerPorts:
						- protocol: TCP
						  name: A
					""",
            ),
        ],
        api_version="v1",
        object="""
				containerPorts:
				- protocol: TCP
				  name: A
			""",
        managed={
            "default": V(
                _NS(
                    _P("containerPorts", _KBF("protocol", "TCP")),
                    _P("containerPorts", _KBF("protocol", "TCP"), "name"),
                    _P("containerPorts", _KBF("protocol", "TCP"), "protocol"),
                ),
                "v1",
                True,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(DEFAULT_KEYS_FLAT))
def test_default_keys_flat(name: str) -> None:
    DEFAULT_KEYS_FLAT[name].run(portListParser)


DEFAULT_KEYS_NESTED = {
    "apply_missing_every_key_nested": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						book:
						- sentences:
						  - text: blah
					""",
            ),
        ],
        api_version="v1",
        object="""
				book:
				- sentences:
				  - text: blah
			""",
        managed={
            "default": V(
                _NS(
                    _P(
                        "book",
                        _KBF("chapter", 1, "section", "A"),
                    ),
                    _P(
                        "book",
                        _KBF("chapter", 1, "section", "A"),
                        "sentences",
                        _KBF("page", 2, "line", 3),
                    ),
                    _P(
                        "book",
                        _KBF("chapter", 1, "section", "A"),
                        "sentences",
                        _KBF("page", 2, "line", 3),
                        "text",
                    ),
                ),
                "v1",
                False,
            ),
        },
    ),
    "apply_integer_key_with_float_default": TestCase(
        ops=[
            Apply(
                manager="default",
                api_version="v1",
                object="""
						book:
						- sentences:
						  - text: blah
					""",
            ),
            Apply(
                manager="default",
                api_version="v1",
                object="""
						book:
						- sentences:
						  - text: blah
						    page: 2
					""",
            ),
        ],
        api_version="v1",
        object="""
				book:
				- sentences:
				  - text: blah
				    page: 2
			""",
        managed={
            "default": V(
                _NS(
                    _P(
                        "book",
                        _KBF("chapter", 1, "section", "A"),
                    ),
                    _P(
                        "book",
                        _KBF("chapter", 1, "section", "A"),
                        "sentences",
                        _KBF("page", 2, "line", 3),
                    ),
                    _P(
                        "book",
                        _KBF("chapter", 1, "section", "A"),
                        "sentences",
                        _KBF("page", 2, "line", 3),
                        "text",
                    ),
                    _P(
                        "book",
                        _KBF("chapter", 1, "section", "A"),
                        "sentences",
                        _KBF("page", 2, "line", 3),
                        "page",
                    ),
                ),
                "v1",
                False,
            ),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(DEFAULT_KEYS_NESTED))
def test_default_keys_nested(name: str) -> None:
    DEFAULT_KEYS_NESTED[name].run(bookParser)
