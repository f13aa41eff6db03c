"""The simulator's rank limit: its tensors are numpy arrays, which hold at most NPY_MAXDIMS (64, numpy 2)
dimensions. A tensor past it is refused in words that name the limit, before numpy's own ValueError ("number of
dimensions must be within [0, 64]") would leak out of a memory view or a program's step. The words begin as
ATen's for a reduction over such a tensor (a RuntimeError; NotImplementedError is one)."""

from __future__ import annotations

from torchtpu.drivers.ir import Program

MAX_DIMS = 64


def check_rank(ndim: int, what: str = "") -> None:
    """Refuses a tensor of more than MAX_DIMS dimensions (NotImplementedError, naming the limit and `what` was
    asked, an op's name, where given)."""
    if ndim > MAX_DIMS:
        where = f" ({what})" if what else ""
        raise NotImplementedError(f"only tensors with up to {MAX_DIMS} dims are supported on the tpu simulator "
                                  f"(numpy's limit: its tensors are numpy arrays); got a tensor of {ndim} dims"
                                  f"{where}")


def check_program(program: Program) -> None:
    """check_rank of every input and op result of a program, before it is compiled into numpy steps."""
    values = [*program.inputs, *(v for op in program.ops for v in op.outputs)]
    check_rank(max((len(v.shape) for v in values), default=0))
