# cython: language_level=3
"""Compiled twin of match_py: the same table, its selector program run in C over the flat rows."""

from array import array

from kapi._fast.match_py import CompiledSelector
from kapi._fast.match_py import MatchTable as _PureTable

__all__ = ["CompiledSelector", "MatchTable"]

# The program operators, as match_py numbers them.
cdef enum:
    OP_IN = 0
    OP_NOT_IN = 1
    OP_EXISTS = 2
    OP_NOT_EXISTS = 3
    OP_GT = 4
    OP_LT = 5


cdef Py_ssize_t _run_rows(const int[::1] pairs, const int[::1] off, const int[::1] cnt,
                          const long long[::1] vnum, const signed char[::1] visnum,
                          const int[::1] prog, const long long[::1] thresholds,
                          int[::1] out) noexcept nogil:
    """Write the matching slots to ``out``; returns how many there are."""
    cdef Py_ssize_t nslots = cnt.shape[0], plen = prog.shape[0], found = 0
    cdef Py_ssize_t slot, p, j, k, o, end, nv
    cdef int n, op, kid, vid
    cdef bint ok, hit
    for slot in range(nslots):
        n = cnt[slot]
        if n < 0:
            continue
        o = off[slot]
        end = o + 2 * n
        ok = True
        p = 0
        while p < plen:
            op = prog[p]
            kid = prog[p + 1]
            vid = -1
            j = o
            while j < end:
                if pairs[j] == kid:
                    vid = pairs[j + 1]
                    break
                j += 2
            if op == OP_IN or op == OP_NOT_IN:
                nv = prog[p + 2]
                hit = False
                if vid >= 0:
                    for k in range(nv):
                        if prog[p + 3 + k] == vid:
                            hit = True
                            break
                ok = hit if op == OP_IN else not hit
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
            out[found] = <int>slot
            found += 1
    return found


class MatchTable(_PureTable):
    """The pure table with its scan loop compiled."""

    def _run(self, c):
        """The matching slots, in slot order, found without the GIL."""
        cdef Py_ssize_t nslots = len(self._cnt)
        if nslots == 0:
            return []
        # Empty arrays export no usable buffer: give the loop a one-element stand-in.
        pairs = self._pairs if len(self._pairs) else array("i", [0])
        vnum = self._vnum if len(self._vnum) else array("q", [0])
        visnum = self._visnum if len(self._visnum) else array("b", [0])
        thresholds = c.thresholds if len(c.thresholds) else array("q", [0])
        prog = c.prog if len(c.prog) else array("i", [-1, -1])
        cdef Py_ssize_t plen = len(c.prog)
        result = array("i", [0]) * nslots
        cdef int[::1] out = result
        cdef const int[::1] prog_view = prog
        cdef Py_ssize_t found = _run_rows(pairs, self._off, self._cnt, vnum, visnum,
                                          prog_view[:plen], thresholds, out)
        return result[:found].tolist()
