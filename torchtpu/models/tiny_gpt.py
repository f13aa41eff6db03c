"""A small decoder-only transformer language model (GPT-style), written with plain torch ops."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class GPTConfig:
    vocab: int = 128
    seq: int = 32
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    ffn: int = 256
    dropout: float = 0.0


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.up = nn.Linear(cfg.d_model, cfg.ffn)
        self.down = nn.Linear(cfg.ffn, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        attn = scores.masked_fill(causal, float("-inf")).softmax(dim=-1)
        y = (self.drop(attn) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.down(nn.functional.gelu(self.up(self.ln2(x)))))


class TinyGPT(nn.Module):
    def __init__(self, cfg: GPTConfig = GPTConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))

    def loss(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self(idx)
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def synthetic_batch(cfg: GPTConfig, batch: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Token sequences with learnable structure (each token predicts the next by a fixed rule)."""
    start = torch.randint(0, cfg.vocab, (batch, 1), generator=generator)
    steps = torch.arange(cfg.seq + 1).unsqueeze(0)
    seq = (start + 3 * steps) % cfg.vocab
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def model_flops_per_step(cfg: GPTConfig, batch: int) -> float:
    """Training FLOPs per step: 6 x params x tokens plus attention (12 x layers x seq x d_model per token)."""
    params = cfg.layers * (4 * cfg.d_model**2 + 2 * cfg.d_model * cfg.ffn) + cfg.vocab * cfg.d_model
    tokens = batch * cfg.seq
    return 6.0 * params * tokens + 12.0 * cfg.layers * cfg.seq * cfg.d_model * tokens
