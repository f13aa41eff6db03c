"""The fused loop of a group holding an element-wise `while` (fusion.py), written over `LANES` elements at a time.

Per element, a `while` is a chain of dependent operations (a division feeding the next trip's division) whose
latency, not the machine's throughput, sets its speed, and a loop exit the branch predictor misses at each
element. So a group with a while runs its elements in blocks of `LANES`: each straight-line part of the group
is a loop over the block's lanes, and the while runs trip by trip over the whole block, each trip a loop over
the lanes that applies the body to the lanes whose condition holds and keeps the others' state (a select), until
no lane's condition holds or `limit` trips are done. Every lane does exactly what the element's own loop does
(the same operations on its own state, in the same order; a lane whose condition failed keeps its state, and
its condition, a pure function of that state, stays false), so the values are the per-element loop's, bit for
bit; the lanes' independent chains overlap, and LLVM vectorizes the lane loops. Values a later part reads live
in small per-dtype lane arrays (`L_<dtype>[slot, lane]`, in the cache); results are stored where they are
computed. The last block's missing lanes repeat the last element: they loop as long as it does, and what they
store is its value again, the same bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

LANES = 32  # elements per block (1: each element's own loop, as a group without a while)
_NUMPY = {"float32": "np.float32", "float64": "np.float64", "bool": "np.bool_"}


def lane_lines(stmts: Sequence[Any], inputs: Sequence[tuple[str, str]], results: Sequence[tuple[str, str]],
               dtypes: dict[str, str]) -> list[str]:
    """The function body (after the constants) computing fusion.py's statements `stmts` over blocks of lanes;
    `inputs`: (name, array parameter) of the operands, `results`: (name, result array parameter), `dtypes`: the
    dtype of every name the statements define."""
    from torchtpu.drivers.sim.fusion import lines

    segments: list[Any] = []  # runs of "let" statements (lists) and whiles
    for st in stmts:
        if isinstance(st, tuple):
            if segments and isinstance(segments[-1], list):
                segments[-1].append(st)
            else:
                segments.append([st])
        else:
            segments.append(st)
    defined: dict[str, int] = {}
    used: dict[str, set[int]] = {}
    for k, seg in enumerate(segments):
        for name in (n for st in seg for n in st[3]) if isinstance(seg, list) else seg.args:
            used.setdefault(name, set()).add(k)
        for name in [st[1] for st in seg] if isinstance(seg, list) else seg.state:
            defined[name] = k
    # a result a straight-line part defines is stored from there (a missing lane stores the last element's value
    # again, the same bits); a while's are stored after the blocks' parts
    direct = {name: param for name, param in results if isinstance(segments[defined[name]], list)}
    last = [(name, param) for name, param in results if name not in direct]
    slots: dict[str, str] = {}  # name -> its lane array element
    counts: dict[str, int] = {}
    for name, k in defined.items():
        if not isinstance(segments[k], list) or used.get(name, {k}) - {k}:
            dtype = dtypes[name]
            slots[name] = f"L_{dtype}[{counts.get(dtype, 0)}, j]"
            counts[dtype] = counts.get(dtype, 0) + 1
    arrays = dict(inputs)

    def loads(names: Sequence[str], indent: str) -> list[str]:
        """Reads of the names a part needs from outside it: operands from their arrays, earlier values from
        their lane arrays (constants are the function's locals)."""
        need = [n for n in dict.fromkeys(names) if n in arrays or n in slots]
        out = [f"{indent}i = base + j if base + j < n else n - 1"] if any(n in arrays for n in need) else []
        return out + [f"{indent}{n} = {arrays[n]}[i]" if n in arrays else f"{indent}{n} = {slots[n]}" for n in need]

    def stores(names: Sequence[str], indent: str) -> list[str]:
        return [f"{indent}{slots[n]} = {n}" for n in names if n in slots]

    out = [f"    L_{d} = np.empty(({c}, {LANES}), {_NUMPY[d]})" for d, c in counts.items()]
    out += [f"    G = np.empty({LANES}, np.bool_)", f"    for base in range(0, n, {LANES}):"]
    block, lane = "        ", "            "
    for seg in segments:
        if isinstance(seg, list):
            mine = {st[1] for st in seg}
            out.append(f"{block}for j in range({LANES}):")
            out += loads([n for st in seg for n in st[3] if n not in mine], lane)
            out += lines(seg, lane)
            out += stores([st[1] for st in seg], lane)
            mine_out = [(st[1], direct[st[1]]) for st in seg if st[1] in direct]
            if mine_out and not any(n in arrays for st in seg for n in st[3]):
                out.append(f"{lane}i = base + j if base + j < n else n - 1")
            out += [f"{lane}{param}[i] = {name}" for name, param in mine_out]
            continue
        if any(not isinstance(st, tuple) for st in (*seg.cond, *seg.body)):  # pragma: no cover - fusion.py
            raise AssertionError("fusion: a while inside a while's region")
        # the lanes' initial state and condition, then trips until no lane's condition holds
        out += [f"{block}anyv = False", f"{block}for j in range({LANES}):"]
        out += loads(seg.args, lane)
        out += [f"{lane}{s} = {a}" for s, a in zip(seg.state, seg.args)]
        out += lines(seg.cond, lane)
        out += [f"{lane}G[j] = {seg.go}", f"{lane}anyv = anyv | {seg.go}", *stores(seg.state, lane)]
        trip, trip_lane = block + "    ", lane + "    "
        out += [f"{block}for _ in range({seg.limit}):", f"{trip}if not anyv:", f"{trip}    break",
                f"{trip}anyv = False", f"{trip}for j in range({LANES}):", f"{trip_lane}g = G[j]"]
        out += loads(seg.state, trip_lane)
        out += lines(seg.body, trip_lane)
        # all at once (a body may pass one state value on as another); a lane whose condition failed keeps its
        # state
        new = ", ".join(f"({nv} if g else {s})" for s, nv in zip(seg.state, seg.new))
        out.append(f"{trip_lane}{', '.join(seg.state)}, = {new},")
        out += lines(seg.cond, trip_lane)
        out += [f"{trip_lane}G[j] = {seg.go}", f"{trip_lane}anyv = anyv | {seg.go}", *stores(seg.state, trip_lane)]
    if last:
        out += [f"{block}m = n - base if n - base < {LANES} else {LANES}", f"{block}for j in range(m):"]
        out += [f"{lane}{param}[base + j] = {slots[name]}" for name, param in last]
    return out
