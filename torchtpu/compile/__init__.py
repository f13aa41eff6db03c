"""The torch.compile backend "tpu" (see backend.py)."""
