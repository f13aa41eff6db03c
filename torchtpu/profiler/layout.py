"""The advisor's layout rule: owns `layout_findings` (device-to-device layout copies launched every step,
e.g. `w.t().contiguous()` in forward and its transposed gradient in backward, priced by re-simulating the
step without them).

What the sim charges: an eager layout copy is its own launch (`aten::copy_`, an identity Program over the
strided source) charged as HBM traffic (bytes read + written) plus the launch overhead. A `transpose` op
inside a fused region (DEFER_AND_FUSE, torch.compile) costs nothing: a fused region pays HBM only for its
external bytes (`CostModel.fuse`), so the rule has nothing to report there and never fires. The recorded
Program keeps no strides, so the rule cannot tell a transposing copy from another strided copy; the finding
says "layout copy" and names the tensor's shape and the source line. Only copies of a weight's shape (or its
reverse: the gradient copied back in backward) count, since storing a weight pre-transposed is the change the
finding predicts; activation copies (attention's `permute(...).contiguous()`) are left to the mode finding,
because fusing them (DEFER_AND_FUSE) is what removes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from torchtpu.profiler import resim
from torchtpu.profiler.advise import MIN_GAIN, Finding
from torchtpu.profiler.trace import Launch, Window

__all__ = ["is_layout_copy", "layout_findings"]


def is_layout_copy(la: Launch) -> bool:
    """A launch that only rewrites a device tensor into a new layout (an identity Program named aten::copy_)."""
    program = la.record.source
    return (program is not None and la.record.name == "aten::copy_" and not program.ops
            and [v.type for v in program.inputs] == [v.type for v in program.outputs])


def _of_weights(shapes: Iterable[tuple[int, ...]]) -> Callable[[Launch], bool]:
    known = {tuple(s) for s in shapes} | {tuple(reversed(s)) for s in shapes}

    def test(la: Launch) -> bool:
        return is_layout_copy(la) and tuple(la.record.source.inputs[0].shape) in known
    return test


def layout_findings(window: Window, chip: Any, before: float,
                    weight_shapes: Iterable[tuple[int, ...]]) -> list[Finding]:
    """One finding when the step launches layout copies of tensors shaped like a weight (`weight_shapes`)."""
    of_weights = _of_weights(list(weight_shapes))
    copies = [la for la in window.launches if of_weights(la)]
    if not copies or before <= 0:
        return []
    after = resim.step_time(window.launches, chip, drop=of_weights)
    if 1 - after / before < MIN_GAIN:
        return []
    moved = sum(la.record.hbm_bytes for la in copies)
    first = next((la for la in copies if la.line), copies[0])
    shapes = sorted({"x".join(map(str, la.record.source.inputs[0].shape)) for la in copies})
    return [Finding(
        "layout", f"{len(copies)} layout copies (.t()/.contiguous()/permute materialised) every step: store the "
        "weight in the layout its consumer reads", first.line,
        f"{len(copies)} device-to-device copies of {', '.join(shapes)} move {moved / 1e6:.2f} MB of HBM per step "
        f"and pay {len(copies)} launch overheads", before, after,
        {"kind": "layout", "copies": len(copies), "hbm_bytes": moved})]
