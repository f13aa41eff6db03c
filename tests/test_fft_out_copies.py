"""The FFTs' out= kernels copy their result into any out tensor (`out.copy_(result)`: a complex result into a real
out keeps the real part), as CPU's do (fuzz seed 9: tpu refused _fft_r2c.out into a float32 out)."""

import warnings

import pytest
import torch
from refusal_cases import MODES

aten = torch.ops.aten

CASES = {
    "c2c_into_float32": lambda d: aten._fft_c2c.out(torch.arange(3.0, device=d).to(torch.complex64) * (1 + 2j), [0], 0,
                                                    True, out=torch.empty(0, device=d)),
    "r2c_into_int64": lambda d: aten._fft_r2c.out(torch.arange(3.0, device=d) * 2.6, [0], 0, True,
                                                  out=torch.empty(0, dtype=torch.int64, device=d)),
    "r2c_into_float32": lambda d: aten._fft_r2c.out(torch.ones(1, device=d), [0], 0, False,
                                                    out=torch.empty(0, device=d)),
    "r2c_into_float16": lambda d: aten._fft_r2c.out(torch.arange(3.0, device=d), [0], 0, True,
                                                    out=torch.empty(0, dtype=torch.float16, device=d)),
    "c2r_into_complex64": lambda d: aten._fft_c2r.out(torch.arange(3.0, device=d).to(torch.complex64), [0], 0, 4,
                                                      out=torch.empty(0, dtype=torch.complex64, device=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_fft_out_copies_into_any_dtype(case: str, mode: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CPU's copy_ warns that the imaginary part is discarded
        want = CASES[case]("cpu")
        with torch.tpu.eager_mode(mode):
            got = CASES[case]("tpu").cpu()
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-6)
