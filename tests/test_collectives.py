"""Hand-written collectives (companion.collectives) against torch.distributed's own.

One launch per world size runs every check inside the ranks and returns a list of
failures, so the whole file costs a handful of launches. Tolerances: collectives that
*sum* floats may add in a different order than gloo, so random-normal inputs are
compared with rtol=atol=1e-5 (at most 7 reordered fp32 additions of O(1) values);
integer-valued inputs must match exactly, because sums of small integers are exact in
fp32 in any order. Moving data without arithmetic (broadcast, scatter, gather,
all-gather, all-to-all) must be bit-exact.
"""
from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

import companion
from companion import collectives as C

WORLD_SIZES = [1, 2, 3, 4, 5, 8]
SIZES = [3, 35, 840]  # 3 < N leaves empty chunks; 35 splits unevenly; 840 = lcm(1..8): divides evenly for the textbook counts
TEXTBOOK_NUMEL = 840
ALL_REDUCES = {k: v for k, v in C.ALL_REDUCE_ALGORITHMS.items()}


def _inputs(numel, integer):
    g = torch.Generator().manual_seed(1000 * dist.get_rank() + numel)
    if integer:
        return torch.randint(-8, 9, (numel,), generator=g).float()
    return torch.randn(numel, generator=g)


def _close(a, b, exact):
    if a.shape != b.shape:
        return False
    return torch.equal(a, b) if exact else torch.allclose(a, b, rtol=1e-5, atol=1e-5)


def _check_all(failures):  # runs inside every rank
    n, r = dist.get_world_size(), dist.get_rank()
    results = []
    for numel in SIZES:
        # integers with SUM must match exactly; random floats with AVG within tolerance
        for integer, op, dop in ((True, "sum", dist.ReduceOp.SUM), (False, "avg", dist.ReduceOp.AVG)):
            x = _inputs(numel, integer).view(-1, 1) if numel % 5 == 0 else _inputs(numel, integer)
            keep = x.clone()
            where = f"numel={numel} integer={integer}"
            ref = x.clone()
            dist.all_reduce(ref, op=dop)
            for name, fn in ALL_REDUCES.items():
                y = fn(x, op=op)
                results.append(y.reshape(-1))
                if not _close(y, ref, integer):
                    failures.append(f"{name} {op} {where}")
            if not torch.equal(x, keep):
                failures.append(f"input modified ({where})")
            root = n - 1
            ref = x.clone()
            dist.broadcast(ref, src=root)
            if not torch.equal(C.broadcast(x, src=root), ref):
                failures.append(f"broadcast {where}")
            if not torch.equal(C.scatter(x, src=root), ref.view(-1).tensor_split(n)[r]):
                failures.append(f"scatter {where}")
            ref = x.clone()
            dist.reduce(ref, dst=root)
            got = C.reduce(x, dst=root)
            if (got is None) != (r != root) or (r == root and not _close(got, ref, integer)):
                failures.append(f"reduce {where}")
            ref = [torch.empty_like(x) for _ in range(n)] if r == 0 else None
            dist.gather(x, ref, dst=0)
            got = C.gather(x, dst=0)
            if r == 0 and not all(torch.equal(a, b) for a, b in zip(got, ref)):
                failures.append(f"gather {where}")
            ref = [torch.empty_like(x) for _ in range(n)]
            dist.all_gather(ref, x)
            if not all(torch.equal(a, b) for a, b in zip(C.all_gather(x), ref)):
                failures.append(f"all_gather {where}")
            ref = x.clone().view(-1)
            dist.all_reduce(ref)
            if not _close(C.reduce_scatter(x), ref.tensor_split(n)[r], integer):
                failures.append(f"reduce_scatter {where}")
            if numel % n == 0:  # torch's reduce_scatter needs equal chunks
                out = torch.empty(numel // n)
                dist.reduce_scatter(out, list(x.clone().view(-1).chunk(n)))
                if not _close(C.reduce_scatter(x), out, integer):
                    failures.append(f"reduce_scatter vs dist.reduce_scatter {where}")
    mine = torch.cat(results)  # every rank must hold the very same bits
    every = [torch.empty_like(mine) for _ in range(n)]
    dist.all_gather(every, mine)
    if not all(torch.equal(e, mine) for e in every):
        failures.append("ranks disagree on an all-reduce result")
    # all-to-all with a different size for every (sender, receiver) pair
    ins = [torch.arange(r + 2 * j + 1, dtype=torch.float32) + 100 * r + 10 * j for j in range(n)]
    out_sizes = [j + 2 * r + 1 for j in range(n)]
    flat = torch.empty(sum(out_sizes))
    # gloo's list all_to_all needs equal sizes; the _single form takes split sizes
    dist.all_to_all_single(flat, torch.cat(ins), out_sizes, [t.numel() for t in ins])
    ref = list(flat.split(out_sizes))
    for got in (C.all_to_all(ins), C.all_to_all(ins, output_shapes=[t.shape for t in ref])):
        if not all(torch.equal(a, b) for a, b in zip(got, ref)):
            failures.append("all_to_all")


def _traffic_per_algorithm():
    x = torch.ones(TEXTBOOK_NUMEL)
    out = {}
    for name, fn in ALL_REDUCES.items():
        with C.traffic() as t:
            fn(x)
        out[name] = t
    with C.traffic() as t:
        C.all_to_all(list(x.tensor_split(dist.get_world_size())))
    out["all_to_all"] = t
    return out


def _rank_job():
    failures = []
    _check_all(failures)
    return failures, _traffic_per_algorithm()


@pytest.fixture(scope="module")
def runs():
    return {n: companion.launch(_rank_job, world_size=n, timeout=120) for n in WORLD_SIZES}


@pytest.mark.parametrize("n", WORLD_SIZES)
def test_matches_torch_distributed(runs, n):
    for r, (failures, _) in enumerate(runs[n]):
        assert not failures, f"rank {r} of {n}: {failures}"


@pytest.mark.parametrize("n", WORLD_SIZES)
def test_textbook_traffic(runs, n):
    nbytes = TEXTBOOK_NUMEL * 4
    t = [traffic for _, traffic in runs[n]]
    ring = [x["ring"] for x in t]
    for x in ring:  # 2(N-1)/N of the tensor each way, in 2(N-1) steps
        assert x.bytes_sent == x.bytes_received == 2 * (n - 1) * nbytes // n
        assert x.steps == x.messages == 2 * (n - 1)
    for x, y in zip(ring, [x["reduce_scatter+all_gather"] for x in t]):
        assert (x.bytes_sent, x.steps) == (y.bytes_sent, y.steps)
    ps = [x["parameter_server"] for x in t]
    assert ps[0].bytes_received == ps[0].bytes_sent == (n - 1) * nbytes
    assert ps[0].messages == n - 1
    for x in ps[1:]:
        assert x.bytes_sent == x.bytes_received == nbytes and x.messages == 1
    assert all(x.steps == (2 if n > 1 else 0) for x in ps)
    for x in [x["naive"] for x in t]:
        assert x.bytes_sent == x.bytes_received == (n - 1) * nbytes
        assert x.steps == (1 if n > 1 else 0)
    log2 = (n - 1).bit_length()  # ceil(log2 n)
    assert t[0]["tree"].steps == 2 * log2
    rhd = [x["recursive_halving_doubling"] for x in t]
    if n & (n - 1) == 0:
        for x in rhd:
            assert x.steps == 2 * log2 and x.messages == 2 * log2
            assert x.bytes_sent == 2 * (n - 1) * nbytes // n
    else:  # folded-in ranks: 2 extra steps for the pairs, the even partner sits out
        p = 1 << (n.bit_length() - 1)
        rest = n - p
        assert [x.steps for x in rhd] == [2 if r < 2 * rest and r % 2 == 0 else
                                          2 * (p.bit_length() - 1) + (2 if r < 2 * rest else 0)
                                          for r in range(n)]
    rd = [x["recursive_doubling"] for x in t]
    p = 1 << (n.bit_length() - 1)
    rest, k = n - p, p.bit_length() - 1
    for r, x in enumerate(rd):  # whole tensors, one message per round
        if r < 2 * rest and r % 2 == 0:  # folded in: one send, then one receive
            assert (x.steps, x.messages) == (2, 1), (n, r)
        elif r < 2 * rest:  # receives the fold, k pairwise rounds, hands the result back
            assert (x.steps, x.messages) == (k + 2, k + 1), (n, r)
        else:
            assert x.steps == x.messages == k, (n, r)
        assert all(m.bytes == nbytes for m in x.log)
    if n & (n - 1) == 0:  # log2 N rounds against Rabenseifner's 2 log2 N, more bytes
        assert all(x.bytes_sent == k * nbytes for x in rd)
        assert all(y.steps == 2 * x.steps for x, y in zip(rd, rhd))
    for x in [x["all_to_all"] for x in t]:  # shapes first, then data: N-1 rounds each
        assert x.steps == 2 * (n - 1) and x.messages == 2 * (n - 1)


@pytest.mark.parametrize("n", [4, 8])
def test_recursive_doubling_pairs_at_distance_1_2_4(runs, n):
    """Round k: rank r swaps its whole vector with r XOR 2^k (the lecture's distances)."""
    for r, (_, traffic) in enumerate(runs[n]):
        log = traffic["recursive_doubling"].log
        for op in ("send", "recv"):
            assert [(m.step, m.peer) for m in log if m.op == op] == [
                (k, r ^ (1 << k)) for k in range((n - 1).bit_length())]


@pytest.mark.parametrize("n", [3, 4, 8])
def test_replay_ends_with_every_contribution(runs, n):
    t = [traffic for _, traffic in runs[n]]
    for name in ALL_REDUCES:
        rp = C.replay([x[name] for x in t])
        assert rp.complete(), name
        assert not rp.complete(0), name
    ring = C.replay([x["ring"] for x in t])
    assert len(ring.frames) == 2 * (n - 1) + 1
    # after the reduce-scatter half, rank r (and only it) owns the full sum of chunk r
    half = ring.frames[n - 1]
    for r in range(n):
        assert half[r][r] == frozenset(range(n))
        assert all(half[r][c] != frozenset(range(n)) for c in range(n) if c != r)


def test_bad_input_names_the_fix():
    x = torch.ones(4)
    with pytest.raises(ValueError, match="'sum' or 'avg'"):
        C.ring_all_reduce(x, op="max")
    with pytest.raises(ValueError, match="floating-point"):
        C.tree_all_reduce(torch.ones(4, dtype=torch.int64), op="avg")
    with pytest.raises(ValueError, match="parts"):
        C.chunk_sizes(4, 0)


def _wrong_length():
    try:
        C.all_to_all([torch.ones(1)])
    except ValueError as exc:
        return str(exc)
    return ""


def test_all_to_all_wrong_length():
    assert all("one tensor per rank" in m for m in companion.launch(_wrong_length, world_size=2))
