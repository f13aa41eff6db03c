"""execution/launch.py is the one launch of eager ops and compiled graphs: both run now in DEFER_NEVER (after a
pending region is flushed) and both join the pending region in DEFER_AND_FUSE, with the same results."""

import pytest
import torch

import torchtpu  # noqa: F401
from torchtpu import runtime
from torchtpu.execution import deferred, launch


def _f(x, y):
    return torch.relu(x * y + 1.5)


def test_eager_and_compiled_share_the_launch_decision(tpu):
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    dx, dy = x.to("tpu"), y.to("tpu")
    compiled = torch.compile(_f, backend="tpu", fullgraph=True)
    want = _f(x, y)
    direct = runtime.driver().strided_operands
    assert launch.runs_directly(runtime.driver()) == direct
    for fn in (_f, compiled):
        out = fn(dx, dy)
        assert not deferred.pending()  # DEFER_NEVER: ran (or, whole-storage driver, recorded and flushed)
        torch.testing.assert_close(out.cpu(), want)
        with torch.tpu.eager_mode("DEFER_AND_FUSE"):
            assert not launch.runs_directly(runtime.driver())
            before = deferred.stats.ops_deferred
            out = fn(dx, dy)
            assert deferred.pending() and deferred.stats.ops_deferred > before
        torch.testing.assert_close(out.cpu(), want)


@pytest.mark.sim_only("a whole-storage driver records every launch: nothing runs beside a region")
def test_a_zero_size_op_records_into_the_pending_region(tpu):
    x = torch.randn(5)
    d = x.to("tpu")
    with torch.tpu.eager_mode("DEFER_AND_FUSE"):
        y = d + 1.0
        assert deferred.pending()
        empty = torch.empty(0, device="tpu") * 2.0  # recorded (a zero-size op no longer flushes the region)
        assert deferred.pending() and empty.shape == (0,)
        torch.testing.assert_close(y.cpu(), x + 1.0, rtol=0, atol=0)
        assert not deferred.pending() and empty.cpu().shape == (0,)
