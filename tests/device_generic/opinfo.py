"""An `@ops(op_db)` device-generic class (after PyTorch's TestCommon): each selected OpInfo's sample inputs run
on `device` in float32 and are compared with the same samples run on CPU in float64 (so the test means the same
on CPU, whose float32 kernels it then checks against float64, as on "tpu")."""

from __future__ import annotations

import torch
from torch.testing._internal.common_device_type import ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase
from torch.utils._pytree import tree_map

SELECTED = (
    "add", "mul", "div", "floor_divide", "remainder", "pow", "where", "masked_fill", "clamp", "abs", "exp", "log",
    "sum", "mean", "var", "amax", "prod", "cumsum", "logsumexp", "sort", "topk", "argmax",
    "cat", "stack", "flip", "roll", "permute", "reshape", "transpose", "index_select", "gather", "scatter", "take",
    "index_put", "index_add", "masked_select", "matmul", "mm", "bmm", "nn.functional.relu", "softmax",
    "log_softmax", "nn.functional.conv2d", "nn.functional.layer_norm", "nn.functional.embedding",
    "nn.functional.avg_pool2d", "nn.functional.max_pool2d", "nn.functional.cross_entropy", "nn.functional.gelu",
)
OPS = [op for op in op_db if op.name in SELECTED and not op.variant_test_name]


def _wide(x):
    if isinstance(x, torch.Tensor):
        x = x.detach().to("cpu")
        return x.double() if x.dtype == torch.float32 else x
    return x


def _on(device):
    def move(x):
        return x.to(device) if isinstance(x, torch.Tensor) and x.device.type == "cpu" else x
    return move


class TestCommonDevice(TestCase):
    @ops(OPS, allowed_dtypes=(torch.float32,))
    def test_samples_match_float64_cpu(self, device, dtype, op):
        torch.manual_seed(0)
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:6]
        self.assertTrue(samples)
        for sample in samples:
            args = tree_map(_on(device), (sample.input, *sample.args))
            kwargs = tree_map(_on(device), sample.kwargs)
            if torch.device(device).type == "tpu":
                with torch.tpu.precision("HIGHEST"):
                    got = op(*args, **kwargs)
            else:
                got = op(*args, **kwargs)
            want = op(*tree_map(_wide, (sample.input, *sample.args)), **tree_map(_wide, sample.kwargs))
            got = tree_map(lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x, got)
            want = tree_map(lambda x: x.float() if isinstance(x, torch.Tensor) and x.dtype == torch.float64
                            else x, want)
            if op.name in ("sort", "topk", "argmax"):  # index outputs may pick other equal elements
                got, want = (got[0], want[0]) if isinstance(got, tuple) else (got.shape, want.shape)
            self.assertEqual(got, want, atol=1e-4, rtol=1e-4, exact_device=False)
