"""Which DEFAULT-dot operands of one compiled medium step are rounded more than once (same values), and whether the
repeats share memory (a memo could serve them) or not. usage: dot_repeats.py llama|gpt2 train|fwd"""

from __future__ import annotations

import collections
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import compile as cb  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torchtpu.sim import mxu, mxu_round  # noqa: E402

import torchtpu  # noqa: E402

torch.set_num_threads(1)
on = [False]
log: list = []
orig = mxu.round_operand


def round_operand(x, slot=None, keep_transposed=False):
    r = orig(x, slot, keep_transposed)
    if on[0]:
        served = last[0] if getattr(mxu_round._request, "current", None) is not None else ""
        last[0] = None
        # the rounded values in the order of the memory the operand views (a transposed view of a weight and the
        # weight itself hash alike)
        t = x.ndim >= 2 and not x.flags.c_contiguous and x.swapaxes(-1, -2).flags.c_contiguous
        c = np.ascontiguousarray(r.swapaxes(-1, -2) if t else r)
        log.append((hashlib.blake2b(c.tobytes(), digest_size=8).hexdigest(), x.__array_interface__["data"][0],
                    x.shape, x.strides, x.nbytes, served))
    return r


mxu.round_operand = round_operand
orig_memo = mxu_round._memo_round
last = [None]


def memo_round(x, slot, keep_transposed):
    r = orig_memo(x, slot, keep_transposed)
    _, _, roles, _ = mxu_round._request.current
    role = roles[0 if slot == "lhs" else 1]
    last[0] = (id(mxu_round._request.current[0]) % 1000, role and role[1], r is not None)
    return r


mxu_round._memo_round = memo_round
arch, kind = sys.argv[1], sys.argv[2]
f = cb.medium_step(arch, kind)
with torchtpu.eager_mode("DEFER_NEVER"):
    f()
    f()
    on[0] = True
    f()
groups = collections.defaultdict(list)
for i, e in enumerate(log):
    groups[e[0]].append((i, *e[1:]))
total = sum(e[4] for e in log)
rep = same = 0
for g in groups.values():
    for _, ptr, _, _, nbytes, served in g[1:]:
        rep += 0 if served and served[1] in ("use", "last") and served[2] else nbytes
        if served and served[1] in ("use", "last") and served[2]:
            continue
        if ptr == g[0][1]:
            same += nbytes
print(f"{arch} {kind}: {len(log)} roundings ({total / 2**20:.1f} MiB) of {len(groups)} distinct values; repeats "
      f"{rep / 2**20:.1f} MiB, of which at the first one's address {same / 2**20:.1f} MiB")
for h, g in sorted(groups.items(), key=lambda kv: -len(kv[1]) * kv[1][0][4]):
    if len(g) > 1:
        print("  ", h[:6], [(i, hex(p)[-6:], s, st, sv) for i, p, s, st, _, sv in g])
