"""``as=Table`` output: the Table builder and the built-in kinds' printers, one module per group.

A kind's strategy names its ``Printer``; ``base`` holds the kind-independent parts.
"""

from kapi.encoding.tables.base import DEFAULT_PRINTER, Printer, build_object_table, build_table, human_duration

__all__ = ["DEFAULT_PRINTER", "Printer", "build_object_table", "build_table", "human_duration"]
