"""Region attributes for the differential cases of the loop IR ops (`while`, `while_array`): small loops whose
trip counts depend on the data, built over primitive IR ops."""

from __future__ import annotations

from typing import Any

from torchtpu.drivers.ir import Builder, Region


def array_halvings(shape: tuple[int, ...], limit: int) -> dict[str, Any]:
    """`while_array` attributes: halve the whole of x and count the halvings while its largest element is >= 1."""
    def region(fn: Any) -> Region:
        b = Builder()
        return Region(b.finish(fn(b, b.input(shape, "float32"), b.input((), "float32"))))

    def c(b: Builder, v: float, sh: tuple[int, ...]) -> Any:
        return b.emit("constant", [], value=v, shape=sh, dtype="float32")[0]

    def cond(b: Builder, x: Any, k: Any) -> list[Any]:
        top = b.emit("reduce", [x], kind="max", dimensions=tuple(range(len(shape))))[0]
        return b.emit("compare", [top, c(b, 1.0, ())], direction="GE")

    def body(b: Builder, x: Any, k: Any) -> list[Any]:
        return [b.emit("multiply", [x, c(b, 0.5, shape)])[0], b.emit("add", [k, c(b, 1.0, ())])[0]]

    return {"cond": region(cond), "body": region(body), "limit": limit}


def halvings(limit: int, dtype: str = "float32") -> dict[str, Any]:
    """`while` attributes: halve x and count the halvings while x >= 1 (at most `limit` trips)."""
    def region(fn: Any) -> Region:
        b = Builder()
        x, k = b.input((), dtype), b.input((), dtype)

        def const(v: float) -> Any:
            return b.emit("constant", [], value=v, shape=(), dtype=dtype)[0]

        return Region(b.finish(fn(b, x, k, const)))

    cond = region(lambda b, x, k, c: b.emit("compare", [x, c(1.0)], direction="GE"))
    body = region(lambda b, x, k, c: [b.emit("multiply", [x, c(0.5)])[0], b.emit("add", [k, c(1.0)])[0]])
    return {"cond": cond, "body": body, "limit": limit}
