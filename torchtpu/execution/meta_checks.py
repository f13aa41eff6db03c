"""ATen's own argument checks, asked of the op's meta function once per traced signature.

CPU's and CUDA's kernels share their argument checks with the op's meta function (a structured kernel's `meta`
step, or the Python meta registration `torch._meta_registrations` puts in its place, which torch.compile's fake
tensors run on every device): shape, rank, dtype and static-argument rules that read no tensor values. A lowering
that skips one of them computes a result where CPU raises (a silent wrong result); one that fails on its own
raises an internal error (a reshape's ValueError) where CPU names the argument. So when eager.run traces a new
signature (a cache miss: the checks depend on nothing the cache key does not hold), `checked` wraps the trace:
- the trace succeeded: the op runs on meta tensors of the inputs' sizes, strides and dtypes, and what it raises is
  raised instead of launching (nothing is cached or written);
- the trace failed with a RuntimeError/IndexError (a lowering's deliberate check, in CPU's words): that error;
- the trace failed otherwise (the lowering's own slip): the meta function's refusal if it has one, else that error.
Cached launches are not checked again (their key holds every shape, dtype and static argument a check reads).

What is not one of ATen's checks is dropped: a meta function that cannot run (no meta kernel, a value read that
meta tensors refuse: "... meta tensors", NotImplementedError), a call the schema does not parse (a prepare step
passed a traced value where the schema has a tensor: the user's own call was parsed before), or one that fails on
its own (an exception class ATen's checks never raise: a Python meta kernel's ValueError/TypeError/KeyError). A
Python meta kernel's IndexError is kept even where it is a slip ("tuple index out of range": it indexed a size the
malformed input lacks): failing closed, since computing a result there is the silent wrong result (the fuzzer's
seed 2 finds no valid call a meta kernel refuses so).
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from torchtpu.execution.out_layout import MetaFn, to_meta

_PY_INDEX_SLIP = re.compile(r"(tuple|list|string|range object) index out of range")
_NOT_A_CHECK = re.compile(r"Expected a value of type|meta tensor|'Meta' backend|Meta backend|meta device|"
                          r"data-dependent|data dependent", re.I)


# Overloads whose meta function refuses calls CPU computes (checked against CPU): where's Python meta refuses a
# uint8 condition, which CPU and CUDA still take (deprecated, with a warning).
STRICTER_THAN_CPU = frozenset({"aten::where.self", "aten::where.self_out", "aten::where.ScalarOther",
                               "aten::where.ScalarSelf", "aten::where.Scalar"})


def for_op(op: Any, meta: MetaFn) -> MetaFn | None:
    """`meta` as the checks of `op`'s calls, or None where its meta function is stricter than CPU."""
    name = op._schema.name + ("." + op._overloadname if op._overloadname != "default" else "")
    return None if name in STRICTER_THAN_CPU else meta


def refusal(meta: MetaFn, args: Sequence[Any], kwargs: dict[str, Any]) -> BaseException | None:
    """The error ATen's checks raise for this call on meta tensors, or None (the call passes them, or the meta
    function cannot tell)."""
    try:
        with warnings.catch_warnings():  # the call's own warnings come from the kernel run, once
            warnings.simplefilter("ignore")
            meta(tuple(to_meta(a) for a in args), {k: to_meta(v) for k, v in kwargs.items()})
    except NotImplementedError:
        return None
    except (RuntimeError, IndexError) as exc:
        if _NOT_A_CHECK.search(str(exc)):
            return None
        return exc
    except Exception:  # noqa: BLE001 - a meta function's own failure, not one of ATen's checks
        return None
    return None


def check(meta: MetaFn, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Raises ATen's refusal of this call (see `refusal`), if it has one."""
    exc = refusal(meta, args, kwargs)
    if exc is not None:
        raise exc.with_traceback(None) from None


@contextlib.contextmanager
def checked(meta: MetaFn | None, args: Sequence[Any], kwargs: dict[str, Any]) -> Iterator[None]:
    """Wraps the trace of a new signature (see the module's docstring); `meta` None: the lowering's checks only."""
    if meta is None:
        yield
        return
    try:
        yield
    except Exception as exc:
        if not _deliberate(exc):
            check(meta, args, kwargs)
        raise
    check(meta, args, kwargs)


def _deliberate(exc: Exception) -> bool:
    """A lowering's own check (ATen's classes, not a Python container's index slip)."""
    if isinstance(exc, IndexError):
        return not _PY_INDEX_SLIP.match(str(exc))
    return isinstance(exc, RuntimeError)
