"""Type-promotion errors as CPU raises them (class and words), in every eager mode: real-only unary kernels
refuse complex inputs (they returned a complex result before), lerp refuses an `end`/`weight` of another dtype,
index_put_ refuses a value of another dtype (after the shape check; a one-element value under one boolean mask
is masked_fill_'s and is cast), cat's result dtype counts the 1-D empties it skips, and an in-place op whose
result has another shape reports the shape before the cast (TensorIterator checks shapes first). Valid calls
still give CPU's values."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]

Call = Callable[[str], torch.Tensor]


def _c(d: str) -> torch.Tensor:
    return torch.tensor([1.5 + 1j, -2.25 - 0.5j], device=d)


def _mask(d: str) -> torch.Tensor:
    return torch.tensor([True, False, True], device=d)


def _ones(d: str) -> torch.Tensor:
    return torch.ones(3, dtype=torch.double, device=d)


CASES: dict[str, Call] = {
    "floor_complex": lambda d: torch.floor(_c(d)),
    "ceil_complex": lambda d: torch.ceil(_c(d)),
    "trunc_complex": lambda d: torch.trunc(_c(d)),
    "fix_complex": lambda d: torch.fix(_c(d)),
    "round_complex": lambda d: torch.round(_c(d)),
    "round_complex128": lambda d: torch.round(_c(d).to(torch.complex128)),
    "round_decimals_complex": lambda d: torch.round(_c(d), decimals=1),
    "frac_complex": lambda d: torch.frac(_c(d)),
    "frac_long": lambda d: torch.frac(torch.tensor([3], device=d)),
    "sign_complex": lambda d: torch.sign(_c(d)),
    "relu_complex": lambda d: torch.relu(_c(d)),
    "signbit_complex": lambda d: torch.signbit(_c(d)),
    "floor_divide_complex": lambda d: torch.floor_divide(_c(d), 2),
    "floor_out_complex": lambda d: torch.floor(_c(d), out=torch.empty(0, dtype=torch.complex64, device=d)),
    "neg_out_complex": lambda d: torch.neg(_c(d), out=torch.empty(0, dtype=torch.complex64, device=d)),
    "floor_float": lambda d: torch.floor(torch.tensor([1.5, -2.5], device=d)),
    "lerp_end": lambda d: torch.lerp(_ones(d), torch.zeros(3, device=d), 0.5),
    "lerp_weight": lambda d: torch.lerp(_ones(d), torch.zeros(3, dtype=torch.double, device=d),
                                        torch.full((3,), 0.5, device=d)),
    "lerp_same": lambda d: torch.lerp(_ones(d), torch.zeros(3, dtype=torch.double, device=d), 0.25),
    "lerp_inplace_end": lambda d: _ones(d).lerp_(torch.zeros(3, device=d), 0.5),
    "index_put_int": lambda d: _ones(d).index_put_((torch.tensor([0, 2], device=d),),
                                                   torch.tensor([5, 6], device=d)),
    "index_put_int_0d": lambda d: _ones(d).index_put_((torch.tensor([0, 2], device=d),), torch.tensor(5, device=d)),
    "index_put_accumulate": lambda d: _ones(d).index_put_((torch.tensor([0, 2], device=d),),
                                                          torch.tensor([5, 6], device=d), accumulate=True),
    "index_put_shape_first": lambda d: _ones(d).index_put_((torch.tensor([0, 2], device=d),),
                                                           torch.tensor([5, 6, 7], device=d)),
    "index_put_no_index": lambda d: _ones(d).index_put_((), torch.tensor([5, 6, 7], device=d)),
    "index_put_functional": lambda d: _ones(d).index_put((torch.tensor([0, 2], device=d),),
                                                         torch.tensor([5, 6], device=d)),
    "index_put_mask_1d": lambda d: _ones(d).index_put_((_mask(d),), torch.tensor([5, 6], device=d)),
    "index_put_mask_0d": lambda d: _ones(d).index_put_((_mask(d),), torch.tensor(5, device=d)),
    "index_put_mask_1elem": lambda d: _ones(d).index_put_((_mask(d),), torch.tensor([7], device=d)),
    "index_put_same_dtype": lambda d: _ones(d).index_put_((torch.tensor([0, 2], device=d),),
                                                          torch.tensor([5.0, 6.0], dtype=torch.double, device=d)),
    "setitem_columns": lambda d: _setitem(torch.ones(5, 2, dtype=torch.double, device=d),
                                          torch.zeros(5, 1, dtype=torch.int, device=d)),
    "add_inplace_shape_first": lambda d: torch.zeros(3, dtype=torch.int64, device=d).add_(torch.zeros(2, 3, device=d)),
    "mul_inplace_shape_first": lambda d: torch.zeros(3, dtype=torch.int64, device=d).mul_(
        torch.zeros(2, 3, dtype=torch.int32, device=d)),
    "add_inplace_cast": lambda d: torch.zeros(3, dtype=torch.int64, device=d).add_(torch.zeros(3, device=d)),
    "cat_skipped_empty_dtype": lambda d: torch.cat([torch.ones(3, dtype=torch.half, device=d),
                                                    torch.ones(0, dtype=torch.double, device=d)]),
    "cat_all_empty_dtype": lambda d: torch.cat([torch.ones(0, dtype=torch.int32, device=d),
                                                torch.ones(0, device=d)]),
    "cat_2d_and_empty": lambda d: torch.cat([torch.ones(2, 2, dtype=torch.bool, device=d),
                                             torch.ones(0, dtype=torch.int8, device=d)]),
    "add_inplace_ok": lambda d: torch.zeros(3, dtype=torch.int64, device=d).add_(torch.ones(3, dtype=torch.int32,
                                                                                             device=d)),
}


def _setitem(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a[:, [1]] = b
    return a


def _outcome(call: Call, device: str) -> tuple[str, object]:
    try:
        r = call(device)
        if device != "cpu":
            torch.tpu.synchronize()
        return "ok", r.cpu()
    except Exception as e:  # noqa: BLE001 - the class and words are what is compared
        return type(e).__name__, str(e)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_errors_and_values_as_cpu(mode: str, name: str) -> None:
    want = _outcome(CASES[name], "cpu")
    with torch.tpu.eager_mode(mode):
        got = _outcome(CASES[name], "tpu")
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        assert got[1].dtype == want[1].dtype
        torch.testing.assert_close(got[1], want[1], rtol=0, atol=0)
    else:
        # tpu may prefix the op's name ("aten.add_.Tensor: output with shape ..."); a kernel-named refusal may
        # name another of CPU's kernels for the op ("round_vml_cpu" / "round_cpu" not implemented for 'ComplexFloat')
        marker = '" not implemented for '
        same_refusal = marker in got[1] and marker in want[1] and got[1].split(marker)[1] == want[1].split(marker)[1]
        assert got[1] == want[1] or got[1].endswith(": " + want[1]) or same_refusal, (got, want)


SPARSE: dict[str, Callable[[], object]] = {
    "sparse_coo_tensor": lambda: torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]], device="tpu"),
                                                         torch.tensor([1.0, 2.0], device="tpu"), (2, 2)),
    "to_tpu": lambda: torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.0, 2.0]),
                                              (2, 2)).to("tpu"),
    "to_sparse": lambda: torch.zeros(2, 2, device="tpu").to_sparse(),
    "empty_sparse": lambda: torch.empty(2, 2, layout=torch.sparse_coo, device="tpu"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(SPARSE))
def test_sparse_layout_refused_by_name(mode: str, name: str) -> None:
    """The device holds strided tensors only: a sparse tpu tensor is refused with an error naming the layout
    (NotImplementedError, the class of the dispatcher's own refusal), not the dispatcher's generic words."""
    with torch.tpu.eager_mode(mode), pytest.raises(NotImplementedError, match=r"layout torch\.sparse_coo\) are not "
                                                                                r"supported on the tpu device"):
        SPARSE[name]()
