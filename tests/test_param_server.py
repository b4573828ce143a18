"""Parameter-server and all-reduce data parallelism equal single-process training.

Tolerance: the distributed runs average per-slice mean gradients (sum over workers,
then divide), the reference takes one mean over the whole batch; fp32 reorders those
additions, about 1e-7 per step. After a few SGD steps the weights must agree within
atol=1e-6 (measured: ~6e-8), far below any change a step makes (lr * grad ~ 1e-3).
"""
from __future__ import annotations

import pytest
import torch

import companion
from companion.data_parallel import param_server as P
from companion.data import load_digits

STEPS = 5


@pytest.fixture(scope="module")
def data():
    return load_digits()  # once, shipped to the ranks (each would import scikit-learn)


@pytest.fixture(scope="module")
def reference(data):
    return P.single_process_train(steps=STEPS, data=data)


def test_parameter_server_equals_single_process(reference, data):
    res = companion.launch(P.parameter_server_train, steps=STEPS, data=data, world_size=3)
    torch.testing.assert_close(res[0]["params"], reference["params"], rtol=0, atol=1e-6)
    assert res[0]["losses"] == pytest.approx(reference["losses"], abs=1e-6)
    numel = reference["params"].numel()
    server, worker = res[0]["traffic"], res[1]["traffic"]
    # per step the server sends 2 weight vectors and receives 2 (gradient + loss) vectors
    assert server["bytes_sent"] == STEPS * 2 * numel * 4
    assert server["bytes_received"] == STEPS * 2 * (numel + 1) * 4
    assert worker["bytes_sent"] == STEPS * (numel + 1) * 4
    assert worker["bytes_received"] == STEPS * numel * 4


@pytest.mark.parametrize("algorithm", ["ring", "recursive_doubling", "recursive_halving_doubling"])
def test_all_reduce_training_equals_single_process(reference, data, algorithm):
    res = companion.launch(P.all_reduce_train, steps=STEPS, algorithm=algorithm, data=data,
                           world_size=4)
    for r in res:
        torch.testing.assert_close(r["params"], reference["params"], rtol=0, atol=1e-6)
        assert r["losses"] == pytest.approx(reference["losses"], abs=1e-6)
    assert all(torch.equal(r["params"], res[0]["params"]) for r in res)  # replicas never drift


def _try(fn, **kw):
    try:
        fn(**kw)
    except ValueError as exc:
        return str(exc)
    return ""


def test_bad_configurations_name_the_fix():
    msgs = companion.launch(_try, P.parameter_server_train, steps=1, batch_size=47, world_size=3)
    assert "multiple of 2" in msgs[0]
    msg = companion.launch(_try, P.parameter_server_train, steps=1, world_size=1)[0]
    assert "world_size >= 2" in msg
    msg = companion.launch(_try, P.all_reduce_train, steps=1, algorithm="magic", world_size=1)[0]
    assert "choose one of" in msg
