"""Example kernels that earn their place: fused RMSNorm, flash attention (forward and backward) and a ragged
grouped matmul for mixture-of-experts, each a Pallas kernel wrapped by `jax_op` and tested against the eager
ops (tests/test_kernels_examples.py)."""
