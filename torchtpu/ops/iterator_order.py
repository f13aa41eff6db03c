"""TensorIterator's dimension order (TensorIteratorBase::reorder_dimensions), which CPU results depend on where a
kernel's choice or summation order follows it: the permutation of dims, fastest first, that ATen derives from its
operands' strides (an insertion sort with ambiguous comparisons, as ATen's)."""

from __future__ import annotations

from collections.abc import Sequence


def reorder_dimensions(sizes: Sequence[int], operands: Sequence[Sequence[int]], reduction: bool = False
                       ) -> list[int]:
    """The dims, innermost first, ordered by each operand's strides in turn (a 0 stride ambiguous, equal strides
    broken by the larger size going outward); `reduction`: operands[0] is the output, whose reduced dims (stride
    0) go first."""

    def should_swap(d0: int, d1: int) -> int:
        for k, st in enumerate(operands):
            s0, s1 = st[d0], st[d1]
            if reduction and k == 0 and (s0 == 0) != (s1 == 0):
                return 1 if s1 == 0 else -1
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if sizes[d0] > sizes[d1]:
                return 1
        return 0

    perm = list(range(len(sizes)))[::-1]
    for i in range(1, len(perm)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm
