"""ZeRO-1 and ZeRO-2 (companion.ShardedOptimizer) on real ranks: equal to single-process
training, to companion.DDP and to torch's ZeroRedundancyOptimizer; memory held per rank
equal to companion.data_parallel.memory's formula for stages 0-3; traffic 2x/2x/2x/3x.

Tolerances as in test_ddp.py: float64 against the single process (reduction order,
amplified by AdamW's division by sqrt(v): atol 1e-9); bit-exact between the package's
stages, which reduce the same gradients with the same gloo sums.
"""
import pytest
import torch

import companion
from companion.data_parallel import memory as M
from companion.data_parallel.runs import train

F64 = dict(dtype="float64", steps=3)
STAGES = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3}


def _max_diff(a, b):
    return max((a["params"][k] - b["params"][k]).abs().max().item() for k in b["params"])


def _many(configs):
    return [train(**c) for c in configs]


@pytest.mark.parametrize("world_size", [2, 4])
def test_zero_stages_equal_single_process_ddp_and_torch(world_size):
    configs = [dict(strategy=s, optimizer=o, **F64) for s in ("zero1", "zero2")
               for o in ("adamw", "sgd")]
    configs += [dict(strategy="torch_zero1", optimizer="adamw", **F64)]
    configs += [dict(strategy=s, steps=2) for s in ("ddp", "zero1", "zero2")]  # float32
    # memory and traffic: every parameter trainable, so the formula's Psi is exact
    configs += [dict(strategy=s, steps=1, freeze=False, d_model=64) for s in STAGES]
    runs = list(zip(*companion.launch(_many, configs, world_size=world_size, timeout=150)))
    for results in runs[:8]:
        for res in results[1:]:
            assert _max_diff(res, results[0]) == 0  # every rank ends with the same model
    single = {o: train(strategy="single", optimizer=o, **F64) for o in ("adamw", "sgd")}
    for i, (stage, opt) in enumerate([(s, o) for s in (1, 2) for o in ("adamw", "sgd")]):
        tol = 1e-9 if opt == "adamw" else 1e-12
        assert _max_diff(runs[i][0], single[opt]) < tol, (stage, opt)
    assert _max_diff(runs[0][0], runs[4][0]) < 1e-9  # torch's ZeroRedundancyOptimizer
    assert _max_diff(runs[6][0], runs[5][0]) == 0  # ZeRO-1 == DDP, bit for bit
    assert _max_diff(runs[7][0], runs[5][0]) == 0  # ZeRO-2 == DDP, bit for bit

    for (strategy, stage), results in zip(STAGES.items(), runs[8:]):
        num_params = results[0]["num_params"]
        formula = M.zero_memory_per_gpu(num_params, world_size, stage, precision="fp32",
                                        optimizer="adamw")
        for res in results:
            for part in ("params", "grads", "optimizer"):
                # within 1%: shards are padded to ceil(Psi_i / N) per tensor, and AdamW
                # keeps a 4-byte step counter per tensor
                assert res["held"][part] == pytest.approx(formula[part], rel=0.01), (strategy, part)
        volume = M.communication_volume(num_params, world_size, stage, bytes_per_element=4)
        # padding again: at most N - 1 elements per tensor travel on top of Psi
        assert results[0]["comm_bytes"] == pytest.approx(volume["total"], rel=0.01), strategy


def test_sharded_optimizer_is_a_drop_in_optimizer():
    def work():
        import torch.distributed as dist

        torch.manual_seed(0)
        a, b = torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(7))
        frozen = torch.nn.Parameter(torch.randn(4), requires_grad=False)
        opt = companion.ShardedOptimizer([a, frozen], torch.optim.SGD, lr=0.1)
        opt.add_param_group({"params": [b], "lr": 0.5})
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        ref_a, ref_b, ref_frozen = a.detach().clone(), b.detach().clone(), frozen.clone()
        for step in range(2):
            grad_a, grad_b = torch.full_like(a, float(dist.get_rank() + 1)), torch.ones_like(b)
            a.grad, b.grad = grad_a.clone(), grad_b.clone()
            mean_a = torch.full_like(a, (1 + dist.get_world_size()) / 2)
            ref_a -= 0.1 * 0.5**step * mean_a
            ref_b -= 0.5 * 0.5**step * grad_b
            opt.step()
            sched.step()
            opt.zero_grad()
        try:
            companion.ShardedOptimizer([a], torch.optim.SGD, stage=3, lr=0.1)
            error = ""
        except ValueError as exc:
            error = str(exc)
        return (torch.allclose(a, ref_a, atol=1e-6), torch.allclose(b, ref_b, atol=1e-6),
                torch.equal(frozen, ref_frozen), a.grad is None, error)

    for ok_a, ok_b, frozen_ok, cleared, error in companion.launch(work, world_size=3):
        assert ok_a and ok_b and frozen_ok and cleared
        assert "companion.FSDP" in error
