"""complex64 and complex128 support: the views between complex and real tensors (view_as_real / view_as_complex
share storage, so real(), imag() and their writes alias as in ATen), conjugation, complex/polar construction, and
the FFTs (`_fft_r2c`, `_fft_c2c`, `_fft_c2r` onto the IR's `fft`, stablehlo.fft).

Conjugate and negative views (`x.conj()`, `_neg_view`) are lazy bits on a tensor. ATen resolves them before a
kernel by cloning, which for a non-CPU device re-enters `_copy_from` with the bit still set; the kernels here,
registered on the Conjugate and Negative keys for `_copy_from`, copy the plain storage and apply the bit.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchtpu import dtypes
from torchtpu.execution import eager
from torchtpu.ops import prims as P
from torchtpu.ops.complex_checks import check_parts
from torchtpu.ops.copy import check_copy_shapes
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


def real(x: Sym) -> Sym:
    if x.dtype == torch.complex32:  # its float16 parts, exact
        return P.convert(real(P.convert(x, torch.complex64)), torch.float16)
    return P.emit1("real", [x]) if x.dtype.is_complex else x


def imag(x: Sym) -> Sym:
    if x.dtype == torch.complex32:
        return P.convert(imag(P.convert(x, torch.complex64)), torch.float16)
    return P.emit1("imag", [x]) if x.dtype.is_complex else P.zeros_like(x)


def make_complex(re: Sym, im: Sym) -> Sym:
    """complex64 from float32 (or narrower) parts, complex128 where either part is float64."""
    part = P.COMPLEX_PART[P.complex_for(re.dtype, im.dtype)]
    re, im = P.broadcast(P.convert(re, part), P.convert(im, part))
    return P.emit1("complex", [re, im])


def conj(x: Sym) -> Sym:
    if x.dtype == torch.complex32:
        return P.via_complex64(conj, x)
    return make_complex(real(x), -imag(x)) if x.dtype.is_complex else x


@lower(aten._conj_physical.default, aten.conj_physical_.default)
def conj_physical(self: Sym) -> Sym:
    return conj(self)


@lower(aten.complex.default)
def complex_(real: Sym, imag: Sym) -> Sym:  # noqa: A002 - ATen's names
    check_parts(real, imag)
    if real.dtype == torch.float16:  # complex32, exact
        return P.convert(make_complex(real, imag), torch.complex32)
    return make_complex(real, imag)


@lower(aten.polar.default)
def polar(abs: Sym, angle: Sym) -> Sym:  # noqa: A002
    check_parts(abs, angle)
    if abs.dtype not in (torch.float32, torch.float64):  # float16 parts: CPU has no ComplexHalf polar
        raise NotImplementedError(f"\"polar_cpu\" not implemented for '{aten_type_name(abs.dtype)}'")
    return make_complex(abs * P.emit1("cosine", [angle]), abs * P.emit1("sine", [angle]))


def complex_abs(x: Sym) -> Sym:
    return P.emit1("hypot", P.broadcast(real(x), imag(x)))


def complex_sgn(x: Sym) -> Sym:
    a = complex_abs(x)
    zero = P.compare("EQ", a, 0.0)
    safe = P.where(zero, P.full(1.0, a.shape, a.dtype), a)
    return make_complex(P.where(zero, P.zeros_like(a), real(x) / safe), P.where(zero, P.zeros_like(a), imag(x) / safe))


def complex32_sgn(x: Sym) -> Sym:
    """sgn of complex32 as CPU's ComplexHalf kernel computes it: z / |z| by c10's complex division in float
    (rat = 0 / |z|, scl = 1 / |z|: an infinite |z| gives NaN parts), each part rounded to float16; 0 for 0."""
    z = P.convert(x, torch.complex64)
    a, b = real(z), imag(z)
    c = complex_abs(z)
    rat = 0.0 / c
    scl = 1.0 / (c + 0.0 * rat)
    q = make_complex((a + b * rat) * scl, (b - a * rat) * scl)
    zero = P.binary("and", P.compare("EQ", a, 0.0), P.compare("EQ", b, 0.0))
    return P.convert(P.where(zero, P.zeros_like(q), q), torch.complex32)


# --- views --------------------------------------------------------------------------------------------------------

_PART = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}
_WHOLE = {v: k for k, v in _PART.items()}


def view_as_real(self: torch.Tensor) -> torch.Tensor:
    if not self.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if self.is_conj():
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To resolve the "
                           "conjugate tensor so you can view it as real, use self.resolve_conj()")
    out = torch.empty(0, dtype=_PART[self.dtype], device=self.device)
    out.set_(self.untyped_storage(), self.storage_offset() * 2, (*self.shape, 2), (*[s * 2 for s in self.stride()], 1))
    return out


def view_as_complex(self: torch.Tensor) -> torch.Tensor:
    if self.dtype not in _WHOLE:
        raise RuntimeError(f"view_as_complex is only supported for half, float and double tensors, but got a "
                           f"tensor of scalar type: {aten_type_name(self.dtype)}")
    # ATen's checks in its order and words (a test matches each message).
    if self.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if self.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if self.stride(-1) != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in self.stride()[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    dtypes.check_storage(_WHOLE[self.dtype], "aten::view_as_complex")
    out = torch.empty(0, dtype=_WHOLE[self.dtype], device=self.device)
    out.set_(self.untyped_storage(), self.storage_offset() // 2, self.shape[:-1], [s // 2 for s in self.stride()[:-1]])
    return out


def _apply_bits(x: Sym, conj_bit: bool, neg_bit: bool, dtype: torch.dtype, shape: tuple[int, ...]) -> Sym:
    if conj_bit:
        x = conj(x)
    if neg_bit:
        x = -x
    return P.broadcast_to(P.convert(x, dtype), shape)  # copy_ broadcasts the source to the target


def copy_from_with_bits(src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    """`_copy_from` when the source or the destination carries a conjugate or negative bit (see the module
    docstring). A destination's bits: its memory must hold their inverse of src (CPU's copy_impl fixes the bits
    up after its copy), so the same bits are toggled on both sides and the plain destination is written."""
    if dst.is_conj() or dst.is_neg():
        plain_src, plain_dst = src, dst
        if dst.is_conj():
            plain_src, plain_dst = plain_src.conj(), plain_dst.conj()
        if dst.is_neg():
            plain_src, plain_dst = aten._neg_view(plain_src), aten._neg_view(plain_dst)
        if plain_src.is_conj() or plain_src.is_neg():
            copy_from_with_bits(plain_src, plain_dst, non_blocking)
        else:
            from torchtpu.ops.copy import copy_from

            copy_from(plain_src, plain_dst, non_blocking)
        return dst
    conj_bit, neg_bit = src.is_conj(), src.is_neg()
    check_copy_shapes(tuple(dst.shape), tuple(src.shape))
    plain = src
    if conj_bit:
        plain = plain.conj()  # toggles the bit off: a plain view of the same memory
    if neg_bit:
        plain = torch.ops.aten._neg_view(plain)
    if plain.device.type == "tpu" and dst.device.type == "tpu":
        eager.run("aten::_copy_from.bits", _apply_bits, (plain,), {"conj_bit": conj_bit, "neg_bit": neg_bit,
                                                                    "dtype": dst.dtype, "shape": tuple(dst.shape)},
                  write_into=[dst])
        return dst
    host = plain.cpu() if plain.device.type == "tpu" else plain.clone()
    if conj_bit:
        host = host.conj_physical()
    if neg_bit:
        host = -host
    dst.copy_(host)
    return dst


# --- FFT ----------------------------------------------------------------------------------------------------------

def _move_last(x: Sym, dims: list[int]) -> tuple[Sym, list[int]]:
    order = [i for i in range(x.ndim) if i not in dims] + dims
    return P.transpose(x, order), order


def _move_back(y: Sym, order: list[int]) -> Sym:
    back = [0] * len(order)
    for pos, i in enumerate(order):
        back[i] = pos
    return P.transpose(y, back)


def _fft_chunks(dims: list[int]) -> list[list[int]]:
    return [dims[i:i + 3] for i in range(0, len(dims), 3)]


def _scale(y: Sym, n: int, normalization: int, forward: bool) -> Sym:
    # ATen's norm_from_int: 0 = none, 1 = 1/sqrt(n), any other value = 1/n. The IR's inverse transforms already
    # divide by n.
    factor = {0: 1.0, 1: 1.0 / math.sqrt(n)}.get(normalization, 1.0 / n)
    if not forward:
        factor *= n
    if factor == 1.0:
        return y
    if y.dtype.is_complex:  # each part scaled by the real factor (a complex product gives inf * 0 = NaN parts)
        return make_complex(real(y) * factor, imag(y) * factor)
    return y * factor


def _c2c(x: Sym, dims: list[int], forward: bool) -> Sym:
    for chunk in _fft_chunks(dims):
        moved, order = _move_last(x, chunk)
        y = P.emit1("fft", [moved], fft_type="FFT" if forward else "IFFT",
                    fft_length=tuple(x.shape[d] for d in chunk))
        x = _move_back(y, order)
    return x


def _prod(x: Sym, dims: list[int]) -> int:
    return math.prod(x.shape[d] for d in dims)


def _check_dtype(x: Sym, complex_input: bool) -> None:
    """ATen's input dtype check of the FFT kernels (c2c and c2r take complex, r2c floating point)."""
    if complex_input and not x.dtype.is_complex:
        raise RuntimeError(f"Only supports complex dtypes, but found: {aten_type_name(x.dtype)}")
    if not complex_input and not x.dtype.is_floating_point:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {aten_type_name(x.dtype)}")


def _check_precision(x: Sym) -> None:
    """CPU's FFT (MKL/pocketfft) has no half-precision kernel; torch.fft's functions refuse half inputs before it."""
    if x.dtype in (torch.float16, torch.bfloat16, torch.complex32):
        part = torch.float16 if x.dtype == torch.complex32 else x.dtype
        raise RuntimeError(f"MKL FFT doesn't support tensors of type: {aten_type_name(part)}")


@lower(aten._fft_c2c.default)
def fft_c2c(self: Sym, dim: list[int], normalization: int, forward: bool) -> Sym:
    _check_dtype(self, complex_input=True)
    dims = [P.canon_dim(d, self.ndim) for d in dim]
    if not dims or self.numel() == 0:
        return self
    _check_precision(self)
    return _scale(_c2c(self, dims, forward), _prod(self, dims), normalization, forward)


@lower(aten._fft_r2c.default)
def fft_r2c(self: Sym, dim: list[int], normalization: int, onesided: bool) -> Sym:
    _check_dtype(self, complex_input=False)
    dims = [P.canon_dim(d, self.ndim) for d in dim]
    _check_precision(self)
    x = P.convert(self, torch.float64 if self.dtype == torch.float64 else torch.float32)
    n = _prod(x, dims)
    if not onesided:
        return _scale(_c2c(make_complex(x, P.zeros_like(x)), dims, True), n, normalization, True)
    last = dims[-1]
    moved, order = _move_last(x, [last])
    y = _move_back(P.emit1("fft", [moved], fft_type="RFFT", fft_length=(x.shape[last],)), order)
    if len(dims) > 1:
        y = _c2c(y, dims[:-1], True)
    return _scale(y, n, normalization, True)


@lower(aten._fft_c2r.default)
def fft_c2r(self: Sym, dim: list[int], normalization: int, last_dim_size: int) -> Sym:
    _check_dtype(self, complex_input=True)
    if last_dim_size < 1:
        raise RuntimeError(f"Invalid number of data points ({last_dim_size}) specified")
    dims = [P.canon_dim(d, self.ndim) for d in dim]
    _check_precision(self)
    given = self.shape[dims[-1]] if dims else 0
    if self.numel() and given not in (last_dim_size // 2 + 1, last_dim_size):
        # torch.fft.irfft/hfft resize the input to last_dim_size // 2 + 1 first; CPU's kernel reads any other size
        # with that size's strides (garbage, an internal assert, or heap corruption: fuzz seed 19)
        raise RuntimeError(f"_fft_c2r: the last transformed dim has {given} elements, but last_dim_size "
                           f"{last_dim_size} takes {last_dim_size // 2 + 1} (CPU's result is undefined otherwise)")
    x = self
    if len(dims) > 1:
        x = _c2c(x, dims[:-1], False)
    last = dims[-1]
    moved, order = _move_last(x, [last])
    keep = last_dim_size // 2 + 1
    if moved.shape[-1] > keep:
        moved = P.slice_dim(moved, moved.ndim - 1, 0, keep)
    elif moved.shape[-1] < keep:
        low, high = [0] * moved.ndim, [0] * moved.ndim
        high[-1] = keep - moved.shape[-1]
        moved = P.emit1("pad", [moved], value=0, low=tuple(low), high=tuple(high), interior=(0,) * moved.ndim)
    y = _move_back(P.emit1("fft", [moved], fft_type="IRFFT", fft_length=(last_dim_size,)), order)
    n = math.prod(y.shape[d] for d in dims)
    return _scale(y, n, normalization, False)


def register(kernel: Any) -> None:
    kernel(aten.view_as_real.default, view_as_real)
    kernel(aten.view_as_complex.default, view_as_complex)
    for key in ("Conjugate", "Negative"):
        kernel(aten._copy_from.default, copy_from_with_bits, key=key)
