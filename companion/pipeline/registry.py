"""Every built-in pipeline schedule by name: :data:`SCHEDULES` and :func:`make_schedule`.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``). The registry sits
above both builder modules (``schedules.py``, ``modern.py``), which only import
``ops.py``, so that neither has to import the other.
"""
from __future__ import annotations

from .modern import dualpipev, interleaved_zb, looped_bfs, zb_v
from .ops import Schedule, check_sizes
from .schedules import gpipe, interleaved_1f1b, naive, one_f_one_b, zb_h1

__all__ = ["SCHEDULES", "DEFAULT_CHUNKS", "make_schedule", "schedule_key"]

SCHEDULES = {"naive": naive, "gpipe": gpipe, "1f1b": one_f_one_b,
             "interleaved": interleaved_1f1b, "zb-h1": zb_h1, "looped-bfs": looped_bfs,
             "interleaved-zb": interleaved_zb, "zb-v": zb_v, "dualpipev": dualpipev}
# Chunks per rank when make_schedule is given none; zb-v and dualpipev allow only 2.
DEFAULT_CHUNKS = {"interleaved": 1, "looped-bfs": 2, "interleaved-zb": 2, "zb-v": 2,
                  "dualpipev": 2}
ALIASES = {"one-f-one-b": "1f1b", "interleaved-1f1b": "interleaved", "zbh1": "zb-h1",
           "zbv": "zb-v", "zb-v-zero-bubble": "zb-v", "dualpipe-v": "dualpipev",
           "loopedbfs": "looped-bfs", "interleaved-zero-bubble": "interleaved-zb"}


def schedule_key(name) -> str:
    """The registry key of a schedule name ("ZBV" -> "zb-v"), or ValueError."""
    key = str(name).lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key not in SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; choose one of {sorted(SCHEDULES)}.")
    return key


def make_schedule(name, stages: int, microbatches: int, chunks: int | None = None) -> Schedule:
    """A built-in schedule by name (see ``SCHEDULES``), or a :class:`Schedule` passed through.

    ``chunks`` (model chunks per rank) defaults to the schedule's own: 1, or 2 for
    looped-bfs, interleaved-zb, zb-v and dualpipev.
    """
    if isinstance(name, Schedule):
        return name.validate()
    key = schedule_key(name)
    default = DEFAULT_CHUNKS.get(key, 1)
    chunks = default if chunks is None else chunks
    check_sizes(stages, microbatches, chunks)
    if key in ("interleaved", "looped-bfs", "interleaved-zb"):
        return SCHEDULES[key](stages, microbatches, chunks).validate()
    if chunks != default:
        hint = ("use chunks=2 (its V holds two chunks per rank)" if default == 2 else
                "use chunks=1 or schedule='interleaved'")
        raise ValueError(f"schedule {key!r} puts {default} model chunk(s) on each stage; {hint}.")
    return SCHEDULES[key](stages, microbatches).validate()
