"""Label selector matching over compact rows: the pure twin, and the table both twins share.

A ``MatchTable`` interns label keys and values to small integers and keeps one
row per slot: the labels' (key id, value id) pairs, laid end to end in a single
flat int32 array with a per-slot offset and count. A selector is compiled to a
short integer program against those ids, and ``scan`` runs it over every live
row. The compiled twin runs the same program in C over the same arrays; only
``_run`` differs between the twins, so both give the same answers.

Row changes are O(labels): a row that fits its old place is rewritten there,
a longer one is appended and the old place counted as garbage, and the flat
array is compacted once garbage passes half of it. Freed slots are reused.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

__all__ = ["CompiledSelector", "MatchTable"]


class Requirement(Protocol):
    """What the table reads of one requirement (``kapi.object.selectors.Requirement``)."""

    @property
    def key(self) -> str: ...
    @property
    def operator(self) -> str: ...
    @property
    def values(self) -> tuple[str, ...]: ...


class LabelSelector(Protocol):
    """What the table reads of a selector (``kapi.object.selectors.LabelSelector``): _fast sits below object."""

    @property
    def requirements(self) -> Sequence[Requirement]: ...


# Program operators; each requirement is encoded as
#   OP_IN / OP_NOT_IN:          op, key_id, n, value_id * n
#   OP_EXISTS / OP_NOT_EXISTS:  op, key_id
#   OP_GT / OP_LT:              op, key_id, threshold index
OP_IN: Final = 0
OP_NOT_IN: Final = 1
OP_EXISTS: Final = 2
OP_NOT_EXISTS: Final = 3
OP_GT: Final = 4
OP_LT: Final = 5

_OPERATORS: Final = {
    "=": OP_IN, "==": OP_IN, "in": OP_IN, "!=": OP_NOT_IN, "notin": OP_NOT_IN,
    "exists": OP_EXISTS, "!": OP_NOT_EXISTS, "gt": OP_GT, "lt": OP_LT,
}

_INT64_RE: Final = re.compile(r"[+-]?[0-9]+")
_MIN_COMPACT: Final = 4096  # garbage (ints) below which compaction is not worth it
_MIN_REINTERN: Final = 4096  # interned values below which forgetting unused ones is not worth it


def _parse_int64(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64), None on error (as the selector's gt/lt use it)."""
    if not _INT64_RE.fullmatch(s):
        return None
    n = int(s)
    return n if -(2**63) <= n < 2**63 else None


@dataclass(frozen=True, slots=True)
class CompiledSelector:
    """A label selector as an integer program against one table's interned ids."""

    selector: LabelSelector
    stamp: tuple[int, int, int]  # (generation, keys, values) of the table when compiled
    never: bool  # some requirement can match no row: the scan is empty
    prog: array  # 'i'
    thresholds: array  # 'q': the numbers of gt/lt requirements


class MatchTable:
    """Interned label rows addressed by slot number, scanned with compiled selectors."""

    def __init__(self) -> None:
        self._keys: dict[str, int] = {}
        self._key_names: list[str] = []
        self._values: dict[str, int] = {}
        self._value_names: list[str] = []
        self._vnum = array("q")  # per value id: its int64 reading, when it has one
        self._visnum = array("b")  # per value id: 1 when the value reads as an int64
        self._generation = 0  # bumped when ids are reassigned
        self._pairs = array("i")  # key id, value id, key id, value id, ...
        self._off = array("i")  # per slot: index of its first int in _pairs
        self._cnt = array("i")  # per slot: number of pairs, -1 for a free slot
        self._cap = array("i")  # per slot: pairs its place in _pairs can hold
        self._free: list[int] = []
        self._garbage = 0  # ints of _pairs no row uses
        self._live = 0
        self._live_pairs = 0

    def __len__(self) -> int:
        return self._live

    # ------------------------------------------------------------- rows

    def add(self, labels: Mapping[str, str]) -> int:
        """Store a row for ``labels``; returns its slot."""
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self._cnt)
            self._off.append(0)
            self._cnt.append(-1)
            self._cap.append(0)
        self._live += 1
        self._write(slot, labels)
        return slot

    def update(self, slot: int, labels: Mapping[str, str]) -> None:
        """Replace the row in ``slot``."""
        if self._cnt[slot] < 0:
            raise KeyError(slot)
        self._live_pairs -= self._cnt[slot]
        self._write(slot, labels)

    def remove(self, slot: int) -> None:
        """Free ``slot``; it may be handed out again by ``add``."""
        if self._cnt[slot] < 0:
            raise KeyError(slot)
        self._live -= 1
        self._live_pairs -= self._cnt[slot]
        self._garbage += 2 * self._cap[slot]
        self._cnt[slot] = -1
        self._cap[slot] = 0
        self._free.append(slot)
        self._maybe_compact()

    def labels(self, slot: int) -> dict[str, str]:
        """The labels stored in ``slot``."""
        n = self._cnt[slot]
        if n < 0:
            raise KeyError(slot)
        o = self._off[slot]
        pairs = self._pairs
        return {self._key_names[pairs[o + 2 * j]]: self._value_names[pairs[o + 2 * j + 1]] for j in range(n)}

    def _intern_key(self, key: str) -> int:
        kid = self._keys.get(key)
        if kid is None:
            kid = self._keys[key] = len(self._key_names)
            self._key_names.append(key)
        return kid

    def _intern_value(self, value: str) -> int:
        vid = self._values.get(value)
        if vid is None:
            vid = self._values[value] = len(self._value_names)
            self._value_names.append(value)
            n = _parse_int64(value)
            self._vnum.append(n if n is not None else 0)
            self._visnum.append(0 if n is None else 1)
        return vid

    def _write(self, slot: int, labels: Mapping[str, str]) -> None:
        row = array("i")
        for k, v in labels.items():
            row.append(self._intern_key(k))
            row.append(self._intern_value(v))
        n = len(labels)
        if n <= self._cap[slot]:
            o = self._off[slot]
            self._pairs[o:o + 2 * n] = row
        else:
            self._garbage += 2 * self._cap[slot]
            self._off[slot] = len(self._pairs)
            self._cap[slot] = n
            self._pairs.extend(row)
        self._cnt[slot] = n
        self._live_pairs += n
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        # Values churn (pod-template-hash, versions): forget the unused ones now and then.
        if len(self._value_names) > _MIN_REINTERN + 2 * self._live_pairs:
            self._rebuild(reintern=True)
        elif self._garbage > _MIN_COMPACT and 2 * self._garbage > len(self._pairs):
            self._rebuild(reintern=False)

    def _rebuild(self, *, reintern: bool) -> None:
        """Lay the live rows end to end again; with ``reintern``, renumber keys and values too."""
        old_pairs, key_names, value_names = self._pairs, self._key_names, self._value_names
        if reintern:
            self._keys, self._key_names, self._values, self._value_names = {}, [], {}, []
            self._vnum, self._visnum = array("q"), array("b")
            self._generation += 1
        pairs = array("i")
        for slot in range(len(self._cnt)):
            n = self._cnt[slot]
            if n < 0:
                continue
            o = self._off[slot]
            self._off[slot] = len(pairs)
            self._cap[slot] = n
            if reintern:
                for j in range(n):
                    pairs.append(self._intern_key(key_names[old_pairs[o + 2 * j]]))
                    pairs.append(self._intern_value(value_names[old_pairs[o + 2 * j + 1]]))
            else:
                pairs.extend(old_pairs[o:o + 2 * n])
        self._pairs = pairs
        self._garbage = 0

    # ------------------------------------------------------------- selectors

    def compile(self, selector: LabelSelector) -> CompiledSelector:
        """Translate ``selector`` to ids; a key or value never seen decides its requirement now."""
        prog = array("i")
        thresholds = array("q")
        never = False
        for r in selector.requirements:
            op = _OPERATORS.get(r.operator)
            kid = self._keys.get(r.key, -1)
            if op is None:
                never = True  # Requirement.matches answers False for an unknown operator
            elif op in (OP_IN, OP_NOT_IN):
                vids = sorted({self._values[v] for v in r.values if v in self._values})
                if kid >= 0 and vids:
                    prog.extend((op, kid, len(vids), *vids))
                elif op == OP_IN:
                    never = True  # no row has the key, or no row has any of the values
                # notin on an unknown key or with only unknown values holds for every row
            elif op == OP_EXISTS:
                if kid < 0:
                    never = True
                else:
                    prog.extend((op, kid))
            elif op == OP_NOT_EXISTS:
                if kid >= 0:
                    prog.extend((op, kid))
            else:
                want = _parse_int64(r.values[0]) if len(r.values) == 1 else None
                if kid < 0 or want is None:
                    never = True
                else:
                    prog.extend((op, kid, len(thresholds)))
                    thresholds.append(want)
        stamp = (self._generation, len(self._key_names), len(self._value_names))
        return CompiledSelector(selector, stamp, never, prog, thresholds)

    def scan(self, compiled: CompiledSelector) -> list[int]:
        """The slots whose rows the selector matches, in slot order."""
        if compiled.stamp != (self._generation, len(self._key_names), len(self._value_names)):
            compiled = self.compile(compiled.selector)  # ids changed since: compile again
        if compiled.never:
            return []
        return self._run(compiled)

    def select(self, selector: LabelSelector) -> list[int]:
        """``scan(compile(selector))``."""
        return self.scan(self.compile(selector))

    def _run(self, c: CompiledSelector) -> list[int]:
        """The reference loop the compiled twin replaces."""
        pairs, off, cnt = self._pairs, self._off, self._cnt
        vnum, visnum = self._vnum, self._visnum
        prog, thresholds = c.prog, c.thresholds
        plen = len(prog)
        out: list[int] = []
        for slot in range(len(cnt)):
            n = cnt[slot]
            if n < 0:
                continue
            o = off[slot]
            ok = True
            p = 0
            while p < plen:
                op, kid = prog[p], prog[p + 1]
                vid = -1
                for j in range(o, o + 2 * n, 2):
                    if pairs[j] == kid:
                        vid = pairs[j + 1]
                        break
                if op == OP_IN or op == OP_NOT_IN:
                    nv = prog[p + 2]
                    found = vid >= 0 and vid in prog[p + 3:p + 3 + nv]
                    ok = found if op == OP_IN else not found
                    p += 3 + nv
                elif op == OP_EXISTS:
                    ok = vid >= 0
                    p += 2
                elif op == OP_NOT_EXISTS:
                    ok = vid < 0
                    p += 2
                else:
                    if vid < 0 or not visnum[vid]:
                        ok = False
                    elif op == OP_GT:
                        ok = vnum[vid] > thresholds[prog[p + 2]]
                    else:
                        ok = vnum[vid] < thresholds[prog[p + 2]]
                    p += 3
                if not ok:
                    break
            if ok:
                out.append(slot)
        return out
