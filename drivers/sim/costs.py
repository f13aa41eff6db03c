"""The sim driver's cost table: each IR op's cost rule, read from its record (drivers/ir_ops.py; the rules are
in drivers/ir_costs.py). Rules never see values."""

from __future__ import annotations

from torchtpu.drivers.ir import OPS
from torchtpu.drivers.ir_costs import CostRule

COSTS: dict[str, CostRule] = {name: op.cost for name, op in OPS.items()}
