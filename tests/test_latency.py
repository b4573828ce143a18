"""companion.network.delayed: the emulated link delays data for real, overlaps with compute,
serialises bandwidth, and its closed-form schedule matches the textbook step times."""
from __future__ import annotations

import math
import time

import pytest
import torch
import torch.distributed as dist

import companion
from companion import launch
from companion.dga.model import great_circle_km, modeled_step_times
from companion.network.delayed import DelayedComm, link_delay


def _all_reduce_with_latency(alpha_s):
    x = torch.arange(4.0) + 10 * companion.rank()
    expected = x.clone()
    dist.all_reduce(expected)  # the plain collective, on the default group
    with DelayedComm(alpha_s) as comm:
        work = comm.all_reduce(x)
        arrived_early = work.is_completed()
        got = work.wait()
        return {"got": got, "expected": expected, "early": arrived_early, **work.record()}


def test_delayed_all_reduce_gives_the_real_result_only_after_alpha():
    alpha = 0.3
    for res in launch(_all_reduce_with_latency, alpha, world_size=2):
        assert torch.equal(res["got"], res["expected"])
        assert not res["early"]  # 0.3 s cannot have passed between submit and the check
        # The model: delivered exactly alpha after the real operation finished...
        assert res["ready_at"] - res["real_done_at"] == pytest.approx(alpha, abs=1e-9)
        # ...and never handed over before that.
        assert res["consumed_at"] >= res["ready_at"]
        assert res["real_done_at"] >= res["submitted_at"]


def _overlap(alpha_s):
    with DelayedComm(alpha_s) as comm:
        work = comm.all_reduce(torch.ones(8))
        work._real_done.wait(30)  # only to read ready_at below; the data is still withheld
        while time.perf_counter() < work.ready_at:  # "compute" while the data travels
            sum(range(1000))
        t = time.perf_counter()
        work.wait()
        return time.perf_counter() - t


def test_latency_is_hidden_by_compute_that_outlasts_it():
    alpha = 0.2
    waits = launch(_overlap, alpha, world_size=2)
    # wait() found the data already there: it returned without sleeping the 0.2 s.
    assert max(waits) < alpha / 4


def _two_messages(nbytes, beta):
    with DelayedComm(0.0, beta) as comm:
        a = comm.all_reduce(torch.zeros(nbytes // 4))
        b = comm.all_reduce(torch.zeros(nbytes // 4))
        a.wait(), b.wait()
        return a.record(), b.record()


def test_bandwidth_serialises_messages_on_the_link():
    nbytes, beta = 40_000, 1e6  # 40 ms of transmission each
    for a, b in launch(_two_messages, nbytes, beta, world_size=2):
        assert a["ready_at"] - a["real_done_at"] == pytest.approx(nbytes / beta, abs=1e-9)
        # b cannot start transmitting before a has left the link.
        assert b["ready_at"] - a["ready_at"] >= nbytes / beta - 1e-9


def _ping(alpha_s):
    with DelayedComm(alpha_s) as comm:
        if companion.rank() == 0:
            work = comm.send(torch.tensor([1.0, 2.0]), dst=1)
        else:
            work = comm.recv(torch.zeros(2), src=0)
        return work.wait(), work.record()


def test_point_to_point_messages_are_delayed_too():
    alpha = 0.05
    (_, _), (got, rec) = launch(_ping, alpha, world_size=2)
    assert torch.equal(got, torch.tensor([1.0, 2.0]))
    assert rec["consumed_at"] - rec["real_done_at"] >= alpha


def _failing_comm():
    with DelayedComm(0.0) as comm:
        work = comm.submit(lambda t: (_ for _ in ()).throw(OSError("link down")), torch.ones(1))
        try:
            work.wait()
        except RuntimeError as exc:
            return type(exc.__cause__).__name__
    return "no error"


def test_a_failed_operation_is_raised_in_the_waiting_rank():
    assert launch(_failing_comm, world_size=2) == ["OSError", "OSError"]


def test_link_delay_and_bad_links():
    assert link_delay(1_000_000, 0.01, 1e8) == pytest.approx(0.02)
    assert link_delay(123, 0.05) == 0.05  # unlimited bandwidth
    with pytest.raises(ValueError, match="alpha"):
        link_delay(1, -0.1)
    with pytest.raises(ValueError, match="beta"):
        link_delay(1, 0.1, 0.0)


def test_great_circle_distance():
    assert great_circle_km(0, 0, 0, 180) == pytest.approx(math.pi * 6371.0)
    # London-New York is about 5,570 km.
    assert great_circle_km(51.5074, -0.1278, 40.7128, -74.0060) == pytest.approx(5570, rel=0.01)


@pytest.mark.parametrize("compute,latency,delay", [(10, 50, 10), (10, 50, 2), (30, 5, 3)])
def test_modeled_schedule_has_the_textbook_step_times(compute, latency, delay):
    steps, window = 300, 10 * (delay + 1)  # a whole number of DGA and FedAvg cycles

    def period(sched):  # steady state, away from the start-up
        return (sched[-1][2] - sched[-1 - window][2]) / window

    sync = modeled_step_times("sync", steps, compute, latency)
    dga = modeled_step_times("dga", steps, compute, latency, delay=delay)
    fedavg = modeled_step_times("fedavg", steps, compute, latency, local_steps=10)
    assert period(sync) == pytest.approx(compute + latency)
    assert period(dga) == pytest.approx(max(compute, (compute + latency) / (delay + 1)))
    assert period(fedavg) == pytest.approx(compute + latency / 10)
    assert modeled_step_times("dga", steps, compute, latency, delay=0) == sync


def test_modeled_schedule_rejects_bad_input():
    with pytest.raises(ValueError, match="delay"):
        modeled_step_times("dga", 10, 1.0, 1.0, delay=-1)
    with pytest.raises(ValueError, match="algorithm"):
        modeled_step_times("ring", 10, 1.0, 1.0)
