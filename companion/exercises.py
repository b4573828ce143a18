"""Check a student's rank function against the reference, on real ranks.

Every notebook's exercises use :func:`check`: the student writes a function in a cell,
``check`` launches it and the package's reference on the same ranks with the same
inputs, and prints what matched or, rank by rank, what did not. It returns a bool and
never raises for wrong student code, so a notebook keeps running; the notebook's own
self-check cells assert on the reference solution. Introduced in notebook 00.
"""
from __future__ import annotations

import math

import torch
from torch.utils._pytree import tree_flatten

from .backends import validate_launch
from .launcher import LaunchError, LaunchTimeout, launch
from .validation import accepts, callable_arg, positive_number

__all__ = ["check", "compare_results"]


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        flat = x.flatten()
        shown = ", ".join(f"{v:.4g}" for v in flat[:6].tolist())
        return f"tensor(shape={tuple(x.shape)}, dtype={x.dtype}, values=[{shown}{', ...' if flat.numel() > 6 else ''}])"
    return repr(x)


def _check_tolerances(rtol, atol) -> None:
    for name, value in (("rtol", rtol), ("atol", atol)):
        positive_number(name, value, f"pass {name}=0.0 for exact equality or a small "
                        f"tolerance such as {name}=1e-6.", zero=True)


def compare_results(got, expected, rtol: float = 0.0, atol: float = 0.0) -> str | None:
    """None when ``got`` matches ``expected`` (same structure, close leaves), else a reason."""
    _check_tolerances(rtol, atol)
    got_leaves, got_spec = tree_flatten(got)
    exp_leaves, exp_spec = tree_flatten(expected)
    if got_spec != exp_spec:
        return f"returned {_describe(got)} but the reference returns {_describe(expected)}"
    for i, (g, e) in enumerate(zip(got_leaves, exp_leaves)):
        where = f" (item {i})" if len(exp_leaves) > 1 else ""
        if isinstance(e, torch.Tensor):
            if not isinstance(g, torch.Tensor) or g.shape != e.shape:
                return f"got {_describe(g)}{where}, expected {_describe(e)}"
            if not torch.allclose(g.to(e.dtype), e, rtol=rtol, atol=atol):
                diff = (g.to(e.dtype) - e).abs().max().item()
                return f"got {_describe(g)}{where}, expected {_describe(e)} (max difference {diff:.3g})"
        elif isinstance(e, float):
            if not (isinstance(g, (int, float)) and math.isclose(g, e, rel_tol=rtol, abs_tol=atol)):
                return f"got {g!r}{where}, expected {e!r}"
        elif g != e:
            return f"got {g!r}{where}, expected {e!r}"
    return None


def check(student_fn, reference_fn, *args, world_size: int = 4, rtol: float = 0.0,
          atol: float = 0.0, hint: str = "", timeout: float = 30.0, **kwargs) -> bool:
    """Run ``student_fn`` and ``reference_fn`` on ``world_size`` real ranks and compare.

    Prints a verdict for the student; returns True when every rank's result matches.
    ``rtol``/``atol`` default to exact equality: pass a tolerance only where the order
    of a floating-point reduction legitimately differs.
    """
    # A wrong argument is the notebook's mistake, not the student's: raise it up front
    # instead of printing a verdict, and before either launch starts a rank.
    callable_arg("student_fn", student_fn, "pass the function you wrote (no parentheses).")
    callable_arg("reference_fn", reference_fn, "pass the package's reference function.")
    accepts("reference_fn", reference_fn, args, kwargs)
    validate_launch(world_size, timeout, "auto")
    _check_tolerances(rtol, atol)
    try:  # a student's function with the wrong parameters is a verdict, not a crash
        accepts("your function", student_fn, args, kwargs)
    except TypeError as err:
        print(f"✗ {err}" + (f"\nHint: {hint}" if hint else ""))
        return False
    expected = launch(reference_fn, *args, world_size=world_size, timeout=timeout, **kwargs)
    try:
        got = launch(student_fn, *args, world_size=world_size, timeout=timeout, **kwargs)
    except LaunchTimeout:
        print(f"✗ your function did not finish within {timeout:g} s on {world_size} ranks: "
              "does every rank call the same collectives in the same order?")
        return False
    except LaunchError as err:
        if "NotImplementedError" in str(err).splitlines()[0]:
            print("… not implemented yet: replace the `raise NotImplementedError` with your code."
                  + (f"\nHint: {hint}" if hint else ""))
        else:
            print(f"✗ rank {err.rank} failed: {str(err).splitlines()[0]}"
                  + (f"\nHint: {hint}" if hint else ""))
        return False
    for rank, (g, e) in enumerate(zip(got, expected)):
        problem = compare_results(g, e, rtol=rtol, atol=atol)
        if problem:
            print(f"✗ rank {rank}: {problem}" + (f"\nHint: {hint}" if hint else ""))
            return False
    print(f"✓ correct on all {world_size} ranks")
    return True
