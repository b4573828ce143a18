"""The README's multi-node command, run for real: two torchrun agents on this machine
act as two nodes (c10d rendezvous on 127.0.0.1 at a free port, 2 processes each).

The command is read from README.md (the ``torchrun --nnodes 2 ...`` line that runs
``hierarchical_all_reduce``); only HOST:PORT and --nproc-per-node are replaced. Each
rank's hierarchical all-reduce must equal dist.all_reduce, and the groups it formed
must be the ones torchrun's environment describes: the intra-node group is the ranks
with this rank's GROUP_RANK, the inter-node group the ranks with its LOCAL_RANK.
"""
from __future__ import annotations

import os
import pickle
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TORCHRUN = shutil.which("torchrun", path=os.path.dirname(sys.executable))
DEADLINE_S = 90  # measured ~10 s on 2 loaded cores; a hang must not hold the suite longer


def readme_command() -> list[str]:
    """The README's multi-node torchrun command for the hierarchical all-reduce."""
    text = (ROOT / "README.md").read_text().replace("\\\n", " ")
    lines = [line for line in text.splitlines()
             if line.strip().startswith("torchrun --nnodes 2") and "hierarchical_all_reduce" in line]
    assert lines, "README.md must show the multi-node torchrun command for hierarchical_all_reduce"
    return shlex.split(lines[0].split("#")[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    # Each agent leads its own session: killing the group stops its ranks too.
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    proc.wait()


@pytest.mark.ci  # ~15-20 s: two torchrun agents; CI runs it
@pytest.mark.skipif(TORCHRUN is None, reason="torchrun is not installed next to this Python")
def test_two_torchrun_agents_as_two_nodes(tmp_path):
    cmd = readme_command()
    cmd[0] = TORCHRUN
    endpoint = cmd.index("--rdzv-endpoint") + 1
    assert re.fullmatch(r"HOST:\d+", cmd[endpoint]), cmd
    cmd[endpoint] = f"127.0.0.1:{free_port()}"
    cmd[cmd.index("--nproc-per-node") + 1] = "2"
    out = tmp_path / "results.pkl"
    cmd += ["--out", str(out)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    logs = [open(tmp_path / f"agent{i}.log", "w+") for i in range(2)]
    agents = [subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
                               start_new_session=True) for log in logs]
    try:
        deadline = time.monotonic() + DEADLINE_S
        for agent in agents:
            agent.wait(max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for agent in agents:
            _stop(agent)
    text = ""
    for log in logs:
        log.seek(0)
        text += log.read()
        log.close()
    assert [a.returncode for a in agents] == [0, 0], text[-4000:]
    assert "[torchrun] 4 ranks" in text and "OK: hierarchical all-reduce equals" in text, text[-4000:]

    results = pickle.loads(out.read_bytes())
    assert [r["rank"] for r in results] == [0, 1, 2, 3]
    env = [{k: int(v) for k, v in r["env"].items()} for r in results]
    assert sorted({e["GROUP_RANK"] for e in env}) == [0, 1]  # two agents, two nodes
    for r, e in zip(results, env):
        assert e["LOCAL_WORLD_SIZE"] == 2
        assert e["RANK"] == e["GROUP_RANK"] * 2 + e["LOCAL_RANK"]
        assert r["intra_group"] == [s["RANK"] for s in env if s["GROUP_RANK"] == e["GROUP_RANK"]]
        assert r["inter_group"] == [s["RANK"] for s in env if s["LOCAL_RANK"] == e["LOCAL_RANK"]]
        assert set(r["peers"]) <= set(r["intra_group"]) | set(r["inter_group"])
        assert r["equal"], f"rank {r['rank']}: hierarchical all-reduce differs from dist.all_reduce"
