"""Direct calls of the batch norm ATen ops (forward forms and backward) check their arguments before any launch
(torchtpu/ops/norm_checks.py): where CPU raises (input rank, integral input, batch_norm_cpu's parameter dtype
rules) the tpu raises CPU's class and message in every eager mode; where CPU does not check (a per-channel vector
of the wrong length, grad_out of another shape: CPU reads outside the buffer; missing statistics: CPU crashes)
the tpu raises a RuntimeError naming the argument; valid calls still give CPU's values."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
import torch

import torchtpu  # noqa: F401

aten = torch.ops.aten
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
F32, F64, F16, BF16, I64 = torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64


def _t(*shape: int, dtype: torch.dtype = F32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g).to(dtype) + 0.5


def _outcome(fn: Callable[..., Any], args: tuple, device: str, mode: str = "DEFER_NEVER") -> tuple:
    moved = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
    try:
        if device == "cpu":
            out = fn(*moved)
        else:
            with torch.tpu.eager_mode(mode):
                out = fn(*moved)
    except Exception as e:  # noqa: BLE001 - the class and message are what is compared
        return type(e), str(e).split("\n")[0], None
    return None, "", [o.cpu() if isinstance(o, torch.Tensor) else o for o in out]


X, W, RM, RV, G = _t(2, 3, 4), _t(3, seed=1), _t(3, seed=2), _t(3, seed=3), _t(2, 3, 4, seed=4)
MASK = [True, True, True]
RESERVE = torch.empty(0, dtype=torch.uint8)

# Calls CPU answers (a result or an error): compared class, message and values.
CPU_CASES: dict[str, tuple[Callable[..., Any], tuple]] = {
    "nbn_train": (aten.native_batch_norm, (X, W, W, RM, RV, True, 0.1, 1e-5)),
    "nbn_eval": (aten.native_batch_norm, (X, W, W, RM, RV, False, 0.1, 1e-5)),
    "nbn_1d": (aten.native_batch_norm, (_t(3), W, W, RM, RV, True, 0.1, 1e-5)),
    "nbn_int": (aten.native_batch_norm, (X.to(I64), W, W, RM, RV, True, 0.1, 1e-5)),
    "nbn_w_2d": (aten.native_batch_norm, (X, W.reshape(3, 1), W, RM, RV, True, 0.1, 1e-5)),
    "legit_1d": (aten._native_batch_norm_legit, (_t(3), W, W, RM, RV, True, 0.1, 1e-5)),
    "legit_no_stats_1d": (aten._native_batch_norm_legit.no_stats, (_t(3), W, W, True, 0.1, 1e-5)),
    "legit_no_training_1d": (aten._native_batch_norm_legit_no_training, (_t(3), W, W, RM, RV, 0.1, 1e-5)),
    "legit_functional_1d": (aten._native_batch_norm_legit_functional, (_t(3), W, W, RM, RV, True, 0.1, 1e-5)),
    "legit_functional_rm_f64": (aten._native_batch_norm_legit_functional,
                                (X, W, W, RM.double(), RV, True, 0.1, 1e-5)),
    "no_training_w_f16": (aten._native_batch_norm_legit_no_training, (X, W.half(), None, RM, RV, 0.1, 1e-5)),
    "with_update_x_f64": (aten._batch_norm_with_update, (X.double(), W, W, RM, RV, 0.1, 1e-5)),
    "backward_train": (aten.native_batch_norm_backward, (G, X, W, RM, RV, RM, RV, True, 1e-5, MASK)),
    "backward_1d": (aten.native_batch_norm_backward, (_t(3), _t(3), W, RM, RV, RM, RV, True, 1e-5, MASK)),
    "batch_norm_backward_1d": (aten.batch_norm_backward,
                               (_t(3), _t(3), W, RM, RV, RM, RV, True, 1e-5, MASK, RESERVE)),
}

XG, GM = _t(2, 4, 3, seed=5), _t(2, 2, seed=6)
GN, GNB = aten.native_group_norm, aten.native_group_norm_backward
# native_group_norm runs its upstream decomposition behind CPU's checks (norm_checks.wrap).
CPU_CASES.update({
    "gn_ok": (GN, (XG, W.repeat(2)[:4], None, 2, 4, 3, 2, 1e-5)),
    "gn_weight": (GN, (XG, _t(5), None, 2, 4, 3, 2, 1e-5)),
    "gn_bias": (GN, (XG, None, _t(5), 2, 4, 3, 2, 1e-5)),
    "gn_weight_2d": (GN, (XG, _t(2, 2), None, 2, 4, 3, 2, 1e-5)),
    "gn_groups_not_dividing": (GN, (XG, None, None, 2, 4, 3, 3, 1e-5)),
    "gn_zero_groups": (GN, (XG, None, None, 2, 4, 3, 0, 1e-5)),
    "gn_wrong_n": (GN, (XG, None, None, 3, 4, 3, 2, 1e-5)),
    "gn_wrong_c": (GN, (XG, _t(4), None, 2, 6, 2, 2, 1e-5)),
    "gn_int": (GN, (XG.to(I64), None, None, 2, 4, 3, 2, 1e-5)),
    "gn_1d": (GN, (_t(4), None, None, 1, 4, 1, 2, 1e-5)),
    "gn_weight_f64": (GN, (XG, _t(4).double(), None, 2, 4, 3, 2, 1e-5)),
    "gn_x_f16_weight_f32": (GN, (XG.half(), _t(4), None, 2, 4, 3, 2, 1e-5)),
    "gnb_ok": (GNB, (XG, XG, GM, GM, _t(4), 2, 4, 3, 2, MASK)),
    "gnb_grad": (GNB, (_t(2, 4, 4), XG, GM, GM, _t(4), 2, 4, 3, 2, MASK)),
    "gnb_mean": (GNB, (XG, XG, _t(2, 3), GM, _t(4), 2, 4, 3, 2, MASK)),
    "gnb_rstd": (GNB, (XG, XG, GM, _t(3), _t(4), 2, 4, 3, 2, MASK)),
    "gnb_weight": (GNB, (XG, XG, GM, GM, _t(5), 2, 4, 3, 2, MASK)),
    "gnb_wrong_n": (GNB, (XG, XG, GM, GM, _t(4), 3, 4, 3, 2, MASK)),
    "gnb_mean_f64": (GNB, (XG, XG, GM.double(), GM, _t(4), 2, 4, 3, 2, MASK)),
    # the mixed-type check comes before the kernel's dispatch (fuzz seed 3: a complex X with a float32 mean
    # raised the dispatch's NotImplementedError)
    "gnb_x_complex_mean_f32": (GNB, (XG.to(torch.complex64), XG.to(torch.complex64), GM, GM.to(torch.complex64),
                                     None, 2, 4, 3, 2, [True, False, False])),
    "gnb_x_int_mean_f32": (GNB, (XG.to(I64), XG.to(I64), GM, GM, None, 2, 4, 3, 2, [True, False, False])),
    "gnb_x_f64_stats_f32": (GNB, (XG.double(), XG.double(), GM, GM, None, 2, 4, 3, 2, [True, False, False])),
})


def _assert_same(name: str, mode: str, fn: Callable[..., Any], args: tuple) -> None:
    cpu_cls, cpu_msg, cpu_y = _outcome(fn, args, "cpu")
    tpu_cls, tpu_msg, tpu_y = _outcome(fn, args, "tpu", mode)
    assert (tpu_cls, tpu_msg) == (cpu_cls, cpu_msg), f"{name} {mode}: cpu {cpu_cls} {cpu_msg!r}, tpu {tpu_msg!r}"
    if cpu_cls is None:
        for a, b in zip(tpu_y, cpu_y):
            if isinstance(b, torch.Tensor) and b.numel():
                tol = {F16: 4e-3, BF16: 3e-2}.get(b.dtype)  # about two ulps: rounding order (not checked here)
                torch.testing.assert_close(a, b, atol=tol, rtol=tol, msg=name)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CPU_CASES))
def test_raises_and_computes_as_cpu(name: str, mode: str) -> None:
    _assert_same(name, mode, *CPU_CASES[name])


def test_parameter_dtypes_as_cpu() -> None:
    """batch_norm_cpu's mixed-dtype rules over every input / weight+bias / running-statistics dtype."""
    raised = 0
    for xd, wd, rd, training in itertools.product((F32, F64, F16, BF16, I64), (None, F32, F64, F16, BF16),
                                                  (None, F32, F64, F16), (True, False)):
        if rd is None and not training:
            continue  # CPU crashes (see test_no_cpu_check)
        w = None if wd is None else W.to(wd)
        r = None if rd is None else RM.to(rd)
        args = (X.to(xd), w, w, r, r, training, 0.1, 1e-5)
        _assert_same(f"{xd} {wd} {rd} {training}", "DEFER_NEVER", aten.native_batch_norm, args)
        raised += _outcome(aten.native_batch_norm, args, "cpu")[0] is not None
    assert 40 < raised < 150  # both outcomes are exercised


BAD = _t(4)
# Calls CPU does not check (reads outside a buffer, or crashes): the tpu names what is wrong.
UNCHECKED: dict[str, tuple[Callable[..., Any], tuple, str]] = {
    "nbn_weight": (aten.native_batch_norm, (X, BAD, W, RM, RV, True, 0.1, 1e-5),
                   "native_batch_norm: weight should have one element per channel (3), but got weight of shape [4]"),
    "nbn_running_var": (aten.native_batch_norm, (X, W, W, RM, BAD, False, 0.1, 1e-5),
                        "native_batch_norm: running_var should have one element per channel (3), but got "
                        "running_var of shape [4]"),
    "nbn_eval_no_stats": (aten.native_batch_norm, (X, W, W, None, None, False, 0.1, 1e-5),
                          "native_batch_norm: running_mean and running_var must be defined in evaluation mode "
                          "(training=False)"),
    "legit_bias": (aten._native_batch_norm_legit, (X, W, BAD, RM, RV, True, 0.1, 1e-5),
                   "_native_batch_norm_legit: bias should have one element per channel (3), but got bias of shape "
                   "[4]"),
    "no_stats_eval": (aten._native_batch_norm_legit.no_stats, (X, W, W, False, 0.1, 1e-5),
                      "_native_batch_norm_legit: running_mean and running_var must be defined in evaluation mode "
                      "(training=False)"),
    "no_training_mean": (aten._native_batch_norm_legit_no_training, (X, W, W, BAD, RV, 0.1, 1e-5),
                         "_native_batch_norm_legit_no_training: running_mean should have one element per channel "
                         "(3), but got running_mean of shape [4]"),
    "functional_mean": (aten._native_batch_norm_legit_functional, (X, W, W, BAD, RV, True, 0.1, 1e-5),
                        "_native_batch_norm_legit_functional: running_mean should have one element per channel (3), "
                        "but got running_mean of shape [4]"),
    "no_update_weight": (aten._batch_norm_no_update, (X, BAD, W, RM, RV, 0.1, 1e-5),
                         "_batch_norm_no_update: weight should have one element per channel (3), but got weight of "
                         "shape [4]"),
    "with_update_mean": (aten._batch_norm_with_update, (X, W, W, BAD, RV, 0.1, 1e-5),
                         "_batch_norm_with_update: running_mean should have one element per channel (3), but got "
                         "running_mean of shape [4]"),
    "backward_grad": (aten.native_batch_norm_backward, (_t(2, 3, 5), X, W, RM, RV, RM, RV, True, 1e-5, MASK),
                      "native_batch_norm_backward: grad_out should have the shape of input [2, 3, 4], but got "
                      "grad_out of shape [2, 3, 5]"),
    "backward_save_invstd": (aten.native_batch_norm_backward, (G, X, W, RM, RV, RM, BAD, True, 1e-5, MASK),
                             "native_batch_norm_backward: save_invstd should have one element per channel (3), but "
                             "got save_invstd of shape [4]"),
    "backward_eval_no_stats": (aten.native_batch_norm_backward, (G, X, W, None, None, RM, RV, False, 1e-5, MASK),
                               "native_batch_norm_backward: running_mean and running_var must be defined in "
                               "evaluation mode (train=False), but running_mean is None"),
    "backward_train_no_save": (aten.native_batch_norm_backward, (G, X, W, RM, RV, None, None, True, 1e-5, MASK),
                               "native_batch_norm_backward: save_mean and save_invstd must be defined in training "
                               "(train=True), but save_mean is None"),
    "batch_norm_backward_weight": (aten.batch_norm_backward, (G, X, BAD, RM, RV, RM, RV, True, 1e-5, MASK, RESERVE),
                                   "batch_norm_backward: weight should have one element per channel (3), but got "
                                   "weight of shape [4]"),
    "nbn_0d": (aten.native_batch_norm, (torch.tensor(1.0), W, W, RM, RV, True, 0.1, 1e-5),
               "native_batch_norm: input should have at least 2 dimensions (N, C, *), but got a 0-d tensor"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(UNCHECKED))
def test_no_cpu_check(name: str, mode: str) -> None:
    fn, args, message = UNCHECKED[name]
    cls = ValueError if name == "nbn_0d" else RuntimeError  # CPU's class for a 0-d input (SmallVector)
    assert _outcome(fn, args, "tpu", mode)[:2] == (cls, message)


def test_compiled_raises_as_cpu() -> None:
    """Under torch.compile the wrong-rank call raises CPU's class (FakeTensor's shape propagation or our
    lowering), never a result."""
    torch._dynamo.reset()
    fn = torch.compile(lambda x, w: aten._native_batch_norm_legit_no_training(x, w, w, w, w, 0.1, 1e-5)[0],
                       backend="tpu")
    with pytest.raises(IndexError):
        aten._native_batch_norm_legit_no_training(_t(3), W, W, W, W, 0.1, 1e-5)
    with pytest.raises(Exception) as info:
        fn(_t(3).to("tpu"), W.to("tpu"))
    assert "IndexError" in repr(info.value) or isinstance(info.value, IndexError)
