"""Device-generic tests of tensor mechanisms, after PyTorch's TestViewOps, TestIndexing, TestTypePromotion,
TestTensorCreation, TestReductions, TestSortAndSelect and TestShapeOps: each test runs on `device` and checks
against values computed by hand, numpy or CPU, so the same test is meaningful on CPU and on "tpu"."""

from __future__ import annotations

import numpy as np
import torch
from torch.testing._internal.common_device_type import dtypes
from torch.testing._internal.common_utils import TestCase


class TestViewOps(TestCase):
    def test_view_aliases_base(self, device):
        t = torch.arange(12.0, device=device)
        v = t.view(3, 4)
        v[1, 2] = -1.0
        self.assertEqual(t[6].item(), -1.0)
        self.assertEqual(v.data_ptr(), t.data_ptr())

    def test_transpose_is_view(self, device):
        t = torch.arange(6, device=device).reshape(2, 3)
        tt = t.t()
        self.assertFalse(tt.is_contiguous())
        tt[2, 1] = 100
        self.assertEqual(t[1, 2].item(), 100)

    def test_narrow_and_select_views(self, device):
        t = torch.zeros(4, 5, device=device)
        t.narrow(1, 1, 2).fill_(3.0)
        t.select(0, 3).add_(1.0)
        expected = torch.zeros(4, 5)
        expected[:, 1:3] = 3.0
        expected[3] += 1.0
        self.assertEqual(t.cpu(), expected)

    def test_unfold_view(self, device):
        t = torch.arange(7.0, device=device)
        u = t.unfold(0, 3, 2)
        self.assertEqual(u.cpu(), torch.tensor([[0.0, 1, 2], [2, 3, 4], [4, 5, 6]]))
        self.assertEqual(u.stride(), (2, 1))

    def test_as_strided_overlapping_read(self, device):
        t = torch.arange(5.0, device=device)
        s = t.as_strided((3, 3), (1, 1))
        self.assertEqual(s.cpu(), torch.tensor([[0.0, 1, 2], [1, 2, 3], [2, 3, 4]]))

    def test_view_dtype_bits(self, device):
        t = torch.tensor([1.0, -2.0], device=device)
        self.assertEqual(t.view(torch.int32).cpu(), torch.tensor([1.0, -2.0]).view(torch.int32))

    def test_contiguous_copy_breaks_alias(self, device):
        t = torch.arange(6.0, device=device).reshape(2, 3).t()
        c = t.contiguous()
        c[0, 0] = 42.0
        self.assertEqual(t[0, 0].item(), 0.0)

    def test_expand_write_raises(self, device):
        t = torch.zeros(1, 3, device=device).expand(4, 3)
        with self.assertRaises(RuntimeError):
            t.add_(1.0)

    def test_diagonal_view(self, device):
        t = torch.zeros(3, 3, device=device)
        t.diagonal().copy_(torch.tensor([1.0, 2.0, 3.0], device=device))
        self.assertEqual(t.cpu(), torch.diag(torch.tensor([1.0, 2.0, 3.0])))


class TestIndexing(TestCase):
    def test_basic_slicing(self, device):
        x = torch.arange(24, device=device).reshape(2, 3, 4)
        ref = np.arange(24).reshape(2, 3, 4)
        for idx in ((0,), (slice(None), 1), (..., -1), (1, slice(0, 3, 2), slice(None, None, 3))):
            self.assertEqual(x[idx].cpu().numpy(), ref[idx])

    def test_advanced_int_indexing(self, device):
        x = torch.arange(12.0, device=device).reshape(3, 4)
        idx = torch.tensor([2, 0, -1], device=device)
        self.assertEqual(x[idx].cpu(), torch.arange(12.0).reshape(3, 4)[[2, 0, -1]])
        self.assertEqual(x[idx, idx].cpu(), torch.tensor([10.0, 0.0, 11.0]))

    def test_bool_mask_indexing(self, device):
        x = torch.arange(6.0, device=device)
        self.assertEqual(x[x > 2].cpu(), torch.tensor([3.0, 4.0, 5.0]))
        self.assertEqual(x[torch.zeros(6, dtype=torch.bool, device=device)].shape, (0,))

    def test_index_put_accumulate(self, device):
        x = torch.zeros(5, device=device)
        x.index_put_((torch.tensor([1, 1, 3], device=device),), torch.tensor([1.0, 2.0, 3.0], device=device),
                     accumulate=True)
        self.assertEqual(x.cpu(), torch.tensor([0.0, 3.0, 0.0, 3.0, 0.0]))

    def test_index_out_of_range_raises(self, device):
        x = torch.arange(4.0, device=device)
        with self.assertRaises((IndexError, RuntimeError)):
            x[torch.tensor([4], device=device)].cpu()

    def test_negative_index_out_of_range_raises(self, device):
        x = torch.arange(4.0, device=device)
        with self.assertRaises((IndexError, RuntimeError)):
            x.index_select(0, torch.tensor([-5], device=device)).cpu()

    def test_embedding_negative_index_raises(self, device):
        w = torch.ones(3, 2, device=device)
        with self.assertRaises((IndexError, RuntimeError)):
            torch.nn.functional.embedding(torch.tensor([-1], device=device), w).cpu()

    def test_index_put_cpu_mask(self, device):
        x = torch.zeros(3, device=device)
        x[torch.tensor([True, False, True])] = 1.0
        self.assertEqual(x.cpu(), torch.tensor([1.0, 0.0, 1.0]))

    def test_empty_dim_bool_index(self, device):
        x = torch.zeros(0, 3, device=device)
        self.assertEqual(x[torch.zeros(0, dtype=torch.bool, device=device)].shape, (0, 3))

    def test_gather_scatter(self, device):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
        idx = torch.tensor([[0, 0], [1, 0]], device=device)
        self.assertEqual(torch.gather(x, 1, idx).cpu(), torch.tensor([[1.0, 1.0], [4.0, 3.0]]))
        out = torch.zeros(2, 2, device=device).scatter_(1, idx, x)
        self.assertEqual(out.cpu(), torch.zeros(2, 2).scatter_(1, idx.cpu(), x.cpu()))


class TestTypePromotion(TestCase):
    def test_int_plus_float_scalar(self, device):
        self.assertEqual((torch.ones(2, dtype=torch.int64, device=device) + 1.5).dtype, torch.float32)

    def test_int_tensor_true_divide(self, device):
        r = torch.tensor([3, 4], device=device) / torch.tensor([2, 8], device=device)
        self.assertEqual(r.dtype, torch.float32)
        self.assertEqual(r.cpu(), torch.tensor([1.5, 0.5]))

    def test_zero_dim_does_not_promote(self, device):
        a = torch.ones(3, dtype=torch.float16, device=device)
        b = torch.tensor(2.0, dtype=torch.float32, device=device)
        self.assertEqual((a * b).dtype, torch.float16)

    def test_bool_int_promotion(self, device):
        r = torch.tensor([True, False], device=device) + torch.tensor([1, 2], dtype=torch.int8, device=device)
        self.assertEqual(r.dtype, torch.int8)

    def test_uint8_times_negative_scalar(self, device):
        r = torch.tensor([1, 2], dtype=torch.uint8, device=device) * -1
        self.assertEqual(r.cpu(), torch.tensor([1, 2], dtype=torch.uint8) * -1)

    def test_out_dtype_cast_check(self, device):
        out = torch.empty(2, dtype=torch.int64, device=device)
        with self.assertRaises(RuntimeError):
            torch.add(torch.ones(2, device=device), 1, out=out)

    @dtypes(torch.float32, torch.int32, torch.bfloat16)
    def test_result_type(self, device, dtype):
        t = torch.ones(2, dtype=dtype, device=device)
        self.assertEqual(torch.result_type(t, 1.0), torch.result_type(t.cpu(), 1.0))
        self.assertEqual((t + 1.0).dtype, (t.cpu() + 1.0).dtype)

    def test_cpu_zero_dim_operand(self, device):
        r = torch.ones(3, device=device) * torch.tensor(2.0)
        self.assertEqual(r.device.type, torch.device(device).type)
        self.assertEqual(r.cpu(), torch.full((3,), 2.0))


class TestTensorCreation(TestCase):
    @dtypes(torch.float32, torch.int64, torch.bool)
    def test_zeros_ones_full(self, device, dtype):
        self.assertEqual(torch.zeros(2, 3, dtype=dtype, device=device).cpu(), torch.zeros(2, 3, dtype=dtype))
        self.assertEqual(torch.full((2,), 1, dtype=dtype, device=device).cpu(), torch.ones(2, dtype=dtype))

    def test_arange_linspace(self, device):
        self.assertEqual(torch.arange(0, 1, 0.25, device=device).cpu(), torch.arange(0, 1, 0.25))
        self.assertEqual(torch.linspace(-1, 1, 5, device=device).cpu(), torch.linspace(-1, 1, 5))

    def test_eye_tril(self, device):
        self.assertEqual(torch.eye(3, 4, device=device).cpu(), torch.eye(3, 4))
        self.assertEqual(torch.ones(3, 3, device=device).tril(-1).cpu(), torch.ones(3, 3).tril(-1))

    def test_empty_strided_shape(self, device):
        t = torch.empty_strided((2, 3), (1, 2), device=device)
        self.assertEqual(t.stride(), (1, 2))

    def test_tensor_from_list_dtype(self, device):
        self.assertEqual(torch.tensor([1, 2], device=device).dtype, torch.int64)
        self.assertEqual(torch.tensor([1.0, 2], device=device).dtype, torch.get_default_dtype())

    def test_like_factories_keep_device(self, device):
        t = torch.ones(2, device=device)
        for f in (torch.zeros_like, torch.ones_like, torch.empty_like, torch.rand_like):
            self.assertEqual(f(t).device, t.device)

    def test_nonexistent_device_index_raises(self, device):
        if torch.device(device).type == "cpu":
            return  # CPU has no device index to check
        dev_type = torch.device(device).type
        with self.assertRaises(RuntimeError):
            torch.empty(3, device=f"{dev_type}:{torch.tpu.device_count()}")

    @dtypes(torch.complex128, torch.uint16)
    def test_dtype_roundtrip(self, device, dtype):
        t = torch.ones(2, dtype=dtype)
        try:
            d = t.to(device)
        except (TypeError, RuntimeError) as e:  # a backend may refuse a dtype, with an error naming it
            self.assertIn(str(dtype).removeprefix("torch."), str(e))
            return
        self.assertEqual(d.cpu(), t)


class TestReductions(TestCase):
    @dtypes(torch.float32, torch.int64)
    def test_sum_prod_dims(self, device, dtype):
        x = torch.arange(1, 13, device=device).reshape(3, 4).to(dtype)
        self.assertEqual(x.sum(0).cpu(), x.cpu().sum(0))
        self.assertEqual(x.prod(1).cpu(), x.cpu().prod(1))
        self.assertEqual(x.sum((0, 1)).item(), 78)

    def test_mean_var_std(self, device):
        x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 6.0, 8.0]], device=device)
        self.assertEqual(x.mean(1).cpu(), torch.tensor([2.0, 6.0]))
        self.assertEqual(x.var(1).cpu(), torch.tensor([1.0, 4.0]))
        self.assertEqual(x.std(1, correction=0).cpu(), x.cpu().std(1, correction=0))

    def test_complex_mean(self, device):
        x = torch.tensor([1 + 2j, 3 + 4j], device=device)
        self.assertEqual(x.mean().cpu(), torch.tensor(2 + 3j))

    def test_complex_var_is_real(self, device):
        x = torch.tensor([1 + 2j, 3 + 4j, -1j], device=device)
        v = x.var()
        self.assertEqual(v.dtype, torch.float32)
        self.assertEqual(v.cpu(), x.cpu().var())

    def test_empty_reductions(self, device):
        e = torch.zeros(0, 3, device=device)
        self.assertEqual(e.sum(0).cpu(), torch.zeros(3))
        self.assertEqual(e.prod(0).cpu(), torch.ones(3))
        with self.assertRaises((RuntimeError, IndexError)):
            e.amax(0)

    def test_nan_propagation(self, device):
        x = torch.tensor([1.0, float("nan"), 3.0], device=device)
        self.assertTrue(x.max().isnan().item())
        self.assertTrue(x.sum().isnan().item())
        self.assertEqual(x.nansum().item(), 4.0)

    def test_argmax_first_occurrence(self, device):
        x = torch.tensor([1, 3, 3, 2], device=device)
        self.assertEqual(x.argmax().item(), 1)

    def test_all_any_logsumexp(self, device):
        x = torch.tensor([[0.0, 1.0], [2.0, 3.0]], device=device)
        self.assertFalse(x.all().item())
        self.assertTrue(x.any(1).all().item())
        self.assertEqual(x.logsumexp(1).cpu(), x.cpu().logsumexp(1))


class TestSortAndSelect(TestCase):
    def test_sort_stable(self, device):
        x = torch.tensor([3, 1, 2, 1, 3], device=device)
        v, i = x.sort(stable=True)
        self.assertEqual(v.cpu(), torch.tensor([1, 1, 2, 3, 3]))
        self.assertEqual(i.cpu(), torch.tensor([1, 3, 2, 0, 4]))

    def test_sort_nan_last(self, device):
        x = torch.tensor([2.0, float("nan"), -1.0], device=device)
        v, _ = x.sort()
        self.assertEqual(v[:2].cpu(), torch.tensor([-1.0, 2.0]))
        self.assertTrue(v[2].isnan().item())
        v, _ = x.sort(descending=True)
        self.assertTrue(v[0].isnan().item())

    def test_topk_kthvalue(self, device):
        x = torch.tensor([5.0, 1.0, 4.0, 2.0], device=device)
        self.assertEqual(x.topk(2).values.cpu(), torch.tensor([5.0, 4.0]))
        self.assertEqual(x.kthvalue(2).values.item(), 2.0)

    def test_topk_k_too_large_raises(self, device):
        with self.assertRaises(RuntimeError):
            torch.ones(3, device=device).topk(4)

    def test_unique_and_searchsorted(self, device):
        x = torch.tensor([3, 1, 3, 2], device=device)
        self.assertEqual(torch.unique(x).cpu(), torch.tensor([1, 2, 3]))
        edges = torch.tensor([1.0, 2.0, 3.0], device=device)
        self.assertEqual(torch.searchsorted(edges, torch.tensor([0.5, 2.0, 9.0], device=device)).cpu(),
                         torch.tensor([0, 1, 3]))

    def test_msort_argsort_2d(self, device):
        x = torch.tensor([[3.0, 1.0], [0.0, 2.0]], device=device)
        self.assertEqual(x.argsort(dim=0).cpu(), torch.tensor([[1, 0], [0, 1]]))


class TestShapeOps(TestCase):
    def test_cat_stack(self, device):
        a, b = torch.ones(2, 3, device=device), torch.zeros(1, 3, device=device)
        self.assertEqual(torch.cat([a, b]).shape, (3, 3))
        self.assertEqual(torch.stack([a, a], 2).shape, (2, 3, 2))

    def test_cat_empty_legacy(self, device):
        a = torch.ones(2, 3, device=device)
        self.assertEqual(torch.cat([a, torch.empty(0, device=device)]).cpu(), torch.ones(2, 3))

    def test_dstack_hstack_vstack(self, device):
        a, b = torch.arange(3.0, device=device), torch.arange(3.0, 6.0, device=device)
        self.assertEqual(torch.dstack([a, b]).cpu(), torch.dstack([a.cpu(), b.cpu()]))
        self.assertEqual(torch.hstack([a, b]).cpu(), torch.hstack([a.cpu(), b.cpu()]))
        self.assertEqual(torch.vstack([a, b]).cpu(), torch.vstack([a.cpu(), b.cpu()]))

    def test_flip_roll_rot90(self, device):
        x = torch.arange(6, device=device).reshape(2, 3)
        c = x.cpu()
        self.assertEqual(x.flip(1).cpu(), c.flip(1))
        self.assertEqual(x.roll(1, 1).cpu(), c.roll(1, 1))
        self.assertEqual(torch.rot90(x).cpu(), torch.rot90(c))

    def test_split_chunk_unbind(self, device):
        x = torch.arange(10, device=device)
        self.assertEqual([t.tolist() for t in x.split([3, 7])], [list(range(3)), list(range(3, 10))])
        self.assertEqual(len(x.chunk(3)), 3)
        self.assertEqual(x.reshape(2, 5).unbind(0)[1].tolist(), list(range(5, 10)))

    def test_many_dims(self, device):
        x = torch.ones([1] * 70, device=device)
        self.assertEqual((x + 1).sum().item(), 2.0)

    def test_movedim_squeeze(self, device):
        x = torch.zeros(2, 1, 3, device=device)
        self.assertEqual(x.squeeze().shape, (2, 3))
        self.assertEqual(torch.movedim(x, 0, -1).shape, (1, 3, 2))

    def test_int_division_by_zero(self, device):
        a = torch.tensor([4, -4], device=device)
        with self.assertRaises(RuntimeError):
            (a // torch.zeros(2, dtype=torch.int64, device=device)).cpu()
