"""`jax_op`: a JAX function (Pallas kernels included) as a PyTorch operator on "tpu" tensors.

The operator is a `torch.library` op `ns::name(Tensor a, Tensor b, ..., str statics) -> Tensor[]`: the tensor
arguments of the function in order, its static arguments (`static_argnums`: ints, floats, bools, strings, None
and tuples of them) encoded as one JSON string, its outputs a list. It has
* a fake (FakeTensor / meta) kernel from `jax.eval_shape` (or the user's `out_shape`), so torch.compile traces it
  as one node, and the compile backend runs it between the compiled pieces of the graph (compile/collective_split);
* kernels for "tpu" (run.py: the sim runs it on host memory and charges the simulated chip; pjrt runs it in the
  driver's PJRT client) and for CPU tensors (JAX's CPU device);
* autograd through `jax.vjp` (a second op, `ns::name_vjp`), or the user's `op.register_autograd(...)`.
Each distinct (input shapes and dtypes, statics) is traced and jitted once (`Entry`).
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu.compile import collective_split
from torchtpu.kernels import deps, run

_defined: dict[str, JaxOp] = {}
_lock = threading.Lock()


@torch.compiler.assume_constant_result  # Dynamo calls it on the (constant) statics instead of tracing json
def _encode(statics: Sequence[Any]) -> str:
    def plain(v: Any) -> Any:
        if isinstance(v, tuple | list):
            return [plain(x) for x in v]
        if v is None or isinstance(v, bool | int | float | str):
            return v
        raise TypeError(f"a static argument must be an int, float, bool, str, None or a tuple of them; got {v!r}")

    return json.dumps([plain(v) for v in statics])


def _decode(text: str) -> tuple:
    def tup(v: Any) -> Any:
        return tuple(tup(x) for x in v) if isinstance(v, list) else v

    return tuple(tup(v) for v in json.loads(text))


class Entry:
    """One traced signature of a kernel: the jitted function, its output avals and its cost per chip."""

    def __init__(self, name: str, fn: Callable[..., Any], in_avals: list[Any], out_avals: list[Any],
                 single: bool, donate: tuple[int, ...]) -> None:
        jax = deps.jax()
        self.name, self.fn, self.in_avals, self.avals, self.single = name, fn, in_avals, out_avals, single
        self.donate = donate
        self.jitted = jax.jit(fn)
        self._costs: dict[str, Any] = {}
        self._storage_fns: dict[tuple, Any] = {}

    def cost(self, drv: Any, device: int) -> Any:
        """The kernel's CostRecord on device `device`'s chip (traced and priced once per chip)."""
        chip = drv.chips[device]
        record = self._costs.get(chip.spec.name)
        if record is None:
            from torchtpu.kernels.cost import kernel_cost

            closed = deps.jax().make_jaxpr(self.fn)(*self.in_avals)
            record = self._costs[chip.spec.name] = kernel_cost(closed, chip.cost_model, self.name)
        return record

    def on_storages(self, offsets: tuple[int, ...], numels: tuple[int, ...], donate: bool = False) -> Any:
        """The function jitted over flat storage buffers: each input sliced at its offset and reshaped, each
        output flattened (the PJRT driver's buffers); `donate`: the donated inputs' buffers are given to XLA."""
        key = (offsets, numels, donate)
        fn = self._storage_fns.get(key)
        if fn is None:
            jax = deps.jax()
            from jax import lax

            avals, outs, body = self.in_avals, self.avals, self.fn

            def flat(*storages: Any) -> list[Any]:
                views = [lax.slice(s, (o,), (o + int(a.size),)).reshape(a.shape) if (o, int(a.size)) != (0, n)
                         else s.reshape(a.shape) for s, o, n, a in zip(storages, offsets, numels, avals)]
                results = body(*views)
                results = list(results) if isinstance(results, list | tuple) else [results]
                run.check_results(self.name, results, outs)
                return [r.reshape(-1) for r in results]

            fn = self._storage_fns[key] = jax.jit(flat, donate_argnums=self.donate if donate else ())
        return fn


class JaxOp:
    """A JAX function as a torch operator (module docstring). Call it like the function, with tensors."""

    def __init__(self, name: str, fn: Callable[..., Any], static_argnums: Sequence[int] = (),
                 donate_argnums: Sequence[int] = (), out_shape: Callable[..., Any] | None = None,
                 differentiable: bool = True) -> None:
        if not isinstance(name, str) or name.count("::") != 1 or not all(p.isidentifier() for p in name.split("::")):
            raise ValueError(f"jax_op name {name!r}: valid names look like 'mylib::rmsnorm' (namespace::op)")
        self.name, self.fn, self.out_shape = name, fn, out_shape
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(fn).parameters.values()) or not params:
            raise ValueError(f"jax_op {name}: the function must take named positional arguments (no *args)")
        self.params = params
        self.static = tuple(sorted(int(i) % len(params) for i in static_argnums))
        self.tensor_pos = [i for i in range(len(params)) if i not in self.static]
        if not self.tensor_pos:
            raise ValueError(f"jax_op {name}: every argument is static; valid: at least one tensor argument")
        self.donate = tuple(self.tensor_pos.index(int(i) % len(params)) for i in donate_argnums
                            if int(i) % len(params) in self.tensor_pos)
        self._entries: dict[tuple, Entry] = {}
        self.returns_tuple = False
        with _lock:
            if name in _defined:
                raise ValueError(f"jax_op {name} is defined already (by {_defined[name].fn!r}); valid: a new name")
            ns, opname = name.split("::")
            names = [p.name if p.name != "statics" else "statics_" for p in params]
            args = ", ".join(f"Tensor {names[i]}" for i in self.tensor_pos)
            self._lib = torch.library.Library(ns, "FRAGMENT")
            self._lib.define(f"{opname}({args}, str statics) -> Tensor[]")
            self._lib.define(f"{opname}_vjp(Tensor[] primals, Tensor[] cotangents, str statics) -> Tensor[]")
            for suffix, impl in (("", self._impl), ("_vjp", self._impl_vjp)):
                self._lib.impl(opname + suffix, impl, "PrivateUse1")
                self._lib.impl(opname + suffix, impl, "CPU")
            torch.library.register_fake(name, self._fake, lib=self._lib)
            torch.library.register_fake(f"{name}_vjp", self._fake_vjp, lib=self._lib)
            self.op = getattr(getattr(torch.ops, ns), opname).default
            self.vjp_op = getattr(getattr(torch.ops, ns), opname + "_vjp").default
            if differentiable:
                torch.library.register_autograd(name, self._backward, setup_context=self._setup, lib=self._lib)
            collective_split.OPAQUE.update((self.op, self.vjp_op))  # one node each in a compiled graph
            _defined[name] = self
        self.__name__ = getattr(fn, "__name__", opname)
        self.__doc__ = getattr(fn, "__doc__", None)

    # ---------------------------------------------------------------- calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bound = inspect.signature(self.fn).bind(*args, **kwargs)
        values = [bound.arguments.get(p.name, p.default) for p in self.params]
        statics = _encode([values[i] for i in self.static])
        tensors = [values[i] for i in self.tensor_pos]
        for i, t in zip(self.tensor_pos, tensors):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"kernel {self.name}: argument {self.params[i].name!r} is a {type(t).__name__}; "
                                f"valid: a tensor, or list its position in static_argnums")
        outs = self.op(*tensors, statics)
        return tuple(outs) if self.returns_tuple else outs[0]

    def register_autograd(self, backward: Callable[..., Any], *, setup_context: Callable[..., Any] | None = None
                          ) -> None:
        """The user's backward instead of jax.vjp (torch.library.register_autograd's contract; the op's last
        argument is the statics string, whose gradient is None)."""
        torch.library.register_autograd(self.name, backward, setup_context=setup_context, lib=self._lib)

    # ---------------------------------------------------------------- tracing
    def _with_statics(self, statics: tuple) -> Callable[..., Any]:
        fn, static, tensor_pos, n = self.fn, self.static, self.tensor_pos, len(self.params)

        def call(*arrays: Any) -> Any:
            args: list[Any] = [None] * n
            for i, v in zip(static, statics):
                args[i] = v
            for i, a in zip(tensor_pos, arrays):
                args[i] = a
            return fn(*args)

        return call

    def entry(self, metas: tuple, statics_text: str, kind: str = "fwd") -> Entry:
        """The traced signature for tensors of `metas` ((shape, dtype) each) and the encoded statics."""
        key = (kind, metas, statics_text)
        found = self._entries.get(key)
        if found is not None:
            return found
        jax = deps.jax()
        statics = _decode(statics_text)
        in_avals = [jax.ShapeDtypeStruct(shape, deps.jax_dtype(dtype, self.name)) for shape, dtype in metas]
        if kind == "fwd":
            fn = self._with_statics(statics)
            try:
                declared = (self.out_shape(*self._merge(in_avals, statics)) if self.out_shape is not None
                            else jax.eval_shape(fn, *in_avals))
            except Exception as exc:  # noqa: BLE001 - a tracing error of the user's function, named
                raise run.KernelError(f"kernel {self.name} could not be traced for inputs "
                                      f"{[f'{a.dtype}{list(a.shape)}' for a in in_avals]}: {exc}") from exc
            single = not isinstance(declared, tuple | list)
            avals = [declared] if single else list(declared)
            if not all(hasattr(a, "shape") and hasattr(a, "dtype") for a in avals):
                raise TypeError(f"kernel {self.name} must return an array or a tuple of arrays; got {declared!r}")
            self.returns_tuple = not single
            donate = self.donate
        else:  # vjp: statics = (number of primals, forward statics)
            count, fwd_statics = statics
            fn = self._vjp_fn(_decode(fwd_statics), in_avals[:count], count)
            avals = [a for a in in_avals[:count] if _is_float(a.dtype)]
            single, donate = False, ()
        found = self._entries[key] = Entry(self.name if kind == "fwd" else f"{self.name}_vjp", fn, in_avals, avals,
                                           single, donate)
        return found

    def _merge(self, arrays: Sequence[Any], statics: tuple) -> list[Any]:
        args: list[Any] = [None] * len(self.params)
        for i, v in zip(self.static, statics):
            args[i] = v
        for i, a in zip(self.tensor_pos, arrays):
            args[i] = a
        return args

    def _vjp_fn(self, statics: tuple, primal_avals: list[Any], count: int) -> Callable[..., Any]:
        jax = deps.jax()
        import numpy as np

        fwd = self._with_statics(statics)
        floats = [i for i, a in enumerate(primal_avals) if _is_float(a.dtype)]

        def vjp(*arrays: Any) -> list[Any]:
            primals, cts = list(arrays[:count]), list(arrays[count:])

            def on_floats(*xs: Any) -> Any:
                args = list(primals)
                for i, x in zip(floats, xs):
                    args[i] = x
                return fwd(*args)

            out, pullback = jax.vjp(on_floats, *[primals[i] for i in floats])
            outs = [out] if not isinstance(out, tuple | list) else list(out)
            cts = [c if _is_float(o.dtype) else np.zeros(o.shape, jax.dtypes.float0) for c, o in zip(cts, outs)]
            grads = pullback(cts[0] if not isinstance(out, tuple | list) else type(out)(cts))
            return list(grads)

        return vjp

    # ---------------------------------------------------------------- torch.library kernels
    @staticmethod
    def _metas(tensors: Sequence[torch.Tensor]) -> tuple:
        return tuple((tuple(int(s) for s in t.shape), t.dtype) for t in tensors)

    def _run(self, entry: Entry, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        if tensors and tensors[0].device.type == "cpu":
            jax = deps.jax()
            arrays = [jax.dlpack.from_dlpack(t.detach().contiguous()) for t in tensors]
            results = entry.jitted(*arrays)
            results = list(results) if isinstance(results, list | tuple) else [results]
            run.check_results(entry.name, results, entry.avals)
            return [torch.from_dlpack(r).clone() for r in results]
        return run.run(entry.name, entry, tensors, tensors[0].device)

    def _impl(self, *args: Any) -> list[torch.Tensor]:
        tensors, statics = list(args[:-1]), args[-1]
        return self._run(self.entry(self._metas(tensors), statics), tensors)

    def _fake(self, *args: Any) -> list[torch.Tensor]:
        tensors, statics = list(args[:-1]), args[-1]
        entry = self.entry(self._metas(tensors), statics)
        return [tensors[0].new_empty(tuple(a.shape), dtype=deps.torch_dtype(a.dtype, self.name))
                for a in entry.avals]

    def _vjp_entry(self, primals: Sequence[torch.Tensor], cts: Sequence[torch.Tensor], statics: str) -> Entry:
        text = json.dumps([len(primals), statics])
        return self.entry(self._metas([*primals, *cts]), text, kind="vjp")

    def _impl_vjp(self, primals: list[torch.Tensor], cts: list[torch.Tensor], statics: str) -> list[torch.Tensor]:
        return self._run(self._vjp_entry(primals, cts, statics), [*primals, *cts])

    def _fake_vjp(self, primals: list[torch.Tensor], cts: list[torch.Tensor], statics: str) -> list[torch.Tensor]:
        entry = self._vjp_entry(primals, cts, statics)
        return [primals[0].new_empty(tuple(a.shape), dtype=deps.torch_dtype(a.dtype, self.name))
                for a in entry.avals]

    # ---------------------------------------------------------------- autograd
    @staticmethod
    def _setup(ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.save_for_backward(*inputs[:-1])
        ctx.statics = inputs[-1]
        ctx.out_meta = [(tuple(o.shape), o.dtype) for o in output]

    def _backward(self, ctx: Any, grads: Sequence[torch.Tensor | None]) -> tuple:
        primals = list(ctx.saved_tensors)
        device = primals[0].device
        cts = [g if g is not None else torch.zeros(shape, dtype=dtype, device=device)
               for g, (shape, dtype) in zip(grads, ctx.out_meta)]
        result = iter(self.vjp_op(primals, cts, ctx.statics))
        return (*[next(result) if p.dtype.is_floating_point else None for p in primals], None)


def _is_float(dtype: Any) -> bool:
    return str(dtype) in ("float32", "bfloat16", "float16", "float64")


def jax_op(name: str, fn: Callable[..., Any] | None = None, *, static_argnums: Sequence[int] = (),
           donate_argnums: Sequence[int] = (), out_shape: Callable[..., Any] | None = None,
           differentiable: bool = True) -> Any:
    """`fn` (a JAX function over arrays) as the torch operator `name` ("ns::op"), called with tensors.

    `static_argnums`: positions of non-array arguments (Python values, fixed per trace, as `jax.jit`'s).
    `donate_argnums`: inputs whose buffers the kernel may reuse (honoured by the PJRT driver where it donates
    buffers; the donated tensors must not be used afterwards). `out_shape`: a function of the same arguments
    (`jax.ShapeDtypeStruct`s for the arrays) returning the outputs' shapes, instead of `jax.eval_shape`; the
    results are checked against it. `differentiable=False`: no autograd formula. Used bare it is a decorator:
    `@jax_op("mylib::f")`.
    """
    deps.jax()
    if fn is None:
        return lambda f: JaxOp(name, f, static_argnums, donate_argnums, out_shape, differentiable)
    return JaxOp(name, fn, static_argnums, donate_argnums, out_shape, differentiable)
