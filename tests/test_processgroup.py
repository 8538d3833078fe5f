"""The agent's process group (appmaster/agent/processgroup.py) with real child processes:
several per container (yarn.processes.per.container), the first failure stops the others,
the agent's death leaves none behind. No YARN: it is the agent's own code."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_rendezvous import stop_now

from appmaster.agent import steps
from appmaster.agent.processgroup import ProcessGroup, redacting_copy
from appmaster.common import agentlink, registry
from appmaster.common.agentlink import AgentLink
from appmaster.master import rendezvous

REPO = Path(__file__).resolve().parents[1]
# Each process says its local rank, then acts by it: FAIL_RANK exits 3, the others sleep.
SCRIPT = (
    "import os, sys, time\n"
    "rank = int(os.environ['LOCAL_RANK'])\n"
    "print('hello from', rank, flush=True)\n"
    "print('rank', rank, 'is here', file=sys.stderr, flush=True)\n"
    "if os.environ.get('IGNORE_TERM'):\n"
    "    import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "if rank == int(os.environ.get('FAIL_RANK', -1)):\n"
    "    time.sleep(float(os.environ.get('FAIL_AFTER', '0.3')))\n"
    "    print('boom', file=sys.stderr); sys.exit(3)\n"
    "time.sleep(float(os.environ.get('SLEEP', '30')))\n"
)


def envs(count: int, **extra: str) -> list[dict]:
    return [{**os.environ, "LOCAL_RANK": str(i), **extra} for i in range(count)]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_all_succeed_each_with_its_own_log_files(tmp_path: Path) -> None:
    group = ProcessGroup([sys.executable, "-c", SCRIPT], envs(3, SLEEP="0"), "worker-1",
                         tmp_path)
    end = group.wait()
    assert (end.code, end.failed) == (0, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "worker-1.local1.stderr", "worker-1.local1.stdout", "worker-1.local2.stderr",
        "worker-1.local2.stdout", "worker-1.stderr", "worker-1.stdout"]
    assert (tmp_path / "worker-1.local2.stdout").read_text() == "hello from 2\n"
    assert end.tail == "rank 0 is here\n"


def test_the_first_failure_stops_its_siblings_and_names_its_local_rank(tmp_path: Path) -> None:
    started = time.monotonic()
    group = ProcessGroup([sys.executable, "-c", SCRIPT], envs(3, FAIL_RANK="1"), "worker-0",
                         tmp_path)
    end = group.wait()
    assert time.monotonic() - started < 10  # not the siblings' 30 s
    assert (end.code, end.failed) == (3, 1)
    assert end.tail.startswith("local rank 1 of the container's 3 processes failed (exit code "
                               "3), the others were stopped; its worker-0.local1.stderr ends:\n")
    assert end.tail.endswith("rank 1 is here\nboom\n")
    assert [child.returncode for child in group.children] == [-signal.SIGTERM, 3,
                                                              -signal.SIGTERM]


def test_a_sibling_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    group = ProcessGroup([sys.executable, "-c", SCRIPT],
                         envs(2, FAIL_RANK="0", IGNORE_TERM="1", FAIL_AFTER="1.5"), "worker-0",
                         tmp_path,
                         grace_s=1.0)
    end = group.wait()
    assert (end.code, end.failed) == (3, 0) and end.tail.endswith("boom\n")
    assert group.children[1].returncode == -signal.SIGKILL


AGENT = (
    "import os, sys, pathlib\n"
    "from appmaster.agent.processgroup import ProcessGroup, redacting_copy\n"
    "envs = [{**os.environ, 'LOCAL_RANK': str(i)} for i in range(3)]\n"
    "group = ProcessGroup([sys.executable, '-c', sys.argv[1]], envs, 'worker-0',"
    " pathlib.Path(sys.argv[2]))\n"
    "print(' '.join(str(c.pid) for c in group.children), flush=True)\n"
    "group.forward_signals()\n"
    "group.wait()\n"
)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_no_process_outlives_its_agent(tmp_path: Path, signum: int) -> None:
    """SIGKILL: the kernel kills the children (PR_SET_PDEATHSIG); SIGTERM (YARN stopping the
    container): the agent passes it on."""
    agent = subprocess.Popen([sys.executable, "-c", AGENT, SCRIPT, str(tmp_path)],
                             stdout=subprocess.PIPE, text=True, cwd=REPO)
    pids = [int(pid) for pid in agent.stdout.readline().split()]
    assert len(pids) == 3 and all(alive(pid) for pid in pids)
    agent.send_signal(signum)
    agent.wait(10)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in pids)


def test_stop_from_another_thread_ends_every_process_with_sigterm(tmp_path: Path) -> None:
    """tfyarn ends a healthy task (the agent's stop key): each process gets SIGTERM, and
    the group ends at once, not after the scripts' 30 s."""
    import threading

    group = ProcessGroup([sys.executable, "-c", SCRIPT], envs(2), "worker-0", tmp_path)
    started = time.monotonic()
    threading.Timer(0.5, group.stop).start()
    end = group.wait()
    assert end.code == 128 + signal.SIGTERM and time.monotonic() - started < 10
    assert not any(alive(child.pid) for child in group.children)


def test_tensorboards_output_reaches_its_log_without_the_secret(tmp_path: Path) -> None:
    secret = "s3cr3t-path"
    child = subprocess.Popen([sys.executable, "-c", f"print('serving at http://h:1/{secret}/')"
                              "\nprint('second line')"], stdout=subprocess.PIPE)
    redacting_copy(child.stdout, tmp_path / "out", secret).join(30)
    child.wait()
    assert (tmp_path / "out").read_text() == "serving at http://h:1/<secret>/\nsecond line\n"


# A rank whose data loader runs in processes of its own: a forked worker (PyTorch's
# DataLoader default on Linux), a worker that is a fresh interpreter, and a program that is
# not Python (no handler: the signal's default would end it).
RANK_WITH_WORKERS = (
    "import multiprocessing, subprocess, sys, time\n"
    "def a_forked_loader_worker():\n    time.sleep(60)\n"
    "forked = multiprocessing.get_context('fork').Process(target=a_forked_loader_worker)\n"
    "forked.start()\n"
    "fresh = subprocess.Popen([sys.executable, '-c', 'import time\\n'\n"
    "                         'def a_fresh_loader_worker():\\n    time.sleep(60)\\n'\n"
    "                         'print(flush=True)\\na_fresh_loader_worker()'],\n"
    "                        stdout=subprocess.PIPE)\n"
    "fresh.stdout.readline()  # its interpreter is up, its handler set\n"
    "other = subprocess.Popen(['sleep', '60'])\n"
    "print(forked.pid, fresh.pid, other.pid, flush=True)\n"
    "time.sleep(60)\n"
)


def test_the_watchdogs_stack_request_reaches_the_ranks_own_processes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python process under the task writes its stacks into the task's log; a process
    that did not ask for the signal is spared it."""
    store = rendezvous.Store(on_put=lambda key, value: None)
    token = agentlink.new_token()
    server = rendezvous.serve(store, token, host="127.0.0.1", advertised="127.0.0.1")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where the agent keeps its processes' step files
    env = {**os.environ, **steps.process_environment(0, dict(os.environ))}
    group = ProcessGroup([sys.executable, "-c", RANK_WITH_WORKERS], [env], "worker-0", tmp_path)
    workers: list[int] = []
    try:
        stdout, stderr = tmp_path / "worker-0.stdout", tmp_path / "worker-0.stderr"
        deadline = time.monotonic() + 30
        while not stdout.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = [int(pid) for pid in stdout.read_text().split()]
        steps.follow_stack_requests(AgentLink(server.url, token), "worker 0", 0, group.children)
        store.put(registry.STACKS_KEY, json.dumps({"generation": 0, "why": "stalled"}).encode())
        while (("a_forked_loader_worker" not in stderr.read_text()
                or "a_fresh_loader_worker" not in stderr.read_text())
               and time.monotonic() < deadline):
            time.sleep(0.05)
        written = stderr.read_text()
        assert "a_forked_loader_worker" in written and "a_fresh_loader_worker" in written
        assert written.count("Current thread") == 3  # the rank and its two workers
        assert all(alive(pid) for pid in [*workers, group.children[0].pid])
    finally:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        group.stop()
        group.wait()
        stop_now(server)
