"""A student's function as bytes, opened only where student code runs: in a rank.

Part of the instructor's grader (:mod:`companion.learning.grade`, the README's "Grading";
the exercises it grades are taught from notebook 00 on). :func:`dump` runs in the
student's kernel after their notebook: it writes each function the exercises ask for as
cloudpickle bytes. Unpickling runs code, so the grading process never unpickles them: it
hands :meth:`Exercise.check <companion.learning.exercise.Exercise.check>` a
:class:`Submitted`, a callable that holds the bytes and opens them on its first call.
``launch`` pickles it into the exercise's ranks as bytes, and it opens there, among the
ranks that run student code anyway; called in the process that made it, it refuses.
"""
from __future__ import annotations

import collections
import io
import json
import linecache
import os
import pickle
import types

__all__: list[str] = []


class Submitted:
    """``name``'s cloudpickle bytes from a student's kernel, called like the function."""

    def __init__(self, name: str, blob: bytes):
        self.__name__ = self.__qualname__ = name
        self.blob = blob
        self.home = os.getpid()   # the grading process: the bytes stay closed in it
        self._function = None

    def __getstate__(self):
        return {"name": self.__name__, "blob": self.blob, "home": self.home}

    def __setstate__(self, state):
        self.__init__(state["name"], state["blob"])
        self.home = state["home"]

    def __repr__(self) -> str:
        return f"<{self.__name__} from a submitted notebook>"

    def __call__(self, *args, **kwargs):
        if os.getpid() == self.home:
            raise RuntimeError(
                f"{self.__name__} was called in the grading process; the grader runs a "
                "submitted function only in the exercise's ranks, so a checker that calls "
                "it in its own process is the checker's bug, not the student's")
        if self._function is None:
            self._function = pickle.loads(self.blob)
        return self._function(*args, **kwargs)


def dump(names, folder: str) -> None:
    """In the student's kernel, after the notebook ran: write each of ``names`` the
    notebook defined to ``folder`` as cloudpickle bytes, by value (``NAME.pkl``; or
    ``NAME.err``, why not: not a function, or not picklable), and the code of the cells
    they were defined in (``sources.json``), so a rank's traceback can quote the line."""
    import cloudpickle
    from IPython import get_ipython

    shell, cells = get_ipython(), {}

    def code_reduce(code):
        # cloudpickle names every shipped code object "<dynamic-code>"; name the cell
        # as IPython does ("Cell In[7]"), which the verdict then shows the student.
        kind, name = shell.compile.format_code_name(code.co_filename) or (None, None)
        label = f"{kind} {name}" if kind else code.co_filename
        if kind:
            cells[label] = code.co_filename
        ctor, args = cloudpickle.cloudpickle._code_reduce(code)
        return ctor, tuple(label if a == "<dynamic-code>" else a for a in args)

    class Pickler(cloudpickle.Pickler):
        dispatch_table = collections.ChainMap({types.CodeType: code_reduce},
                                              cloudpickle.Pickler.dispatch_table)

    for name in names:
        if name not in shell.user_ns:
            continue
        value, buffer, problem = shell.user_ns[name], io.BytesIO(), None
        if not callable(value):
            problem = f"it is {type(value).__name__} {value!r:.40}, not a function"
        else:
            try:
                Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
            except Exception as exc:   # a lock, a widget, an open file the function holds
                problem = f"it cannot be pickled ({type(exc).__name__}: {exc})"
        if problem:
            with open(os.path.join(folder, name + ".err"), "w", encoding="utf-8") as f:
                f.write(problem)
        else:
            with open(os.path.join(folder, name + ".pkl"), "wb") as f:
                f.write(buffer.getvalue())
    sources = {label: "".join(linecache.cache.get(path, (0, None, [], ""))[2])
               for label, path in cells.items()}
    with open(os.path.join(folder, "sources.json"), "w", encoding="utf-8") as f:
        json.dump(sources, f)
