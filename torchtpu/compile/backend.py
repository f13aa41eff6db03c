"""`torch.compile(backend="tpu")`: AOTAutograd with the core-ATen decompositions gives functional forward and
backward ATen graphs; each graph is lowered node by node through the same lowering table as eager mode into one
IR Program, compiled once by the driver and launched as one executable per call. Inputs and outputs stay on
the device; graph breaks run the code in between eagerly on "tpu".
"""

from __future__ import annotations

import operator
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.registry import register_backend

from torchtpu import dtypes, runtime
from torchtpu.compile import fake_checks, fake_rules, native_autograd, out_resize, rank_limit, views  # noqa: F401 - views: the graph roles of view ops' records
from torchtpu.compile import padded as _padded
from torchtpu.compile.buckets import order_products, pad_args, spec_of, upper_bound
from torchtpu.compile.collective_split import split_at_collectives, unbox_call_args
from torchtpu.compile.launch_layout import LaunchLayout, graph_layout
from torchtpu.compile.literals import spell_complex_literals
from torchtpu.drivers.base import ExecutionError
from torchtpu.drivers.ir import Builder, Program
from torchtpu.execution import launch
from torchtpu.ops import graph_forms, ldexp  # noqa: F401 - graph_forms: the graph roles ops graphs spell their way
from torchtpu.ops.checked_decompositions import COMPILE, guarded
from torchtpu.ops.registry import HOPS, TABLE, Lowering, Prepare, apply
from torchtpu.ops.tracing import Sym, tracing
from torchtpu.precision import current_precision
from torchtpu.profiler import events as _events


@dataclass
class CompileStats:
    graphs: int = 0
    programs: int = 0
    calls: int = 0
    unsafe_padding: int = 0
    eager_graphs: int = 0
    trace_seconds: float = 0.0
    recompile_reasons: list[str] = field(default_factory=list)


stats = CompileStats()
_lock = threading.Lock()


_PYTHON_ARITHMETIC = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv,
                      operator.mod, operator.neg, operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
                      operator.ge, operator.pow}


class UnsupportedNode(NotImplementedError):
    pass


def _lowering_for(target: Any) -> Lowering | None:
    """The record whose graph role lowers `target`'s node, or None (the node is decomposed instead)."""
    record = TABLE.get(target)
    if record is not None and record.graph is None and record.data_dependent:
        raise UnsupportedNode(f"torch.compile(backend='tpu'): {target}'s output shape depends on its values")
    return record if record is not None and record.graph is not None else None


@dataclass
class _Traced:
    program: Program
    # per graph output: ("value"|"input", index) | ("int", value) | ("arg", graph argument position) | ("none", -1)
    output_map: list[tuple[str, int]]
    random_nodes: list[int]  # draws per random op, in program input order after the graph inputs
    mutated: list[int] = field(default_factory=list)  # tensor input written by the last len(mutated) outputs
    exe: Any = None
    node_starts: list[tuple[int, str]] = field(default_factory=list)  # (first IR op, "aten op at user line")
    host_scalars: list[int] = field(default_factory=list)  # 0-d CPU tensor inputs: scalar inputs, last
    launched: bool = False  # counted in stats.programs once it runs
    layout: LaunchLayout | None = None  # what each launch needs, fixed per program (made on the first launch)


@dataclass
class _Randomness:
    """RNG-state program inputs created while lowering random ops, and how many numbers each draws."""

    builder: Builder
    states: list[Sym] = field(default_factory=list)
    draws: list[int] = field(default_factory=list)

    def state_for(self, args: Sequence[Any]) -> Sym:
        state = Sym(self.builder.input((2,), "int64"))
        self.states.append(state)
        self.draws.append(max([a.numel() for a in args if isinstance(a, Sym)] + [1]))
        return state


def _origin(node: torch.fx.Node) -> str:
    """"aten.op from file:line" for a graph node: the last user frame of its recorded stack trace."""
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    frames = [line.strip() for line in trace if line.strip().startswith("File ")]
    return f"{node.target} from {frames[-1]}" if frames else str(node.target)


def _run_graph(gm: torch.fx.GraphModule, inputs: Sequence[Any], rng: _Randomness, depth: int = 0,
               mutations: dict[int, Sym] | None = None, starts: list[tuple[int, str]] | None = None) -> Any:
    """Lowers every node of `gm` with `inputs` bound to its placeholders; returns the output structure. With
    `mutations`, a graph input's `copy_` (AOTAutograd keeps an inference graph's input mutations in the graph)
    records the input's new value there: input position -> value."""
    env: dict[torch.fx.Node, Any] = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, value in zip(placeholders, inputs):
        env[node] = value
    position = {node: i for i, node in enumerate(placeholders)}
    for node in gm.graph.nodes:
        if node.op == "get_attr":  # a tensor constant the traced code made (a mask value, torch.tensor(...))
            env[node] = _constant(torch.fx.graph_module._get_attr(gm, node.target))
            continue
        if node.op != "call_function":
            continue
        if starts is not None:
            starts.append((len(rng.builder.ops), _origin(node)))
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        if node.target is operator.getitem:
            env[node] = args[0][args[1]]
        elif node.target in _PYTHON_ARITHMETIC:  # SymInt arithmetic of dynamic shapes: concrete here
            env[node] = node.target(*args)
        elif node.target is torch.ops.aten.sym_size.int:
            env[node] = args[0].shape[args[1]]
        elif node.target is torch.ops.aten._assert_scalar.default:
            env[node] = _assert_scalar(*args, **kwargs)
        elif node.target in HOPS:  # a higher-order op (out_dtype): the ATen op it stands for, or op by op
            rewrite = HOPS[node.target](*args, **kwargs)
            if rewrite is None:
                raise UnsupportedNode(f"torch.compile(backend='tpu'): no lowering for {node.target} with these "
                                      "arguments")
            op, op_args = rewrite
            env[node] = apply(TABLE[op], op_args, {}, graph=_NodeCall(node, rng))
        elif node.target is torch.ops.aten.copy_.default and mutations is not None and node.args[0] in position:
            env[node] = mutations[position[node.args[0]]] = TABLE[torch.ops.aten.copy.default].graph(*args)
        else:
            dtypes.check_fp8_operands((*args, *kwargs.values()), str(node.target))
            record = _lowering_for(node.target)
            if record is None:
                env[node] = _run_decomposed(node.target, args, kwargs, rng, depth)
                continue
            env[node] = apply(record, args, kwargs, graph=_NodeCall(node, rng))
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    return torch.fx.node.map_arg(output_node.args[0], lambda n: env[n])


class FailedAssertion(RuntimeError):
    """A graph's runtime assertion (`aten._assert_scalar`, from `torch._check` on dynamic sizes) is false for
    this call's sizes; its message is the assertion's."""


def _assert_scalar(condition: Any, message: str) -> None:
    """`aten._assert_scalar`: a condition on the graph's sizes and integer arguments, which are concrete while a
    graph is lowered (one Program per signature of them), so it is checked here, once per signature; a false
    one raises its message as the call would eagerly. A condition on tensor values (a traced scalar) cannot be
    known here: the graph runs op by op instead."""
    if isinstance(condition, Sym):
        raise UnsupportedNode("torch.compile(backend='tpu'): aten._assert_scalar on a tensor's value (valid: a "
                              "condition on sizes and integer arguments)")
    if not bool(condition):
        raise FailedAssertion(message)


@dataclass
class _NodeCall:
    """One graph node as `registry.apply` sees it (registry.GraphCall)."""

    node: torch.fx.Node
    rng: _Randomness

    def rng_state(self, args: tuple) -> Sym:
        return self.rng.state_for(args)

    def static_kwargs(self, prepare: Prepare) -> dict[str, Any]:
        return _static_kwargs(self.node, prepare)


def _static_kwargs(node: torch.fx.Node, prepare: Prepare) -> dict[str, Any]:
    """Runs a lowering's `prepare` step on the node's fake tensors, as eager runs it on the real ones; returns
    the keyword arguments it adds.

    A step that only reads metadata (det's layout flag from the strides) adds static keyword arguments, which
    the lowering then gets here too. A step that needs the tensors' values, or that replaces a tensor, cannot
    run at trace time: the graph then runs op by op instead, never with the step skipped.
    """
    fakes = torch.fx.node.map_arg(node.args, lambda n: n.meta.get("val"))
    fake_kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: n.meta.get("val"))
    try:
        new_args, new_kwargs = prepare(tuple(fakes), dict(fake_kwargs))
    except Exception as exc:  # noqa: BLE001 - data-dependent (a fake has no values) or any other refusal
        raise UnsupportedNode(f"torch.compile(backend='tpu'): {node.target} prepares its arguments from their "
                              f"values ({type(exc).__name__}: {exc})") from exc
    same = len(new_args) == len(fakes) and all(a is b for a, b in zip(new_args, fakes))
    added = {k: v for k, v in new_kwargs.items() if k not in fake_kwargs}
    same = same and all(new_kwargs.get(k) is v for k, v in fake_kwargs.items())
    if not same or any(isinstance(v, torch.Tensor) for v in added.values()):
        raise UnsupportedNode(f"torch.compile(backend='tpu'): {node.target} replaces its arguments in its "
                              "prepare step, which needs their values")
    return added


def _constant(value: Any) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    from torchtpu.ops import prims as P

    host = value.detach().cpu()
    if host.dim() == 0:
        return P.const(host.item(), host.dtype)
    return P.dense(host.tolist(), host.dtype)


def _run_decomposed(target: Any, args: Any, kwargs: Any, rng: _Randomness, depth: int) -> Any:
    """A node without a lowering: trace its upstream decomposition (or its CompositeImplicit/Explicit kernel) on
    meta tensors into a small ATen graph and lower that instead."""
    if depth > 4 or not isinstance(target, torch._ops.OpOverload):
        raise UnsupportedNode(f"torch.compile(backend='tpu'): no lowering for {target} in the graph")
    from torch._decomp import decomposition_table
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils._pytree import tree_flatten, tree_unflatten

    flat, spec = tree_flatten((args, kwargs))
    positions = [i for i, x in enumerate(flat) if isinstance(x, Sym)]
    metas = [torch.empty(flat[i].shape, dtype=flat[i].dtype, device="meta") for i in positions]

    def composite(*tensors: torch.Tensor) -> Any:
        values = list(flat)
        for i, t in zip(positions, tensors):
            values[i] = t
        a, k = tree_unflatten(values, spec)
        upstream = decomposition_table.get(target)
        if upstream is not None:  # behind the checks and corrections eager's decomposition records have
            return guarded(target, upstream, COMPILE)(*a, **k)
        out = target.decompose(*a, **k)  # CompositeImplicitAutograd kernels
        if out is NotImplemented:
            key = torch._C.DispatchKey.CompositeExplicitAutograd
            if not torch._C._dispatch_has_kernel_for_dispatch_key(target.name(), key):
                raise UnsupportedNode(f"torch.compile(backend='tpu'): no lowering or decomposition for {target}")
            out = target._op_dk(key, *a, **k)
        return out

    try:
        sub = make_fx(composite, decomposition_table=_decompositions())(*metas)
    except UnsupportedNode:
        raise
    except Exception as exc:  # noqa: BLE001 - any tracing failure means: run this graph eagerly
        raise UnsupportedNode(f"torch.compile(backend='tpu'): cannot decompose {target}: {exc}") from exc
    return _run_graph(sub, [flat[i] for i in positions], rng, depth + 1)


def _trace_graph(gm: torch.fx.GraphModule, inputs: Sequence[torch.Tensor]) -> _Traced:
    builder = Builder()
    input_syms: list[Sym] = []
    tensor_inputs = [v for v in inputs if isinstance(v, torch.Tensor)]
    host_scalars = [i for i, t in enumerate(tensor_inputs) if _is_host_scalar(t)]
    with tracing(builder):
        bound: list[Any] = []
        for value in inputs:
            if isinstance(value, torch.Tensor):
                sym = Sym(builder.input(tuple(value.shape), dtypes.ir_name(value.dtype, "torch.compile input")))
                input_syms.append(sym)
                bound.append(sym)
            else:
                bound.append(value)
        rng = _Randomness(builder)
        mutations: dict[int, Sym] = {}
        starts: list[tuple[int, str]] = []
        results = _run_graph(gm, bound, rng, mutations=mutations, starts=starts)
    outs: list[Sym] = []
    output_map: list[tuple[str, int]] = []
    for r in results:
        if r is None:
            output_map.append(("none", -1))
        elif isinstance(r, Sym) and any(r is s for s in input_syms):
            output_map.append(("input", next(i for i, s in enumerate(input_syms) if s is r)))
        elif isinstance(r, Sym):
            output_map.append(("value", len(outs)))
            outs.append(r)
        elif isinstance(r, int | torch.SymInt) and not isinstance(r, bool):  # a SymInt of a dynamic graph
            output_map.append(("int", int(r)))
        elif any(r is value for value in inputs):  # a non-tensor argument returned as is (a DeviceMesh, say)
            output_map.append(("arg", next(i for i, value in enumerate(inputs) if value is r)))
        else:
            raise UnsupportedNode(f"torch.compile(backend='tpu'): graph output of type {type(r).__name__} "
                                  "(valid: tensors, ints, None and the graph's own arguments)")
    tensor_index = {graph_position: i for i, graph_position in
                    enumerate(p for p, value in enumerate(inputs) if isinstance(value, torch.Tensor))}
    mutated = [tensor_index[p] for p in sorted(mutations)]
    program = builder.finish([s.value for s in outs] + [mutations[p].value for p in sorted(mutations)],
                             name="compiled_graph")
    on_device = [s.value for i, s in enumerate(input_syms) if i not in host_scalars]
    program.inputs = on_device + [s.value for s in rng.states] + [input_syms[i].value for i in host_scalars]
    return _Traced(program, output_map, rng.draws, mutated, node_starts=starts, host_scalars=host_scalars)


def _is_host_scalar(t: torch.Tensor) -> bool:
    """A 0-d CPU tensor (a lifted scalar such as Adam's step count): a scalar input of the launch, as eager takes
    one, not a tensor copied to the device first."""
    return t.is_cpu and not t.ndim


def _symbol(value: Any) -> str | None:
    """The shape symbol a SymInt stands for exactly (`s0`); "?" for a compound expression; None if static."""
    if isinstance(value, torch.SymInt):
        expr = value.node.expr
        if getattr(expr, "is_Symbol", False):
            return str(expr)
        if getattr(expr, "free_symbols", None):
            return "?"
    return None


class CompiledGraph:
    """The callable torch.compile gets back for one ATen graph: one Program per input signature, or per
    bucket of signatures when the graph has dynamic dimensions and padding them is provably safe."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], policy: Any = None) -> None:
        self.gm = gm
        self.programs: dict[tuple, _Traced] = {}
        specs: list[Any] = []  # per input: per-axis dynamic sizes (tensor) or one (int); buckets.spec_of
        self.bounds: dict[str, int] = {}
        for value in example_inputs:
            sizes = list(value.shape) if isinstance(value, torch.Tensor) else [value]
            for size in sizes:
                spec, upper = spec_of(size), upper_bound(size)
                if isinstance(spec, str) and upper is not None:
                    self.bounds[spec] = upper
            specs.append([spec_of(s) for s in sizes] if isinstance(value, torch.Tensor) else spec_of(value))
        self.specs = order_products(specs)
        self.policy = policy
        self.dynamic = any(x for s in self.specs for x in (s if isinstance(s, list) else [s]))
        self.plans: dict[tuple, _padded.Plan | None] = {}  # padded signature -> the bucket's plan (None: unsafe)
        self.checks: dict[tuple, tuple[_padded.Plan, _padded.Analysis] | None] = {}  # exact signature -> plan
        self.eager_reason: str | None = None
        output = next(n for n in gm.graph.nodes if n.op == "output").args[0]
        # where each graph output lives (a `.cpu()` or `.to("tpu")` in the graph moves it): fake tensors know
        self.out_devices = [getattr(n.meta.get("val"), "device", None) if isinstance(n, torch.fx.Node) else None
                            for n in (output if isinstance(output, list | tuple) else [output])]
        with _lock:
            stats.graphs += 1

    _boxed_call = True  # AOTAutograd passes one list of arguments, which we may clear

    def __call__(self, *call_args: Any) -> list[Any]:
        args = unbox_call_args(call_args)
        if self.eager_reason is not None:
            return list(self.gm(*args))
        try:
            return self._call(args)
        except UnsupportedNode as exc:  # a node without lowering: this graph runs op by op on "tpu" instead
            self.eager_reason = str(exc)
            spell_complex_literals(self.gm)
            stats.eager_graphs += 1
            warnings.warn(f"{exc}; this graph runs eagerly on tpu (correct, not fused)", RuntimeWarning,
                          stacklevel=2)
            return list(self.gm(*args))

    def _call(self, args: list[Any]) -> list[Any]:
        result = self._bucket_call(args) if self.dynamic else None
        if result is None:
            traced = self._traced(args)
            stats.calls += 1
            result = self._launch(traced, args)
        for i, device in enumerate(self.out_devices[:len(result)]):
            value = result[i]
            if device is not None and isinstance(value, torch.Tensor) and value.device != device:
                result[i] = value.to(device)
        return result

    def _bucket_call(self, args: list[Any]) -> list[Any] | None:
        """Runs the call through its bucket's padded Program; None when padding is not proven exact for it."""
        padded = pad_args(args, self.specs, self.policy, self.bounds)
        if padded is None:
            return None
        padded_args, tags, real, sizes = padded
        exact = self._traced(args, compile_only=True)
        check = self.checks.get(self._key(args), ())
        if check == ():
            check = self.checks[self._key(args)] = self._check(exact, padded_args, tags, real, sizes)
        if check is None:
            return None
        plan, analysis = check
        extra = [(real[s], "int32") for s in plan.symbols]
        extra += [(analysis.lifted[i], d) for i, d in zip(plan.lifted, plan.dtypes)]
        stats.calls += 1
        result = self._launch(plan.traced, padded_args, extra)
        result = _padded.unpad(result, plan.traced.output_map, exact.program.outputs, exact.output_map,
                                plan.out_tags, real)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        return [tensors[index] if kind == "input" else r for r, (kind, index) in zip(result, exact.output_map)]

    def _check(self, exact: _Traced, padded_args: list[Any], tags: list[dict], real: dict[str, int],
               sizes: dict[str, int]) -> tuple[_padded.Plan, _padded.Analysis] | None:
        key = self._key(padded_args)
        try:
            raw = self._traced(padded_args, compile_only=True)
        except FailedAssertion:  # true at the real sizes (the exact trace checked them), false at the bucket's
            stats.unsafe_padding += 1
            return None
        tensor_tags = [t for t, v in zip(tags, padded_args) if isinstance(v, torch.Tensor)]
        mutated = any(tensor_tags[i] for i in raw.mutated)  # written in place: the caller's tensor, not a copy
        tensor_tags = [t for i, t in enumerate(tensor_tags) if i not in raw.host_scalars]  # 0-d host: last
        input_tags = tensor_tags + [{}] * (len(raw.program.inputs) - len(tensor_tags))
        plan = self.plans.get(key, ())
        if plan == ():
            analysis = None if mutated else _padded.analyse(raw.program, exact.program, input_tags, real, sizes)
            plan = None
            if analysis is not None:
                plan = _padded.emit(raw.program, analysis, sorted(real))
                plan.traced = _Traced(plan.program, raw.output_map, raw.random_nodes, raw.mutated,
                                      node_starts=raw.node_starts, host_scalars=raw.host_scalars)
                stats.programs += 1
            self.plans[key] = plan
        analysis = None if plan is None else _padded.analyse(raw.program, exact.program, input_tags, real, sizes,
                                                             plan.analysis)
        if analysis is None:
            stats.unsafe_padding += 1
            return None
        return plan, analysis

    @staticmethod
    def _key(args: list[Any]) -> tuple:
        # `_is_host_scalar` spelled inline with `is_cpu` (no device object): this runs on every launch, over
        # every input (~140 for a compiled AdamW step: 1.6 us each through `device.type`, 0.35 us here)
        tensor = torch.Tensor
        return (tuple([(a.shape, a.dtype, a.is_cpu and not a.ndim) if isinstance(a, tensor) else a
                       for a in args]), current_precision())

    def _traced(self, args: list[Any], compile_only: bool = False) -> _Traced:
        key = self._key(args)
        traced = self.programs.get(key)
        if traced is None:
            traced = _trace_graph(self.gm, args)
            self.programs[key] = traced
        if not compile_only and not traced.launched:
            traced.launched = True
            stats.programs += 1
        return traced

    def _launch(self, traced: _Traced, args: list[Any], extra: Sequence[tuple[Any, str]] = ()) -> list[Any]:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        layout = traced.layout
        if layout is None:
            layout = traced.layout = LaunchLayout(traced.program, traced.mutated, traced.host_scalars, len(tensors),
                                                  len(extra), *graph_layout(self.gm, traced.output_map))
        device = next((t.device.index or 0 for t in tensors if t.device.type == "tpu"), 0)
        states = []
        if traced.random_nodes:
            from torchtpu import random as tpu_random

            states = [tpu_random.next_state(device, n) for n in traced.random_nodes]
        # a mutated tpu input is written in place; a host one (a lifted CPU scalar such as Adam's step count)
        # gets a device output, reused across launches (launch_layout.py), copied back after the launch
        mutated = [tensors[i] for i in traced.mutated]
        dev = torch.device("tpu", device)
        outputs = layout.allocate(tensors, dev)  # as the graph's fake outputs are laid out; views of inputs
        pooled = layout.host_outputs(dev, mutated, outputs) if mutated else None
        inputs = [a if a.device.type == "tpu" else a.to(dev) for a in map(tensors.__getitem__, layout.on_device)]
        scalar_buffer = runtime.scalar_buffer
        scalars = [scalar_buffer(tensors[i].item(), dtype) for i, dtype in layout.host]
        scalars += [scalar_buffer(value, dtype) for value, dtype in extra]
        try:
            exe = launch.launch("compiled_graph", traced.program, inputs + states, outputs, device, scalars,
                                exe=traced.exe)
        except ExecutionError as exc:
            where = next((o for start, o in reversed(traced.node_starts) if start <= exc.op_index), "?")
            cause = exc.cause
            raise ExecutionError(exc.op_index, exc.op_name, type(cause)(
                f"{cause} (in {where}; raised when the compiled graph ran)")) from cause
        if exe is not None and exe is not traced.exe:
            traced.exe = exe
            _events.name_program(exe.program, self.gm)  # profiler: the graph's ATen ops and lines
        back = [(out, t) for t, out in zip(mutated, outputs[len(layout.fresh):]) if t is not out]
        if back:
            layout.copy_back(pooled, back)
        if pooled is not None:
            layout.give_back(dev, pooled)
        result: list[Any] = []
        for kind, index in traced.output_map:
            if kind == "none":
                result.append(None)
            elif kind == "input":
                result.append(tensors[index])
            elif kind == "int":
                result.append(index)
            elif kind == "arg":
                result.append(args[index])
            else:
                result.append(outputs[index])
        return result


def _compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], policy: Any = None) -> Callable[..., Any]:
    make = CompiledGraph if policy is None else (lambda g, ex: CompiledGraph(g, ex, policy))
    return split_at_collectives(gm, make) or make(gm, example_inputs)


def bounded(buckets: str | Sequence[int] = "max") -> Callable[..., Any]:
    """A "tpu" backend with its own shape-bucket policy, for `torch.compile(fn, backend=bounded(...),
    dynamic=True)`: "max" pads each dynamic size to the bound `torch._dynamo.mark_dynamic(x, dim, max=N)` gave
    it (one Program per graph for every size up to N; next power of two where none was given), "pow2", "none",
    or a list of sizes. Dynamo itself recompiles a size outside the declared range."""
    from functorch.compile import make_boxed_compiler

    from torchtpu.compile.buckets import POLICIES

    if isinstance(buckets, str) and buckets not in POLICIES or not isinstance(buckets, str) and (
            not buckets or any(not isinstance(b, int) or b < 1 for b in buckets)):
        raise ValueError(f"bounded(buckets={buckets!r}): valid: {', '.join(POLICIES)} or a list of positive sizes")
    policy = buckets if isinstance(buckets, str) else sorted(buckets)
    boxed = make_boxed_compiler(lambda gm, ex: _compiler(gm, ex, policy))
    return out_resize.guarded(rank_limit.guarded(aot_autograd(
        fw_compiler=boxed, bw_compiler=boxed, decompositions=_decompositions(), keep_inference_input_mutations=True)))


def _decompositions() -> dict:
    """Core-ATen decompositions minus the ops we lower ourselves (our lowering is better than a decomposition).
    Ops outside both are decomposed node by node at lowering time (`_run_decomposed`)."""
    table = dict(core_aten_decompositions())
    for op in list(table):
        if op in TABLE and TABLE[op].graph is not None:
            del table[op]
        if op in table:
            table[op] = guarded(op, table[op], COMPILE)
    table[torch.ops.aten.ldexp.Tensor] = ldexp.compile_decomposition  # exact as eager (ops/ldexp.py)
    return table


_backend = None


def tpu_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """The Dynamo backend registered as "tpu"."""
    global _backend
    if _backend is None:
        from functorch.compile import make_boxed_compiler

        boxed = make_boxed_compiler(_compiler)
        # inference graphs (an optimizer step, a no_grad forward updating buffers) keep their input mutations as
        # copy_ nodes, which the Program writes into the inputs: without it AOTAutograd copies each mutated
        # input back with its own eager launch (a compiled AdamW step on 42 parameters: 210 copy_ launches)
        _backend = aot_autograd(fw_compiler=boxed, bw_compiler=boxed, decompositions=_decompositions(),
                                keep_inference_input_mutations=True)
    return out_resize.eager_if_out_resized(gm, example_inputs) or rank_limit.guarded(_backend)(gm, example_inputs)


# The backend's own Python (kernels, runtime, drivers, simulator) must never be traced by Dynamo: eager ops
# that run inside a compiled function's graph breaks reach these frames. User-facing modules (models, demo)
# stay traceable.
_DYNAMO_SKIP = ("torchtpu.execution", "torchtpu.ops", "torchtpu.compile", "torchtpu.runtime", "torchtpu.random",
                "torchtpu.precision", "torchtpu._native", "torchtpu.registration", "torchtpu.device_module",
                "torchtpu.stats", "torchtpu.drivers", "torchtpu.sim", "torchtpu.profiler", "torchtpu.dtypes")


_rules_registered = False


def register() -> None:
    """Registers the backend's fake-tensor rules, the upsample family's tpu autograd kernels (native_autograd.py),
    Dynamo skips, and the name "tpu" unless Dynamo's entry-point discovery already holds it (then `lookup_backend`
    registers `tpu_backend` as it loads this module). Idempotent; runs when this module is imported."""
    global _rules_registered
    from torch._dynamo import trace_rules
    from torch._dynamo.backends.registry import _BACKENDS

    if not _rules_registered:
        fake_rules.register()
        fake_checks.register()
        native_autograd.register()
        for name in _DYNAMO_SKIP:
            trace_rules.add(name)
        _rules_registered = True
    if "tpu" not in _BACKENDS:
        register_backend(compiler_fn=tpu_backend, name="tpu")


def compile_stats() -> dict[str, Any]:
    from torch._dynamo.utils import guard_failures

    reasons = [str(r) for failures in guard_failures.values() for r in failures]
    return {"graphs": stats.graphs, "programs": stats.programs, "calls": stats.calls,
            "exact_shape_fallbacks": stats.unsafe_padding, "eager_graphs": stats.eager_graphs,
            "recompiles": len(reasons), "recompile_reasons": reasons[-20:]}


def reset_compile_stats() -> None:
    global stats
    stats = CompileStats()


register()
