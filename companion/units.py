"""The course's one unit convention, and the formatter every notebook and widget uses.

Stated in notebook 00 and in the cheat-sheet; every later notebook follows it:

* **Bytes are decimal**: 1 kB = 10^3, 1 MB = 10^6, 1 GB = 10^9 bytes, for model sizes,
  memory budgets, traffic and bandwidth (GB/s, per direction unless said otherwise).
* **Binary units are named as such**: MiB = 2^20 and GiB = 2^30 bytes appear only where
  a source uses them (a GPU's memory capacity, a lecture slide whose "MB" is 2^20, a
  buffer size given in MiB by torch); the text then says so.
* **Time** in s, ms (10^-3 s) and µs (10^-6 s); **FLOPs** decimal (TFLOP/s = 10^12).
"""
from __future__ import annotations

__all__ = ["KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "fmt_bytes", "fmt_seconds"]

KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12
KiB, MiB, GiB = 2**10, 2**20, 2**30

_DECIMAL = ((TB, "TB"), (GB, "GB"), (MB, "MB"), (KB, "kB"))
_BINARY = ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB"))


def fmt_bytes(n: float, binary: bool = False, digits: int = 3) -> str:
    """``fmt_bytes(1.5e9) == "1.5 GB"``; ``binary=True`` for MiB/GiB (say why where used)."""
    if not isinstance(n, (int, float)) or n != n:
        raise ValueError(f"n={n!r}: pass a number of bytes")
    if not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits={digits!r}: pass a positive number of significant digits")
    sign, n = ("-" if n < 0 else ""), abs(n)
    for size, name in (_BINARY if binary else _DECIMAL):
        if n >= size:
            return f"{sign}{n / size:.{digits}g} {name}"
    return f"{sign}{n:.{digits}g} B"


def fmt_seconds(t: float, digits: int = 3) -> str:
    """``fmt_seconds(0.0042) == "4.2 ms"``."""
    if not isinstance(t, (int, float)) or t != t or t < 0:
        raise ValueError(f"t={t!r}: pass a duration in seconds, >= 0")
    if not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits={digits!r}: pass a positive number of significant digits")
    for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if t >= scale:
            return f"{t / scale:.{digits}g} {name}"
    return f"{t * 1e9:.{digits}g} ns"
