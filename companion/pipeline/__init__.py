"""Pipeline parallelism: schedules as data, a simulator, closed forms, a real executor.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``).
"""
from .schedules import (SCHEDULES, Op, Schedule, gpipe, interleaved_1f1b, make_schedule, naive,
                        one_f_one_b, zb_h1)
from .modern import dualpipev, interleaved_zb, looped_bfs, zb_v
from .simulate import (Event, OpCosts, Timeline, bubble_fraction, formula_text,
                       peak_activations, simulate)

__all__ = ["Op", "Schedule", "SCHEDULES", "make_schedule", "naive", "gpipe", "one_f_one_b",
           "interleaved_1f1b", "zb_h1", "looped_bfs", "interleaved_zb", "zb_v", "dualpipev",
           "OpCosts", "Event", "Timeline", "simulate", "bubble_fraction", "peak_activations",
           "formula_text"]
from .executor import (microbatches_of, reference_step, run_pipeline, split_stages,
                       timeline_from_results)

__all__ += ["split_stages", "run_pipeline", "reference_step", "timeline_from_results",
            "microbatches_of"]
