"""Plumbing shared by every widget: visible errors in callbacks."""
from __future__ import annotations

import functools
import traceback

__all__ = ["guarded"]


def guarded(output):
    """Decorator for a widget callback: exceptions are printed into ``output``.

    ipywidgets otherwise sends callback exceptions to the browser console (or the
    kernel log), so a broken slider looks like a slider that does nothing. A
    ``ValueError`` (bad input, e.g. a negative size) is shown as a one-line message;
    anything else with its traceback.
    """

    def wrap(callback):
        @functools.wraps(callback)
        def run(*args, **kwargs):
            try:
                return callback(*args, **kwargs)
            except ValueError as exc:
                with output:
                    output.clear_output(wait=True)
                    print(f"Invalid input: {exc}")
            except Exception:  # noqa: BLE001 - anything else must be visible too
                with output:
                    output.clear_output(wait=True)
                    print(traceback.format_exc())

        return run

    return wrap
