"""Cost per million tokens from a step prediction and a price per chip-hour.

Prices are Google Cloud TPU on-demand list prices per chip-hour in US regions, as published on
https://cloud.google.com/tpu/pricing (read for this table in 2025; prices change and differ by region and
commitment: pass your own `prices`). TPU7x (Ironwood) had no public per-chip-hour list price we could cite:
its price is a user parameter (cost_per_million_tokens refuses a chip without a price).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["LIST_PRICES_USD_PER_CHIP_HOUR", "PRICE_SOURCE", "cost_per_million_tokens"]

PRICE_SOURCE = "Google Cloud TPU pricing, on-demand, US regions, https://cloud.google.com/tpu/pricing (2025)"
LIST_PRICES_USD_PER_CHIP_HOUR: dict[str, float] = {"v5e": 1.20, "v5p": 4.20, "v6e": 2.70}


def cost_per_million_tokens(tokens_per_second_per_chip: float, chip: str,
                            prices: Mapping[str, float | None] | None = None) -> float:
    """USD per 1e6 tokens: price per chip-hour / (3600 x tokens per second per chip) x 1e6.

    >>> round(cost_per_million_tokens(1000.0, "v5e"), 4)
    0.3333
    """
    table = {**LIST_PRICES_USD_PER_CHIP_HOUR, **(prices or {})}
    price = table.get(chip)
    if price is None:
        raise ValueError(f"no price per chip-hour for {chip!r}: pass prices={{{chip!r}: USD}} "
                         f"(list prices known: {', '.join(sorted(LIST_PRICES_USD_PER_CHIP_HOUR))})")
    if tokens_per_second_per_chip <= 0:
        raise ValueError("tokens per second per chip must be positive")
    return price / (3600.0 * tokens_per_second_per_chip) * 1e6
