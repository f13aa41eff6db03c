"""The PJRT driver: IR Programs -> StableHLO text (emit.py) -> a PJRT client through jax (client.py) -> storage-keyed
device buffers (driver.py). See docs/pjrt.md."""
