"""Pipeline parallelism: schedules as data, a simulator, closed forms, a real executor.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``).

* :mod:`.ops`: ``Op``, ``Schedule`` and the builders' shared pieces;
* :mod:`.schedules` (naive to ZB-H1) and :mod:`.modern` (looped BFS to DualPipeV): the
  builders; :mod:`.registry`: all of them by name (``make_schedule``);
* :mod:`.simulate`: timelines and closed forms; :mod:`.executor`: one rank's part of a
  schedule over real sends; :mod:`.tinymlp`: a TinyMLP trained through it.
"""
from .ops import Op, Schedule
from .schedules import gpipe, interleaved_1f1b, naive, one_f_one_b, zb_h1
from .modern import dualpipev, interleaved_zb, looped_bfs, zb_v
from .registry import SCHEDULES, make_schedule
from .simulate import (Event, OpCosts, Timeline, bubble_fraction, formula_text,
                       peak_activations, simulate)
from .tinymlp import (microbatches_of, reference_step, run_pipeline, split_stages,
                      timeline_from_results)

__all__ = ["Op", "Schedule", "SCHEDULES", "make_schedule", "naive", "gpipe", "one_f_one_b",
           "interleaved_1f1b", "zb_h1", "looped_bfs", "interleaved_zb", "zb_v", "dualpipev",
           "OpCosts", "Event", "Timeline", "simulate", "bubble_fraction", "peak_activations",
           "formula_text", "split_stages", "run_pipeline", "reference_step",
           "timeline_from_results", "microbatches_of"]
