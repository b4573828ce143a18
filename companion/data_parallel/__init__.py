"""Data parallelism: one model per rank, the batch split, the gradients averaged.

Taught in notebooks 02 and 03 (L19 p.13-47; CS336 L8 §2; Rajbhandari et al. 2020):

* :mod:`.param_server`: a parameter server against all-reduce (notebook 02);
* :mod:`.comm`: :class:`~.comm.Collectives`, the asynchronous collectives DDP and FSDP
  issue (optionally behind an emulated link, optionally timed);
* :mod:`.ddp`: DDP with gradient buckets; :mod:`.zero`: ZeRO-1/2's sharded optimizer;
  :mod:`.fsdp`: ZeRO-3 / FSDP, one unit gathered at a time;
* :mod:`.memory`: the memory and traffic ledgers they are checked against;
* :mod:`.runs`: every strategy trained on real ranks and compared (notebook 03).

Import the module you need; ``companion.DDP``, ``companion.ShardedOptimizer`` and
``companion.FSDP`` load lazily.
"""
