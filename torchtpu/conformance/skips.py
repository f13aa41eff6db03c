"""Explicit skips, each with its reason, and the entries compared by distribution or metadata instead of values.

Nothing is skipped silently: an (entry, dtype) either runs, or is listed here, or is reported as "no sample of
this dtype runs on CPU" (OpInfo generated no sample that CPU itself accepts).
"""

from __future__ import annotations

# Entries whose outputs are random: compared by distribution (two-sample KS test over repeated draws).
RANDOM = frozenset({
    "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal", "normal.in_place",
    "normal.number_mean", "rand_like", "randint", "randint_like", "randn", "randn_like", "uniform",
    "nn.functional.alpha_dropout", "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.feature_alpha_dropout.with_train", "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d",
    "nn.functional.multi_head_attention_forward",  # OpInfo's op applies dropout (p=0.5) to the attention weights
})

# Random entries whose draws within one call are correlated (one mask per channel or per attention row): their
# distribution test compares per-call means over 400 calls instead of pooled elements.
RANDOM_CORRELATED = frozenset({
    "nn.functional.multi_head_attention_forward", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.feature_alpha_dropout.with_train", "nn.functional.scaled_dot_product_attention",
})

# Entries whose samples are random only under a condition (e.g. a dropout probability): name -> predicate.
RANDOM_IF = {
    "nn.functional.scaled_dot_product_attention": lambda sample: bool(sample.kwargs.get("dropout_p", 0.0)),
}

# Entries whose output values are undefined (besides OpInfo's has_nondeterministic_output): shape/dtype only.
UNDEFINED_VALUES = frozenset({"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided",
                              "empty_permuted"})

# Entries whose index outputs may pick any of several equal elements (ATen leaves the order of ties unspecified
# unless stable=True): an index that differs from CPU's passes when it selects an equal value.
UNORDERED_TIES = frozenset({"sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
                            "masked.median", "max.reduction_with_dim", "min.reduction_with_dim"})

# Factorizations that are unique only up to signs, phases or bases of repeated values: an output that differs
# from CPU's passes when it agrees where the factorization is unique (see harness.same_decomposition).
NON_UNIQUE = {"svd": "usv", "linalg.svd": "usvh", "linalg.eig": "eig", "linalg.eigvals": "eig"}

# Skipped for every dtype: name -> reason.
SKIP_ALL: dict[str, str] = {
    "sparse.sampled_addmm": "sparse layouts (CSR) are not supported on tpu",
    "sparse.mm.reduce": "sparse layouts (CSR) are not supported on tpu",
    "to_sparse": "sparse layouts (COO/CSR) are not supported on tpu",
    "svd_lowrank": "random projection (torch.randn on CPU-generator state): outputs depend on the RNG stream",
    "pca_lowrank": "random projection (torch.randn on CPU-generator state): outputs depend on the RNG stream",
    "as_strided.partial_views": "reads storage outside the viewed elements; a device copy of a view carries only "
                                "the view, not its base's storage",
}

# Positional arguments (by index into sample.args) that the op requires on CPU.
CPU_ARGS: dict[str, tuple[int, ...]] = {
    "tensor_split": (0,),  # tensor_indices_or_sections must be a CPU tensor (ATen checks)
}

# Absolute-tolerance floors for float outputs and gradients, with the reason. Each is a case where CPU's own
# float32 result carries rounding error above the default atol (1e-5), so equality to that is not meaningful.
_ATOL_REASONS: dict[float, tuple[str, set[str]]] = {
}
ATOL: dict[str, float] = {name: tol for tol, (_, names) in _ATOL_REASONS.items() for name in names}

# Skipped for one dtype: (name, dtype) -> reason.
SKIP_DTYPE: dict[tuple[str, str], str] = {
    ("nn.functional.scaled_dot_product_attention", "bfloat16"):
        "ATen's math path upcasts bf16 q/k/v to float32 and scales q before the matmul, which the bfloat16 sweep "
        "runs at Precision.DEFAULT (one bf16 pass, by design): the scaled operands are rounded to bf16 again, and "
        "with OpInfo's values up to 9 the logits (~200) move by ~1, enough to flip a peaked softmax; at HIGHEST "
        "every non-dropout bf16 sample matches CPU within the bf16 tolerance",
    ("cov", "bfloat16"): "mixed-dtype samples (bf16 input, float32 aweights) run float32 matmuls, which the bfloat16 "
                         "sweep runs at Precision.DEFAULT (one bf16 pass, by design); the aweights gradient cancels "
                         "terms of ~20 to ~0, so its error (~0.5) is that precision's; at HIGHEST every bf16 sample "
                         "matches CPU within the bf16 tolerance",
    ("matrix_exp", "bfloat16"): "no CPU reference: CPU's bfloat16 linalg_matrix_exp returns inf/NaN for ordinary "
                                "inputs (a 3x3 randn matrix); tpu computes in float32 and rounds, checked against "
                                "CPU float32 in tests/test_ops_coverage.py",
}


def skip_reason(name: str, dtype: str) -> str:
    return SKIP_ALL.get(name) or SKIP_DTYPE.get((name, dtype), "")


# Entries that need more than the default per-entry time: name -> seconds. multi_head_attention_forward has 192
# samples, most with dropout, each compared by distribution over 400 calls on both devices.
TIMEOUTS: dict[str, float] = {"nn.functional.multi_head_attention_forward": 1800.0}
