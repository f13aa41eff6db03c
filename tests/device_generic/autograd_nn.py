"""Device-generic autograd and nn tests, after PyTorch's TestAutogradDeviceType and TestNNDeviceType: gradients
and module outputs on `device` checked against the same computation on CPU (or by hand)."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch.testing._internal.common_utils import TestCase


def _grads(fn, *inputs):
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    fn(*leaves).sum().backward()
    return [x.grad for x in leaves]


class TestAutogradDeviceType(TestCase):
    def _check(self, device, fn, *shapes):
        gen = torch.Generator().manual_seed(0)
        cpu = [torch.randn(*s, generator=gen) for s in shapes]
        with torch.tpu.precision("HIGHEST") if torch.device(device).type == "tpu" else _null():
            got = _grads(fn, *[x.to(device) for x in cpu])
        want = _grads(fn, *cpu)
        for g, w in zip(got, want):
            self.assertEqual(g.cpu(), w, atol=1e-4, rtol=1e-4)

    def test_elementwise_chain(self, device):
        self._check(device, lambda x, y: (x * y).sin() + x.exp() / (1 + y * y), (3, 4), (3, 4))

    def test_matmul_broadcast(self, device):
        self._check(device, lambda a, b: a @ b, (2, 3, 4), (4, 5))

    def test_reductions_grad(self, device):
        self._check(device, lambda x: x.amax(1) + x.logsumexp(0).sum() + x.var(1), (4, 5))

    def test_index_grad_accumulates(self, device):
        idx = torch.tensor([0, 2, 0])
        self._check(device, lambda x: x[idx.to(x.device)] * 2.0, (3, 2))

    def test_batchnorm_grad(self, device):
        self._check(device, lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (4, 3, 2), (3,), (3,))

    def test_layer_norm_grad(self, device):
        self._check(device, lambda x, w: F.layer_norm(x, (5,), w), (3, 5), (5,))

    def test_conv2d_grad(self, device):
        self._check(device, lambda x, w: F.conv2d(x, w, padding=1), (1, 2, 5, 5), (3, 2, 3, 3))

    def test_gru_cell_grad(self, device):
        cell = torch.nn.GRUCell(3, 4)
        params = [p.detach() for p in cell.parameters()]

        def fn(x, h, w_ih, w_hh, b_ih, b_hh):
            return torch._VF.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)

        self._check(device, fn, (2, 3), (2, 4), *[tuple(p.shape) for p in params])

    def test_lstm_cell_grad(self, device):
        def fn(x, h, c, w_ih, w_hh, b_ih, b_hh):
            hy, cy = torch._VF.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
            return hy + cy

        self._check(device, fn, (2, 3), (2, 4), (2, 4), (16, 3), (16, 4), (16,), (16,))

    def test_grad_of_inplace_on_view(self, device):
        def fn(x):
            y = x * 1.0
            y[:, 0].mul_(3.0)
            return y

        self._check(device, fn, (3, 2))

    def test_no_grad_leaves_requires_grad_false(self, device):
        x = torch.ones(2, device=device, requires_grad=True)
        with torch.no_grad():
            y = x * 2
        self.assertFalse(y.requires_grad)


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class TestNNDeviceType(TestCase):
    def _same(self, device, module, *shapes, atol=1e-4):
        gen = torch.Generator().manual_seed(1)
        cpu_in = [torch.randn(*s, generator=gen) for s in shapes]
        torch.manual_seed(0)
        ref = module().eval()
        dev = copy.deepcopy(ref).to(device)
        with torch.tpu.precision("HIGHEST") if torch.device(device).type == "tpu" else _null():
            got = dev(*[x.to(device) for x in cpu_in])
        want = ref(*cpu_in)
        self.assertEqual(got.cpu() if isinstance(got, torch.Tensor) else got[0].cpu(),
                         want if isinstance(want, torch.Tensor) else want[0], atol=atol, rtol=1e-4)

    def test_linear_relu(self, device):
        self._same(device, lambda: torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), (2, 4))

    def test_relu_nan(self, device):
        x = torch.tensor([float("nan"), -1.0, 2.0], device=device)
        r = F.relu(x).cpu()
        self.assertTrue(r[0].isnan().item())
        self.assertEqual(r[1:], torch.tensor([0.0, 2.0]))

    def test_conv_bn_eval(self, device):
        self._same(device, lambda: torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3)),
                   (1, 2, 6, 6))

    def test_interpolate_nearest_nan(self, device):
        x = torch.ones(1, 1, 4, 4, device=device)
        x[0, 0, 0, 0] = float("nan")
        r = F.interpolate(x, scale_factor=2, mode="nearest").cpu()
        self.assertEqual(int(r.isnan().sum()), 4)

    def test_avg_pool_inf_window(self, device):
        x = torch.zeros(1, 1, 1, 4, device=device)
        x[..., 0] = float("inf")
        r = F.avg_pool2d(x, (1, 2)).cpu()
        self.assertEqual(r.flatten().tolist(), [float("inf"), 0.0])

    def test_bilinear_channels_last(self, device):
        x = torch.randn(1, 3, 4, 5).to(device)
        a = F.interpolate(x, scale_factor=2, mode="bilinear")
        b = F.interpolate(x.to(memory_format=torch.channels_last), scale_factor=2, mode="bilinear")
        self.assertEqual(a.cpu(), b.cpu(), atol=1e-5, rtol=1e-5)

    def test_embedding_padding_idx(self, device):
        w = torch.randn(5, 3, requires_grad=True)
        idx = torch.tensor([[0, 4], [2, 0]])
        wd = w.detach().to(device).requires_grad_(True)
        F.embedding(idx.to(device), wd, padding_idx=0).sum().backward()
        F.embedding(idx, w, padding_idx=0).sum().backward()
        self.assertEqual(wd.grad.cpu(), w.grad)
        self.assertEqual(wd.grad[0].abs().sum().item(), 0.0)

    def test_cross_entropy_ignore_index(self, device):
        logits = torch.randn(4, 3)
        target = torch.tensor([0, -100, 2, 1])
        want = F.cross_entropy(logits, target)
        got = F.cross_entropy(logits.to(device), target.to(device))
        self.assertEqual(got.cpu(), want, atol=1e-5, rtol=1e-5)

    def test_nll_loss_negative_target_raises(self, device):
        with self.assertRaises((IndexError, RuntimeError)):
            F.nll_loss(torch.randn(2, 3, device=device), torch.tensor([0, -1], device=device)).item()

    def test_multihead_attention(self, device):
        self._same(device, lambda: torch.nn.MultiheadAttention(4, 2, batch_first=True), (2, 3, 4), (2, 3, 4),
                   (2, 3, 4))

    def test_lstm_module(self, device):
        self._same(device, lambda: torch.nn.LSTM(3, 4, batch_first=True), (2, 5, 3))

    def test_group_norm_and_dropout_eval(self, device):
        self._same(device, lambda: torch.nn.Sequential(torch.nn.GroupNorm(2, 4), torch.nn.Dropout(0.5)),
                   (2, 4, 3))
