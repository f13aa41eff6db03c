"""TorchRec on "tpu", unmodified: fbgemm's jagged operators (ops/jagged.py) against fbgemm's CPU kernels,
EmbeddingBagCollection / EmbeddingCollection over KeyedJaggedTensor forward and backward, a DLRM training step in
every eager mode against CPU, and bad KJTs raising as CPU does (or as the index checks do where fbgemm's CPU
kernel reads out of bounds). Every test asserts zero CPU fallbacks."""

from __future__ import annotations

import copy

import pytest
import torch
from torchrec.models.dlrm import DLRM
from torchrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig, PoolingType
from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection
from torchrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor

import torchtpu

torch.ops.import_module("torchrec.experimental.torch_tpu.pallas.ops")  # defines the torchrec:: lookups
F, R = torch.ops.fbgemm, torch.ops.torchrec
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _driver() -> str:
    from torchtpu.runtime import driver_name_from_env

    return driver_name_from_env()


def _i32(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int32)


def _to(x, device):
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, list) and x and isinstance(x[0], torch.Tensor):
        return [t.to(device) for t in x]
    return x


_L = torch.tensor([[1, 2], [0, 1], [2, 0]])
_V = torch.arange(6)
_W = torch.randn(10, 16, generator=torch.Generator().manual_seed(0))
_G6 = torch.randn(6, 16, generator=torch.Generator().manual_seed(1))
OP_CASES = {
    "complete_cumsum_i32": (F.asynchronous_complete_cumsum, (_i32(1, 2, 3),)),
    "complete_cumsum_2d": (F.asynchronous_complete_cumsum, (torch.tensor([[1, 2], [3, 4]]),)),
    "exclusive_cumsum_2d": (F.asynchronous_exclusive_cumsum, (torch.tensor([[1, 2], [3, 4]]),)),
    "exclusive_cumsum_0d": (F.asynchronous_exclusive_cumsum, (torch.tensor(3),)),
    "inclusive_cumsum_3d": (F.asynchronous_inclusive_cumsum, (torch.arange(8).reshape(2, 2, 2),)),
    "segment_sum_csr_f32": (F.segment_sum_csr, (2, torch.tensor([0, 1, 3]), torch.arange(6.0))),
    "segment_sum_csr_i64": (F.segment_sum_csr, (2, _i32(0, 1, 3), torch.arange(6))),
    "padded_dense_1d": (F.jagged_to_padded_dense_forward, (torch.arange(7.0), [torch.tensor([0, 2, 2, 7])], [4], 0.5)),
    "padded_dense_2d": (F.jagged_to_padded_dense_forward,
                        (torch.arange(14.0).reshape(7, 2), [torch.tensor([0, 2, 2, 7])], [3], -1.0)),
    "padded_dense_nested": (F.jagged_to_padded_dense_forward, (torch.arange(6.0).reshape(6, 1),
                            [torch.tensor([0, 2, 3]), torch.tensor([0, 1, 3, 6])], [2, 3], 0.0)),
    "padded_dense_backward": (F.jagged_to_padded_dense_backward,
                              (torch.arange(12.0).reshape(3, 4), [torch.tensor([0, 2, 2, 7])], 7)),
    "padded_dense_backward_nested": (F.jagged_to_padded_dense_backward, (torch.arange(12.0).reshape(2, 2, 3, 1),
                                     [torch.tensor([0, 2, 3]), torch.tensor([0, 1, 3, 6])], 6)),
    "permute_2d_repeat_weights": (F.permute_2D_sparse_data, (_i32(2, 0, 2), _L, _V, torch.arange(6.0), None)),
    "permute_2d_given_sum": (F.permute_2D_sparse_data, (_i32(1, 0), _L.int(), _V.int(), None, 4)),
    "permute_2d_flat_values": (F.permute_2D_sparse_data, (_i32(2, 0), _L, _V.reshape(3, 2), None, None)),
    "permute_2d_empty": (F.permute_2D_sparse_data, (_i32(), _L, _V, None, None)),
    "permute_1d": (F.permute_1D_sparse_data, (_i32(2, 0, 2, 5), _L.flatten(), _V, torch.arange(6.0), None)),
    "invert_permute_i32": (F.invert_permute, (_i32(2, 0, 3, 1),)),
    "invert_permute_i64": (F.invert_permute, (torch.tensor([1, 0]),)),
    "invert_permute_empty": (F.invert_permute, (torch.tensor([], dtype=torch.int64),)),
    "permute_pooled_embs": (F.permute_pooled_embs, (torch.arange(20.0).reshape(4, 5), torch.tensor([0, 2, 4, 5]),
                            torch.tensor([2, 0, 1]), torch.tensor([0, 1, 3, 5]), torch.tensor([1, 2, 0]))),
    "block_bucketize_pos_sequence_weights": (F.block_bucketize_sparse_features, (
        _i32(2, 1, 0, 3), _i32(5, 1, 7, 3, 9, 2), True, True, _i32(4, 3), 2, torch.arange(6.0))),
    "block_bucketize_3_buckets": (F.block_bucketize_sparse_features, (
        torch.tensor([3, 0, 2, 4, 1, 1]), torch.tensor([0, 29, 7, 14, 3, 8, 21, 6, 2, 11, 5]), False, False,
        torch.tensor([7, 3, 5]), 3)),
    "torchrec_lookup": (R.embedding_lookup, (_i32(1, 9, 3, 3, 0, -2), _W, 16)),
    "torchrec_lookup_backward": (R.embedding_lookup_backward, (_G6, _i32(1, 9, 3, 3, 0, 7), 10, 16)),
    "torchrec_pooled_lookup": (R.embedding_pooled_lookup, (_i32(1, 9, 3, 3, 0, 7), _W, 3)),
    "torchrec_pooled_lookup_backward": (R.embedding_pooled_lookup_backward, (_G6[:2], _i32(1, 9, 3, 3, 0, 7), 3,
                                                                             10, 16)),
    "torchrec_offset_lookup": (R.embedding_pooled_lookup_offset, (_i32(1, 9, 3, 3, 0, 7), _i32(0, 2, 2, 6), _W, 16)),
    "torchrec_offset_lookup_backward": (R.embedding_pooled_lookup_offset_backward, (
        _G6[:3], _i32(1, 9, 3, 3, 0, 7), _i32(0, 2, 2, 6), 10, 16)),
    "torchrec_batched_lookup": (R.embedding_pooled_batched_lookup_offset, (
        _i32(1, 5, 3, 3, 0, 2), _i32(0, 2, 2, 6), _W, _i32(0, 2, 4), 16)),
    "torchrec_batched_lookup_backward": (R.embedding_pooled_batched_lookup_offset_backward, (
        _G6[:3], _i32(1, 5, 3, 3, 0, 2), _i32(0, 2, 2, 6), _i32(0, 2, 4), 10, 16)),
    "torchrec_permute_pooled_embs": (R.permute_pooled_embs, (_G6[:4, :5], torch.tensor([0, 2, 4, 5]),
                                                             torch.tensor([2, 0, 1]))),
    "torchrec_permute_pooled_embs_backward": (R.permute_pooled_embs_backward, (
        _G6[:4, :5], torch.tensor([0, 2, 4, 5]), torch.tensor([2, 0, 1]))),
}


@pytest.mark.parametrize("case", list(OP_CASES))
def test_fbgemm_op_matches_cpu(tpu, case):
    op, args = OP_CASES[case]
    want = op(*args)
    got = op(*[_to(a, tpu) for a in args])
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g in zip(want, got, strict=True):
        if w is None:
            assert g is None
            continue
        assert g.device.type == "tpu" and g.dtype == w.dtype and g.shape == w.shape
        assert torch.equal(g.cpu(), w), (case, w, g)
    assert torchtpu.fallback_counts() == {}


def _kjt(device, weighted: bool = False) -> KeyedJaggedTensor:
    g = torch.Generator().manual_seed(0)
    lengths = torch.tensor([2, 1, 0, 3, 1, 2, 2, 0, 1, 1, 0, 2])
    values = torch.randint(0, 10, (int(lengths.sum()),), generator=g)
    weights = torch.rand(values.shape, generator=g) if weighted else None
    kjt = KeyedJaggedTensor(keys=["f0", "f1", "f2"], values=values, lengths=lengths, weights=weights)
    return kjt.to(device)


def _bag_tables(weighted: bool = False) -> list[EmbeddingBagConfig]:
    return [EmbeddingBagConfig(name="t0", embedding_dim=4, num_embeddings=10, feature_names=["f0", "f2"]),
            EmbeddingBagConfig(name="t1", embedding_dim=8, num_embeddings=10, feature_names=["f1"],
                               pooling=PoolingType.SUM if weighted else PoolingType.MEAN)]


def _grads(module) -> dict[str, torch.Tensor]:
    return {n: p.grad.cpu() for n, p in module.named_parameters()}


@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_bag_collection_matches_cpu(tpu, weighted):
    torch.manual_seed(0)
    cpu = EmbeddingBagCollection(tables=_bag_tables(weighted), is_weighted=weighted)
    dev = copy.deepcopy(cpu).to(tpu)
    outs = []
    for module, device in ((cpu, "cpu"), (dev, tpu)):
        kt = module(_kjt(device, weighted))
        (kt.values() * torch.linspace(-1, 1, kt.values().shape[1], device=device)).sum().backward()
        outs.append(kt)
    assert outs[1].keys() == outs[0].keys()
    torch.testing.assert_close(outs[1].values().cpu(), outs[0].values(), rtol=1e-6, atol=1e-6)
    for name, grad in _grads(cpu).items():
        torch.testing.assert_close(_grads(dev)[name], grad, rtol=1e-6, atol=1e-6)
    assert torchtpu.fallback_counts() == {}


def test_embedding_collection_and_kjt_ops_match_cpu(tpu):
    torch.manual_seed(0)
    tables = [EmbeddingConfig(name="t0", embedding_dim=4, num_embeddings=10, feature_names=["f0", "f1", "f2"])]
    cpu = EmbeddingCollection(tables=tables)
    dev = copy.deepcopy(cpu).to(tpu)
    results = []
    for module, device in ((cpu, "cpu"), (dev, tpu)):
        kjt = _kjt(device, weighted=True)
        permuted = kjt.permute([2, 0, 2])  # a repeated feature: the output size is read from the lengths
        jagged = module(kjt.permute([2, 0, 1]))
        padded = [jt.to_padded_dense(3) for jt in jagged.values()]
        sum(p.sum() * (i + 1) for i, p in enumerate(padded)).backward()
        dense = JaggedTensor(values=torch.arange(12.0, device=device).reshape(6, 2),
                             lengths=torch.tensor([1, 0, 3, 2], device=device)).to_padded_dense()
        pooled = torch.arange(20.0, device=device).reshape(4, 5).requires_grad_()
        regrouped = KeyedTensor.regroup([KeyedTensor(keys=["a", "b"], length_per_key=[2, 3], values=pooled)],
                                        [["b"], ["a"]])  # fbgemm's permute_pooled_embs, forward and backward
        (regrouped[0].sum() + 2 * regrouped[1].sum()).backward()
        results.append([permuted.values(), permuted.lengths(), permuted.weights(), permuted.offsets(),
                        *padded, dense, *kjt.split([1, 2])[1].values()[None], *regrouped, pooled.grad])
    for want, got in zip(*results, strict=True):
        assert got.device.type == "tpu"
        torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(_grads(dev)["embeddings.t0.weight"], _grads(cpu)["embeddings.t0.weight"])
    assert torchtpu.fallback_counts() == {}


def _dlrm() -> DLRM:
    torch.manual_seed(0)
    tables = [EmbeddingBagConfig(name=f"t{i}", embedding_dim=8, num_embeddings=20, feature_names=[f"f{i}"])
              for i in range(3)]
    return DLRM(embedding_bag_collection=EmbeddingBagCollection(tables=tables), dense_in_features=5,
                dense_arch_layer_sizes=[16, 8], over_arch_layer_sizes=[16, 1])


def _dlrm_steps(model: DLRM, device, steps: int = 3) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(steps):
        g = torch.Generator().manual_seed(step)
        lengths = torch.randint(0, 3, (12,), generator=g)
        kjt = KeyedJaggedTensor.from_lengths_sync(keys=["f0", "f1", "f2"], lengths=lengths,
                                                  values=torch.randint(0, 20, (int(lengths.sum()),), generator=g))
        dense, labels = torch.rand(4, 5, generator=g), torch.randint(0, 2, (4,), generator=g).float()
        logits = model(dense.to(device), kjt.to(device)).squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("mode", MODES)
def test_dlrm_training_matches_cpu(tpu, mode):
    cpu = _dlrm()
    dev = copy.deepcopy(cpu).to(tpu)
    want = _dlrm_steps(cpu, "cpu")
    with torchtpu.eager_mode(mode), torchtpu.precision("HIGHEST"):
        got = _dlrm_steps(dev, tpu)
    assert got == pytest.approx(want, rel=1e-5)
    for (name, p), q in zip(cpu.state_dict().items(), dev.state_dict().values(), strict=True):
        torch.testing.assert_close(q.cpu(), p, rtol=1e-5, atol=1e-6, msg=name)
    assert torchtpu.fallback_counts() == {}


# --- bad input: raises as CPU does, or (where fbgemm's CPU kernel reads out of bounds) as the index checks do ----

def _ebc_and_ec():
    torch.manual_seed(0)
    ebc = EmbeddingBagCollection(tables=[EmbeddingBagConfig(name="t", embedding_dim=4, num_embeddings=10,
                                                            feature_names=["f1", "f2"])])
    ec = EmbeddingCollection(tables=[EmbeddingConfig(name="t", embedding_dim=4, num_embeddings=10,
                                                     feature_names=["f1", "f2"])])
    return ebc, ec


BAD_KJTS = {  # name: (values, lengths, the error CPU raises for EBC, for EC)
    "values_shorter_than_lengths": ([1, 2, 3], [2, 1, 0, 2], (RuntimeError, "split_with_sizes"),
                                    (RuntimeError, "split_with_sizes")),
    "values_longer_than_lengths": ([1, 2, 3, 4, 5, 6], [2, 1, 0, 2], (RuntimeError, "split_with_sizes"),
                                   (RuntimeError, "split_with_sizes")),
    "lengths_not_a_multiple_of_keys": ([1, 2, 3, 4, 5], [2, 1, 2], (RuntimeError, "is invalid for input of size"),
                                       (RuntimeError, "is invalid for input of size")),
    "id_past_the_table": ([1, 10, 3, 4, 5], [2, 1, 0, 2], (RuntimeError, "not in the valid range \\[0, 10\\)"),
                          (IndexError, "out of range")),
    "negative_id": ([1, -1, 3, 4, 5], [2, 1, 0, 2], (RuntimeError, "not in the valid range \\[0, 10\\)"),
                    (IndexError, "out of range")),
}


@pytest.mark.parametrize("case", list(BAD_KJTS))
def test_bad_kjt_raises_as_cpu_and_leaves_the_module_usable(tpu, case):
    values, lengths, bag_error, seq_error = BAD_KJTS[case]
    ebc, ec = _ebc_and_ec()
    dev_ebc, dev_ec = copy.deepcopy(ebc).to(tpu), copy.deepcopy(ec).to(tpu)
    for cpu_module, dev_module, (error, words) in ((ebc, dev_ebc, bag_error), (ec, dev_ec, seq_error)):
        for module, device in ((cpu_module, "cpu"), (dev_module, tpu)):
            kjt = KeyedJaggedTensor(keys=["f1", "f2"], values=torch.tensor(values, device=device),
                                    lengths=torch.tensor(lengths, device=device))
            # a check that fails in a deferred region (DEFER_AND_FUSE, every pjrt launch) raises a RuntimeError
            # naming the op, with CPU's words
            deferred = device != "cpu" and (_driver() != "sim" or
                                            torchtpu.get_eager_mode() is torchtpu.EagerMode.DEFER_AND_FUSE)
            with pytest.raises(RuntimeError if deferred else error, match=words):
                out = module(kjt)
                torch.tpu.synchronize()
                _ = out.values().cpu() if hasattr(out, "keys") and callable(out.keys) else out
        def good(device):
            return KeyedJaggedTensor(keys=["f1", "f2"], values=torch.tensor([1, 2, 3, 4, 5], device=device),
                                     lengths=torch.tensor([2, 1, 0, 2], device=device))

        want, got = cpu_module(good("cpu")), dev_module(good(tpu))
        want = want.values() if isinstance(cpu_module, EmbeddingBagCollection) else want["f2"].values()
        got = got.values() if isinstance(dev_module, EmbeddingBagCollection) else got["f2"].values()
        torch.testing.assert_close(got.cpu(), want)
    assert torchtpu.fallback_counts() == {}


@pytest.mark.parametrize("mode", ["DEFER_NEVER", "DEFER_AND_FUSE"])
def test_bad_jagged_inputs_raise_where_fbgemm_cpu_reads_out_of_bounds(tpu, mode):
    lengths = torch.tensor([[1, 2], [0, 1], [2, 0]], device=tpu)
    values = torch.arange(6, device=tpu)
    with torchtpu.eager_mode(mode):
        with pytest.raises(RuntimeError, match=r"permute holds 3, not a feature in \[0, 3\)"):
            F.permute_2D_sparse_data(_i32(3, 0).to(tpu), lengths, values, None, None)[1].cpu()
        with pytest.raises(RuntimeError, match=r"the lengths address value [45], but values has 3 entries"):
            F.permute_2D_sparse_data(_i32(2, 0).to(tpu), lengths, values[:3], None, None)[1].cpu()
        with pytest.raises(RuntimeError, match="permuted_lengths_sum=3 differs from the sum of the permuted "
                                               "segments by 1"):
            F.permute_2D_sparse_data(_i32(1, 0).to(tpu), lengths, values, None, 3)[1].cpu()
        with pytest.raises(RuntimeError, match=r"invert_permute\(\): permute holds 5, not a position in \[0, 3\)"):
            F.invert_permute(_i32(0, 5, 1).to(tpu)).cpu()
        with pytest.raises(RuntimeError, match="offsets\\[0\\] holds 9, past the 5 rows it indexes"):
            JaggedTensor(values=torch.arange(5.0, device=tpu), offsets=torch.tensor([0, 2, 9], device=tpu)
                         ).to_padded_dense(4).cpu()
        with pytest.raises(RuntimeError, match="offsets\\[0\\] must be nondecreasing; it has a length of -2"):
            F.jagged_to_padded_dense_forward(torch.arange(5.0, device=tpu), [torch.tensor([0, 3, 1], device=tpu)],
                                             [4], 0.0).cpu()
        with pytest.raises(RuntimeError, match="csr_seg \\* batch_size reaches 8, past the 6 values"):
            F.segment_sum_csr(2, torch.tensor([0, 1, 4], device=tpu), torch.arange(6.0, device=tpu)).cpu()
        with pytest.raises(RuntimeError, match="the width of pooled_embs=5 differs from the sum of the permuted "
                                               "segments by -1"):  # a repeated segment: CPU narrows the output
            F.permute_pooled_embs(*[t.to(tpu) for t in (torch.ones(4, 5), torch.tensor([0, 2, 4, 5]),
                                  torch.tensor([2, 0, 2]), torch.tensor([0, 1, 3, 5]), torch.tensor([1, 2, 0]))]).cpu()
        # CPU's class and words (a region that fails in DEFER_AND_FUSE raises a RuntimeError naming the op)
        error = IndexError if mode == "DEFER_NEVER" and _driver() == "sim" else RuntimeError
        with pytest.raises(error, match="index 12 is out of bounds for dimension 0 with size 10"):
            R.embedding_pooled_lookup_offset(_i32(1, 12).to(tpu), _i32(0, 2).to(tpu), _W.to(tpu), 16).cpu()
        with pytest.raises(RuntimeError, match="the offsets' bags hold more or fewer ids than the 2 given, by 1"):
            R.embedding_pooled_lookup_offset(_i32(1, 2).to(tpu), _i32(0, 3).to(tpu), _W.to(tpu), 16).cpu()
        with pytest.raises(RuntimeError, match="the lengths' total differs from the 3 indices by 1"):
            F.block_bucketize_sparse_features(_i32(2, 2).to(tpu), _i32(1, 2, 3).to(tpu), False, False,
                                              _i32(4).to(tpu), 2)[0].cpu()
        with pytest.raises(NotImplementedError, match="batch_size_per_feature not supported"):
            F.block_bucketize_sparse_features(_i32(2, 2).to(tpu), _i32(1, 2, 3, 4).to(tpu), False, False,
                                              _i32(4).to(tpu), 2, batch_size_per_feature=_i32(2).to(tpu))
        with pytest.raises(RuntimeError, match="expected a 1-D or 2-D tensor, got a 3-D one"):
            F.asynchronous_complete_cumsum(torch.ones(2, 2, 2, dtype=torch.long, device=tpu))
        kjt = KeyedJaggedTensor(keys=["f0", "f1", "f2"], values=values, lengths=lengths.flatten())
        torch.testing.assert_close(kjt.permute([2, 0]).values().cpu(), torch.tensor([4, 5, 0, 1, 2]))
    assert torchtpu.fallback_counts() == {}
