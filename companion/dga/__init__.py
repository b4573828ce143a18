"""Delayed gradient averaging and the training loops it is compared with.

Taught in notebook 08 (``notebooks/08_delayed_gradient_averaging.ipynb``; L20 p.62-74,
Zhu et al., NeurIPS 2021):

* :mod:`.algorithms`: synchronous SGD, DGA and FedAvg on real ranks behind an emulated link;
* :mod:`.model`: their closed-form step times, and the speed of light in fibre;
* :mod:`.lr`: the learning-rate schedules they train with.
"""
from . import model
from .algorithms import (ALGORITHMS, digits_split, dga_update, mlp_problem, overlap_fraction,
                         quadratic_grad_fn, run_worker, side_by_side, simulate, stale_update,
                         sweep, toy_train, train)

__all__ = ["ALGORITHMS", "dga_update", "stale_update", "run_worker", "simulate",
           "digits_split", "mlp_problem", "side_by_side", "quadratic_grad_fn", "train",
           "toy_train", "sweep", "overlap_fraction", "model"]
