"""Failures at scale: checkpoint, lose a rank, resume bit for bit, and choose how often.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``), section 9, after
CS336 L8 section 8 (at [01:15:21]: GPUs failed 148 times while Llama-3 405B trained, so
"you need redundancy") and the Llama 3 report, section 3.3.4 and Table 5
(https://arxiv.org/abs/2407.21783).

* :mod:`.restart`: a real data-parallel job on gloo ranks that saves a
  ``torch.distributed.checkpoint`` every k steps, loses a rank to ``SIGKILL``, and
  resumes on fresh ranks equal bit for bit to the uninterrupted run;
* :mod:`.cost`: the cost of the checkpoint interval (Young 1974, Daly 2006): the
  formulas, in one place;
* :mod:`.llama3`: the published interruption record, and what follows from it.
"""
from .cost import (checkpoint_overhead, daly_interval, goodput, scale_mtbi,
                      wasted_per_failure, young_interval)
from .llama3 import LLAMA3_405B, TABLE_5, interruption_summary
from .restart import kill_and_resume, latest_checkpoint, reference_run, train_with_checkpoints

__all__ = ["scale_mtbi", "checkpoint_overhead", "wasted_per_failure", "young_interval",
           "daly_interval", "goodput", "LLAMA3_405B", "TABLE_5", "interruption_summary",
           "latest_checkpoint", "train_with_checkpoints", "reference_run", "kill_and_resume"]
