"""The queue of runs (history/queue.py, run/queue_worker.py, `workbench queue`): its order and changes, two runners
racing for one history that never start one entry twice, a runner killed mid-run (and one of an earlier boot) whose
entry becomes interrupted and is retried, and a worker that trains the entries in order, a bad one failing alone and
a running one cancelled."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import Step
from workbench.core.history.queue import (CANCELLED, FAILED, FINISHED, INTERRUPTED, QUEUED, RUNNING, QueueError,
                                          RunQueue, this_runner)
from workbench.core.history.runs import RunStore

TINY = TrainConfig(device="cpu", epochs=1, max_steps=20, hidden_dim=16)


def test_entries_keep_their_order_move_cancel_retry_and_pause(tmp_path):
    with RunQueue(tmp_path / "h.sqlite") as queue:
        first, second, third = (queue.add(TINY.replace(lr=lr)) for lr in (0.1, 0.01, 0.001))
        queue.move(third, 0)
        assert [entry.id for entry in queue.entries()] == [third, first, second]
        assert queue.entry(third).title == "cpu · epochs=1 · hidden_dim=16 · lr=0.001 · max_steps=20"
        queue.move(third, 5)  # past the end: last
        assert [entry.id for entry in queue.entries()] == [first, second, third]
        assert queue.cancel(second) == CANCELLED
        with pytest.raises(QueueError, match="only a queued entry moves"):
            queue.move(second, 0)
        queue.pause()
        assert queue.paused and queue.claim() is None  # paused: nothing starts
        queue.pause(False)
        claimed = queue.claim()
        assert claimed.id == first and claimed.state == RUNNING and claimed.runner == this_runner()
        with pytest.raises(QueueError, match="is running") as refused:
            queue.remove(first)
        assert refused.value.hint == f"cancel it first: workbench queue cancel {first}"
        with pytest.raises(QueueError, match="only a queued entry is edited"):
            queue.update(first, TINY)  # it trains what it was given
        queue.update(third, TINY.replace(lr=0.5))
        assert queue.entry(third).config.lr == 0.5
        assert queue.cancel(first) == RUNNING and queue.cancel_asked(first)  # its runner stops it
        with pytest.raises(QueueError, match="only a failed, cancelled or interrupted entry is retried"):
            queue.retry(first)
        queue.retry(second)
        assert queue.claim().id == second  # queued again, at its place: before the third
        queue.remove(third)
        assert [entry.id for entry in queue.entries()] == [first, second]


CLAIMER = textwrap.dedent("""
    import sys
    from workbench.core.history.queue import RunQueue
    claimed = []
    with RunQueue(sys.argv[1]) as queue:
        print("ready", flush=True)
        sys.stdin.readline()  # both start claiming at once
        while (entry := queue.claim()) is not None:
            claimed.append(entry.id)
    print(" ".join(map(str, claimed)))
""")


def test_two_runners_racing_for_one_history_never_claim_the_same_entry(tmp_path):
    db = tmp_path / "h.sqlite"
    with RunQueue(db) as queue:
        ids = {queue.add(TINY) for _ in range(60)}
    runners = [subprocess.Popen([sys.executable, "-c", CLAIMER, str(db)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True) for _ in range(2)]
    assert all(runner.stdout.readline().strip() == "ready" for runner in runners)
    for runner in runners:
        runner.stdin.write("go\n")
        runner.stdin.flush()
    claimed = [set(map(int, runner.communicate(timeout=120)[0].split())) for runner in runners]
    assert claimed[0].isdisjoint(claimed[1]) and claimed[0] | claimed[1] == ids


def test_an_entry_whose_runner_is_gone_or_of_an_earlier_boot_is_interrupted_and_retried(tmp_path):
    with RunQueue(tmp_path / "h.sqlite") as queue:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout.strip()
        machine, boot, _pid = this_runner().rsplit(":", 2)
        killed = queue.add(TINY)
        queue.claim(runner=f"{machine}:{boot}:{dead}")  # its process has ended
        rebooted = queue.add(TINY)
        queue.claim(runner=f"{machine}:earlier0:{os.getpid()}")  # a live pid, but of another boot
        elsewhere = queue.add(TINY)
        queue.claim(runner=f"other-machine:{boot}:1")  # another machine's runner: only it can tell
        states = {entry.id: entry.state for entry in queue.entries()}  # reading recovers
        assert states == {killed: INTERRUPTED, rebooted: INTERRUPTED, elsewhere: RUNNING}
        assert "its runner stopped while it trained" in queue.entry(killed).error
        queue.retry(killed)
        assert queue.entry(killed).state == QUEUED and queue.entry(killed).error == ""


@pytest.mark.slow  # real runs
def test_the_worker_trains_in_order_a_bad_entry_fails_alone_and_a_cancelled_one_stops(tmp_path, monkeypatch):
    from workbench.core.run.queue_worker import work

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))  # the place locks
    db = str(tmp_path / "h.sqlite")
    with RunQueue(db) as queue:
        long = queue.add(TINY.replace(max_steps=100_000, epochs=50), label="long: cancelled at its first step")
        gone = queue.add(TINY.replace(model=str(tmp_path / "gone.py:Net")), label="its model file is gone")
        good = queue.add(TINY.replace(seed=3))
    cancelled = []

    def cancel_long(event) -> None:
        if isinstance(event, Step) and not cancelled:
            cancelled.append(event.step)
            with RunQueue(db) as other:  # as another window or `workbench queue cancel` would
                other.cancel(long)

    said = []
    done = work(db, threading.Event(), cuda_devices=0, runs_dir=tmp_path / "runs", say=said.append,
                emit=cancel_long)
    assert [(entry.id, state) for entry, state in done.ended] == [(long, CANCELLED), (gone, FAILED),
                                                                   (good, FINISHED)]
    with RunQueue(db) as queue:
        entries = {entry.id: entry for entry in queue.entries()}
    assert "does not exist" in entries[gone].error
    assert entries[good].best_val_accuracy is not None and entries[good].run_id is not None
    with RunStore(db) as store:
        assert store.get(entries[good].run_id).status == "finished"
        assert store.get(entries[long].run_id).status == "stopped"
    assert done.summary().startswith("the queue is done: 1 finished, 1 failed, 1 cancelled; best val accuracy")
    assert said[0].startswith(f"entry {long} (long: cancelled at its first step) starts on this computer")
    # The cancelled one goes on from its run's checkpoint; one whose run never started, or a finished one, cannot.
    from workbench.cli import main

    assert main(["queue", "--db", db, "retry", str(long), "--resume"]) == 0  # as `workbench queue retry N --resume`
    with RunQueue(db) as queue, RunStore(db) as store:
        checkpoint = queue.entry(long).config.resume
        assert checkpoint == store.get(entries[long].run_id).checkpoint and os.path.isfile(checkpoint)
        assert queue.entry(long).state == QUEUED and queue.entry(long).config.resume == checkpoint
        assert queue.entry(long).config.epochs == 50  # to the end it was set for
        with pytest.raises(QueueError, match="is failed: only an interrupted or cancelled entry whose run started"):
            queue.resume(gone)
        with pytest.raises(QueueError, match="is finished"):
            queue.resume(good)


@pytest.mark.slow  # real runs
def test_a_runner_killed_mid_run_leaves_its_entry_interrupted_and_its_run_ends_too(tmp_path):
    db = str(tmp_path / "h.sqlite")
    env = {**os.environ, "WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    with RunQueue(db) as queue:
        entry = queue.add(TINY.replace(max_steps=100_000, epochs=50))
    runner = subprocess.Popen([sys.executable, "-m", "workbench", "queue", "--db", db, "work"], env=env,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert runner.stdout.readline().startswith(f"entry {entry} ")  # it starts
    with RunQueue(db) as queue:
        deadline = time.monotonic() + 120
        while not _has_a_step(db) and time.monotonic() < deadline:  # training: its run has steps recorded
            time.sleep(0.2)
        os.killpg(runner.pid, signal.SIGKILL)  # the runner and its kernel: a crash, a power cut
        runner.wait()
        assert queue.entry(entry).state == RUNNING  # as the runner left it
        assert [e.state for e in queue.entries()] == [INTERRUPTED]  # seen gone
        assert socket.gethostname() in queue.entry(entry).runner
    deadline = time.monotonic() + 120  # its kernel, left without a parent, stops after its step and says so
    while _statuses(db) == ["running"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _statuses(db) in (["stopped"], ["interrupted"])  # its checkpoint kept, or its record marked


def _statuses(db: str) -> list[str]:
    with RunStore(db) as store:  # opening recovers the runs whose process is gone
        return [run.status for run in store.list()]


def _has_a_step(db: str) -> bool:
    """A block of its steps is recorded (read as the Runs dock reads a run being recorded)."""
    with sqlite3.connect(db) as history:
        try:
            return history.execute("SELECT COUNT(*) FROM step_blocks").fetchone()[0] > 0
        except sqlite3.OperationalError:  # the run's record not made yet (the queue was there first)
            return False


@pytest.mark.slow  # real runs
def test_an_entry_for_a_host_trains_there_and_is_recorded_here(loopback_hosts, tmp_path):
    """`workbench queue add --host` and `queue work --host`: the entry trains on the host over SSH (a loopback
    sshd), recorded in this computer's history with its host; a runner of this computer does not claim it."""
    host = loopback_hosts[0]
    db = str(tmp_path / "h.sqlite")
    env = {**os.environ, "WORKBENCH_SSH": host.ssh_command}
    queue = [sys.executable, "-m", "workbench", "queue", "--db", db]
    added = subprocess.run([*queue, "add", "--host", host.address, "--remote-python", host.remote_python,
                            "--device", "cpu", "--epochs", "1", "--max-steps", "20", "--hidden-dim", "16"],
                           env=env, capture_output=True, text=True)
    assert added.returncode == 0 and added.stdout.startswith(f"queued entry 1 on {host.address}"), added.stderr
    with RunQueue(db) as claiming:
        assert claiming.claim() is None  # the host's entry is not this computer's to train
    there = subprocess.run([*queue, "work", "--host", host.address], env=env, capture_output=True, text=True)
    assert there.returncode == 0 and "entry 1 finished" in there.stdout, there.stdout + there.stderr
    with RunQueue(db) as queued:
        assert [(entry.state, entry.where) for entry in queued.entries()] == [(FINISHED, host.address)]
    with RunStore(db) as store:
        [run] = store.list()
        assert run.status == "finished" and run.host == host.address


def test_an_entry_is_estimated_from_the_latest_finished_run_like_it_and_not_without_one(tmp_path, capsys):
    """Its steps at the samples/s of the latest finished run of its dataset, backend, device, hidden and batch
    size; an epoch's steps from a run that trained every epoch of the dataset. No such run: no estimate."""
    from workbench.core.history.queue_eta import estimate_seconds

    db = tmp_path / "h.sqlite"
    with RunStore(db) as store:
        for config, steps, speed in ((TINY.replace(max_steps=None, epochs=2, batch_size=50), 200, 1000.0),
                                     (TINY.replace(batch_size=32), 20, 640.0)):
            run_id = store.start_run(config.to_dict())
            store.db.execute("UPDATE runs SET status = 'finished', steps = ?, samples_per_s = ? WHERE id = ?",
                             (steps, speed, run_id))
    with RunQueue(db) as queue:
        full = TINY.replace(max_steps=None, epochs=3, batch_size=32)  # an epoch: 100 × 50 samples = 157 steps
        assert estimate_seconds(queue.db, full) == 3 * 157 * 32 / 640.0
        assert estimate_seconds(queue.db, TINY.replace(batch_size=32)) == 20 * 32 / 640.0  # its max_steps
        assert estimate_seconds(queue.db, TINY.replace(batch_size=32, hidden_dim=64)) is None  # never measured
        entry = queue.add(TINY.replace(batch_size=32))
        assert queue.estimates(queue.entries()) == {entry: 1.0}
        from workbench.cli import main

        main(["queue", "--db", str(db)])
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].split() == ["id", "state", "where", "run", "best", "acc", "ends", "in", "what"]
    assert listed[1].split()[:4] == [str(entry), "queued", "this", "computer"] and "≈ 0:01" in listed[1]
    assert listed[2] == "1 queued"


def test_a_place_trains_one_entry_at_a_time_whoever_works_it(tmp_path, monkeypatch):
    """The place's lock: held by another runner (the window training an entry here), a worker claims nothing
    until it is let go, and then it takes it."""
    from workbench.core.run.queue_worker import release_place, try_place, work

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    db = str(tmp_path / "h.sqlite")
    with RunQueue(db) as queue:
        entry = queue.add(TINY)
    held = try_place("")
    assert held is not None and try_place("") is None and try_place("gpu-box") is not None
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()  # the worker gives up waiting then
    done = work(db, stop, cuda_devices=0, runs_dir=tmp_path / "runs", say=lambda line: None)
    release_place(held)
    with RunQueue(db) as queue:
        assert done.ended == [] and queue.entry(entry).state == QUEUED  # it waited, and claimed nothing
    again = try_place("")
    assert again is not None
    release_place(again)
