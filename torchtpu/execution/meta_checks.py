"""ATen's own argument checks, run once per traced signature through the op's meta function.

CPU's and CUDA's kernels share their argument checks with the op's meta function (a structured kernel's `meta`
step, or the Python meta registration `torch._meta_registrations` puts in its place): shape, rank, dtype and
static-argument rules that do not read tensor values. A lowering that skips one of them computes a result where CPU
raises (a silent wrong result). So when eager.run traces a new signature (a cache miss: the checks depend on
nothing the cache key does not hold) it first calls the op on meta tensors of the inputs' sizes, strides and dtypes
and re-raises what ATen raises there, in ATen's class and words, before the lowering runs. Cached launches are not
checked again (their key holds every shape, dtype and static argument the check read).

What is not ATen's check is dropped: a meta function that cannot run (no meta kernel, a value read that meta
tensors refuse: "... meta tensors", NotImplementedError), a call the schema does not parse (a prepare step
passed a traced value where the schema has a tensor: the user's call was parsed before it) or that fails on its own (an exception class ATen's
checks never raise: a Python meta kernel's ValueError/TypeError/AttributeError); then the lowering's own checks
decide as before.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Any

from torchtpu.execution.out_layout import MetaFn, to_meta

_NOT_A_CHECK = re.compile(r"Expected a value of type|meta tensor|'Meta' backend|Meta backend|meta device|data-dependent|data dependent", re.I)


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
    """Raises ATen's refusal of this call (see `refusal`), with the traceback cut at this call."""
    exc = refusal(meta, args, kwargs)
    if exc is not None:
        raise exc.with_traceback(None)
