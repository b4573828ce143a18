"""Delayed gradient averaging and the training loops it is compared with.

Taught in notebook 08 (``notebooks/08_delayed_gradient_averaging.ipynb``; L20 p.62-74,
Zhu et al., NeurIPS 2021):

* :mod:`.algorithms`: synchronous SGD, DGA and FedAvg on real ranks behind an emulated link;
* :mod:`.problems`: the digits problem they train (data split, TinyMLP gradients);
* :mod:`.runs`: the launched runs (``train``, ``toy_train``, ``sweep``) and their overlap;
* :mod:`.model`: their closed-form step times, and the speed of light in fibre;
* their learning-rate schedules are notebook 07's (:mod:`companion.compression.lr`).
"""
from . import model
from .algorithms import (ALGORITHMS, dga_update, quadratic_grad_fn, run_worker, simulate,
                         stale_update)
from .problems import N_TRAIN, digits_split, mlp_problem, side_by_side
from .runs import overlap_fraction, sweep, toy_train, train

__all__ = ["ALGORITHMS", "dga_update", "stale_update", "run_worker", "simulate",
           "digits_split", "mlp_problem", "side_by_side", "quadratic_grad_fn", "train",
           "toy_train", "sweep", "overlap_fraction", "model", "N_TRAIN"]
