"""Kernels and runs on another host, through a real OpenSSH server on 127.0.0.1 (tests/support/sshd.py).

What a user on a laptop talking to a GPU box relies on: the first contact says which step failed and why; the
service kernel answers over SSH as it does here; a run trains to its end there, streams here, is recorded in both
histories, can be stopped, and survives its SSH client being killed (re-attached with every step exactly once);
files come back whole; nothing listens beyond loopback on either end.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import Notice, RunFailed, RunFinished, RunStarted, Step, to_dict
from workbench.core.history.runs import RunStore
from workbench.core.run.client import KernelClient
from workbench.core.run.launch import start_run
from workbench.core.run.process import ChildProcess
from workbench.core.run.protocol import PROTOCOL_VERSION, TOKEN_ENV
from workbench.core.run.remote.kernels import RemoteKernel, RemoteRun, RemoteSpare, fetch, host_runs
from workbench.core.run.run_request import Launch, RunRequest
from workbench.core.run.remote.service import RemoteService
from workbench.core.run.remote.ssh import Remote, RemoteError
from workbench.core.run.sweep import SweepSettings, load_trials, run_sweep

from ..helpers import descendants, of


def request(tmp_path: Path, **settings) -> RunRequest:
    return RunRequest(TrainConfig(**{"epochs": 1, **settings}), out_dir="", db=str(tmp_path / "local.sqlite"))


def host_log_steps(remote_out_dir: str) -> list[int]:
    lines = (Path(remote_out_dir) / "events.jsonl").read_text().splitlines()
    return [json.loads(line)["step"] for line in lines if json.loads(line)["type"] == "Step"]


# -- first contact ---------------------------------------------------------------------------------------------
def test_the_first_contact_names_the_hosts_workbench_and_protocol(remote, ssh_server):
    hello = remote.hello()
    assert hello.protocol == PROTOCOL_VERSION
    assert hello.data_dir == str(ssh_server.host_data)  # the host's own folders, not this side's


@pytest.mark.parametrize("text", ["", "user@", "-oProxyCommand=x", "host:99999", "host:0", "a b"])
def test_an_address_that_is_not_a_host_is_refused_before_anything_runs(text):
    with pytest.raises(RemoteError) as caught:
        Remote.parse(text)
    assert caught.value.step == "address"


def test_a_hosts_name_in_known_hosts_carries_its_port_unless_it_is_ssh_s_own():
    assert Remote.parse("me@box").known_hosts_name == "box"
    assert Remote.parse("me@box:22").known_hosts_name == "box"  # ssh writes port 22's keys under the bare name
    assert Remote.parse("box:2222").known_hosts_name == "[box]:2222"


def test_the_ssh_command_logs_in_as_the_user_on_the_port_with_the_options_first(monkeypatch):
    monkeypatch.delenv("WORKBENCH_SSH", raising=False)
    command = Remote.parse("me@box:2222", "/opt/wb/bin/python").ssh_command("hello")
    assert command[:2] == ["ssh", "-T"] and command[-2:] == ["box", "/opt/wb/bin/python -m "
                                                                     "workbench.core.run.remote.host hello"]
    options = command[2:-2]
    assert options[options.index("-l") + 1] == "me" and options[options.index("-p") + 1] == "2222"
    for option in ("BatchMode=yes", "StrictHostKeyChecking=yes", "ServerAliveInterval=5"):
        assert options[options.index(option) - 1] == "-o"


def test_a_changed_host_key_is_refused_and_says_so(remote, ssh_server, monkeypatch, tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    kind, key = (tmp_path / "other.pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{ssh_server.port} {kind} {key}\n")
    monkeypatch.setenv("WORKBENCH_SSH", ssh_server.ssh_command.replace(str(ssh_server.folder / "known_hosts"),
                                                                       str(known)))
    with pytest.raises(RemoteError) as caught:
        remote.hello()
    assert caught.value.step == "host key" and "has changed" in str(caught.value)
    assert f"ssh-keygen -R '[127.0.0.1]:{ssh_server.port}'" in caught.value.hint  # as known_hosts names it
    assert f"`ssh -p {ssh_server.port} " in caught.value.hint  # ssh takes no host:port


def test_an_unknown_host_key_is_refused_never_accepted(remote, ssh_server, monkeypatch, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    monkeypatch.setenv("WORKBENCH_SSH", ssh_server.ssh_command.replace(str(ssh_server.folder / "known_hosts"),
                                                                       str(known)))
    with pytest.raises(RemoteError) as caught:
        remote.hello()
    assert caught.value.step == "host key" and "not known" in str(caught.value)
    assert known.read_text() == ""  # nothing was added behind the user's back
    assert f"`ssh -p {ssh_server.port} {remote.user}@127.0.0.1`" in caught.value.hint


@pytest.mark.parametrize("policy", ["accept-new", "no"])
def test_an_unknown_host_key_is_refused_whatever_the_users_ssh_config_says(remote, ssh_server, monkeypatch, tmp_path,
                                                                        policy):
    """The user's ~/.ssh/config may accept new keys (or check none): Workbench's own option comes first on ssh's
    command line, and ssh takes the first value it is given."""
    known = tmp_path / "known_hosts"
    known.write_text("")
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n    StrictHostKeyChecking {policy}\n    UserKnownHostsFile {known}\n")
    command = ssh_server.ssh_command.replace("-F /dev/null", f"-F {config}")
    monkeypatch.setenv("WORKBENCH_SSH", command.replace(f"-o UserKnownHostsFile={ssh_server.folder / 'known_hosts'}",
                                                        ""))
    with pytest.raises(RemoteError) as caught:
        remote.hello()
    assert caught.value.step == "host key" and "not known" in str(caught.value)
    assert known.read_text() == ""


def test_the_hosts_workbench_is_this_checkouts(ssh_server):
    """The remote side of these tests runs the code under test, not a workbench installed elsewhere."""
    from ..support.sshd import CHECKOUT

    probe = "import workbench; print(workbench.__file__)"
    found = subprocess.run([*ssh_server.ssh_command.split(), "-p", str(ssh_server.port), "127.0.0.1",
                            f"{ssh_server.remote_python} -c '{probe}'"], capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).is_relative_to(CHECKOUT / "workbench")


def test_a_key_the_host_does_not_take_is_an_authentication_step_never_a_prompt(remote, ssh_server, monkeypatch,
                                                                               tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stranger")], check=True)
    monkeypatch.setenv("WORKBENCH_SSH", ssh_server.ssh_command.replace(str(ssh_server.folder / "user_key"),
                                                                       str(tmp_path / "stranger")))
    with pytest.raises(RemoteError) as caught:
        remote.hello()  # BatchMode: no password prompt to wait on
    assert caught.value.step == "authentication" and "could not log in" in str(caught.value)
    assert "ssh-add" in caught.value.hint
    assert f"`ssh -o BatchMode=yes -p {ssh_server.port} {remote.user}@127.0.0.1 true`" in caught.value.hint


def test_a_host_without_workbench_says_how_to_install_it(remote, tmp_path):
    bare = tmp_path / "bare-python"  # a Python that cannot import workbench
    bare.write_text(f"#!/bin/sh\ncd /\nexec env -u PYTHONPATH {os.path.realpath('/usr/bin/python3')} -I \"$@\"\n")
    bare.chmod(0o755)
    with pytest.raises(RemoteError) as caught:
        Remote.parse(str(remote), str(bare)).hello()
    assert caught.value.step == "remote start"
    assert "workbench is not installed" in str(caught.value) and "pip install" in caught.value.hint


def test_a_missing_remote_python_is_named(remote):
    with pytest.raises(RemoteError) as caught:
        Remote.parse(str(remote), "/no/such/python").hello()
    assert caught.value.step == "remote start" and "/no/such/python was not found" in str(caught.value)


def test_a_host_on_another_protocol_is_refused_with_both_versions(remote, tmp_path):
    old = tmp_path / "old-python"  # answers the first contact as a protocol-1 Workbench would
    old.write_text("#!/bin/sh\necho '{\"workbench\": \"0.0.9\", \"protocol\": 1, \"python\": \"/usr/bin/python3\", "
                   "\"python_version\": \"3.10\", \"hostname\": \"old\", \"data_dir\": \"/tmp\"}'\n")
    old.chmod(0o755)
    with pytest.raises(RemoteError) as caught:
        Remote.parse(str(remote), str(old)).hello()
    assert caught.value.step == "version"
    assert f"runs workbench 0.0.9 (protocol 1), this window needs protocol {PROTOCOL_VERSION}" in str(caught.value)


def test_an_unreachable_port_fails_fast_as_a_connection_step(remote, ssh_server):
    closed = Remote.parse(f"127.0.0.1:{_closed_port()}", ssh_server.remote_python)
    with pytest.raises(RemoteError) as caught:
        closed.hello()
    assert caught.value.step == "connection" and str(caught.value).startswith(f"cannot reach {closed} ")
    assert "refused" in str(caught.value).lower() and "check the host and port" in caught.value.hint


def test_a_name_that_does_not_resolve_is_said(remote):
    with pytest.raises(RemoteError) as caught:
        Remote.parse("no-such-host.invalid").hello()
    assert caught.value.step == "name resolution"


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the probe is


# -- the service kernel over SSH -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def remote_service(ssh_server):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_SSH", ssh_server.ssh_command)
        remote = Remote.parse(ssh_server.address, ssh_server.remote_python)
        client = KernelClient(spawn=lambda: RemoteKernel(remote))
        yield RemoteService(client, remote), client
        client.close()


def test_the_service_kernel_answers_over_ssh(remote_service, trained_run):
    service, client = remote_service
    capabilities = service.capabilities().result(120)
    assert capabilities.devices and client.ready
    blank = __import__("numpy").zeros((28, 28), dtype="uint8")
    predictions = service.predict(trained_run.checkpoint, [blank]).result(60)
    assert len(predictions.probabilities) == 1 and abs(sum(predictions.probabilities[0]) - 1) < 1e-3


def transfers(ssh_server) -> list[Path]:
    folder = ssh_server.host_data / "transfers"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_a_checkpoint_this_computer_has_is_copied_to_the_host_once(remote_service, trained_run, ssh_server,
                                                                   tmp_path):
    service, _ = remote_service
    mine = tmp_path / "mine.pt"
    mine.write_bytes(trained_run.checkpoint.read_bytes())
    before = transfers(ssh_server)
    blank = __import__("numpy").zeros((28, 28), dtype="uint8")
    for _ in range(2):
        service.predict(mine, [blank]).result(60)
    [copied] = [folder for folder in transfers(ssh_server) if folder not in before]
    assert (copied / "mine.pt").read_bytes() == mine.read_bytes()


def test_exports_and_reports_are_written_there_and_copied_back_here(remote_service, trained_run, ssh_server,
                                                                     tmp_path):
    service, _ = remote_service
    progress: list[tuple[int, int]] = []
    service.progress = lambda done, total: progress.append((done, total))
    written = service.export_checkpoint(trained_run.checkpoint, tmp_path / "mine" / "model.pt").result(120)
    assert [Path(path).name for path in written.paths] == ["model.pt", "model.safetensors"]
    assert all(Path(path).parent == tmp_path / "mine" and Path(path).is_file() for path in written.paths)
    assert any(path.name == "model.pt" for folder in transfers(ssh_server) for path in folder.iterdir())
    assert progress and progress[-1][0] == progress[-1][1]
    report = service.write_report([trained_run.run_id], tmp_path / "report.html", db=trained_run.db).result(300)
    assert [Path(path).name for path in report.paths] == ["report.html", "report.json"]
    assert "<html" in (tmp_path / "report.html").read_text()[:500].lower()


def test_a_remote_kernel_that_dies_is_started_again(remote_service):
    service, client = remote_service
    service.capabilities().result(120)
    first = client._process.process.pid
    states: queue.Queue[str] = queue.Queue()
    client.listen(lambda state, detail: states.put(state))
    os.killpg(first, signal.SIGKILL)  # its SSH client: the session is gone
    assert next(state for state in iter(lambda: states.get(timeout=60), None) if state != "ready") == "crashed"
    assert next(state for state in iter(lambda: states.get(timeout=120), None) if state == "ready")
    assert service.capabilities().result(120).devices  # answered by the next kernel
    assert client._process.process.pid != first


# -- runs on the host ------------------------------------------------------------------------------------------
def test_a_run_trains_there_and_is_recorded_on_both_sides(remote, tmp_path, ssh_server):
    events: list = []
    run = RemoteRun(remote, db=str(tmp_path / "local.sqlite"))
    result = start_run(request(tmp_path), events.append, process=run)
    assert isinstance(result, RunFinished) and not result.stopped, result
    assert result.results.checkpoint.startswith(str(ssh_server.host_data))  # the file is on the host
    steps = [event.step for event in of(events, Step)]
    assert steps == list(range(1, result.steps + 1)) == host_log_steps(run.started.out_dir)
    with RunStore(tmp_path / "local.sqlite") as store:
        [local] = store.list()
    assert local.host == str(remote) and local.status == "finished" and local.out_dir == run.started.out_dir
    with RunStore(ssh_server.host_data / "runs.sqlite") as store:
        assert any(record.out_dir == run.started.out_dir for record in store.list())
    copied = fetch(remote, result.results.checkpoint, tmp_path / "back" / "checkpoint.pt")
    assert copied.read_bytes() == Path(result.results.checkpoint).read_bytes()
    # A folder copied back replaces the copy made before, whole: nothing of the old one stays.
    target = tmp_path / "back" / "run"
    target.mkdir()
    (target / "from-an-earlier-copy.txt").write_text("old")
    fetch(remote, run.started.out_dir, target)
    host_folder = Path(run.started.out_dir)
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in host_folder.iterdir())
    assert (target / "events.jsonl").read_bytes() == (host_folder / "events.jsonl").read_bytes()


def test_a_run_starts_in_the_spare_kernel_and_an_unclaimed_spare_ends_there(remote, tmp_path, ssh_server):
    spare = RemoteSpare(remote)
    held = ssh_server.host_data / "remote-runs" / spare.key
    assert held.is_dir() and spare.key not in {info.key for info in host_runs(remote)}  # not a run (yet)
    run = RemoteRun(remote, db=str(tmp_path / "local.sqlite"), spare=spare)
    result = run.run(request(tmp_path), lambda event: None, threading.Event())
    assert isinstance(result, RunFinished) and run.started.key == spare.key  # trained in the spare's kernel
    assert spare.session.stderr.closed  # let go of once claimed
    assert {info.key: info.status for info in host_runs(remote)}[spare.key] == "finished"
    # Unclaimed: closed by the window, or its holder on the host killed: its supervisor and kernel end, and its
    # folder goes.
    for end in ("close", "kill the holder"):
        unused = RemoteSpare(remote)
        folder = ssh_server.host_data / "remote-runs" / unused.key
        supervisor = int((folder / "pid").read_text())
        if end == "close":
            unused.close()
        else:
            os.kill(int((folder / "spare").read_text()), signal.SIGKILL)
        wait_for(lambda: not folder.exists() and not alive(supervisor), f"the spare to end ({end})")
        unused.close()


def wait_for(condition, what: str, timeout_s: float = 60) -> None:
    """Poll a condition on the host's side (another process: nothing here can be waited on)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout_s:.0f} s for {what}"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"  # a zombie has ended


def test_a_run_is_stopped_from_here(remote, tmp_path):
    stop = threading.Event()

    def emit(event):
        if isinstance(event, Step) and event.step == 5:
            stop.set()

    result = RemoteRun(remote, db=str(tmp_path / "local.sqlite")).run(request(tmp_path, epochs=50), emit, stop)
    assert isinstance(result, RunFinished) and result.stopped and result.steps < 50 * 125


@pytest.mark.parametrize("leave", ["detach", "terminate"])
def test_leaving_a_run_from_another_thread_stops_following_and_it_trains_on(remote, tmp_path, leave):
    """The window closes leaving the run there: `detach` (at the next poll) or `terminate` (the session hung up
    under the reader) ends the follow as "detached", with no error, and the host's run goes on to its end."""
    run = RemoteRun(remote, db=str(tmp_path / "local.sqlite"))
    left: list[threading.Thread] = []

    def emit(event):
        if isinstance(event, Step) and event.step == 5 and not left:
            left.append(threading.Thread(target=getattr(run, leave)))
            left[0].start()

    result = run.run(request(tmp_path), emit, threading.Event())
    left[0].join()
    assert isinstance(result, RunFailed) and result.kind == "detached", result
    with RunStore(tmp_path / "local.sqlite") as store:
        [local] = store.list()
    assert local.status == "running" and local.host == str(remote)  # until attached again
    again = RemoteRun(remote, db=str(tmp_path / "local.sqlite")).attach(run.started.key, lambda e: None,
                                                                       threading.Event())
    assert isinstance(again, RunFinished) and not again.stopped  # it trained on to its end, unstopped


def test_killing_the_ssh_client_mid_run_loses_no_step_and_repeats_none(remote, tmp_path, ssh_server):
    run = RemoteRun(remote, db=str(tmp_path / "local.sqlite"))
    events: list = []
    killed: list[int] = []

    def emit(event):
        events.append(event)
        if isinstance(event, Step) and event.step == 20 and not killed:
            killed.append(run._session.process.pid)
            os.killpg(killed[0], signal.SIGKILL)  # the laptop's network drops

    result = run.run(request(tmp_path, epochs=3), emit, threading.Event())
    assert killed and isinstance(result, RunFinished), result
    notices = [event.message for event in of(events, Notice)]
    assert any("lost the connection" in text for text in notices)
    assert any("reconnected" in text for text in notices)
    steps = [event.step for event in of(events, Step)]
    assert steps == list(range(1, result.steps + 1)) == host_log_steps(run.started.out_dir)
    assert len(of(events, RunStarted)) == 1
    # Every event of the host's log arrived once, in order (not only the steps): this side's own notices aside.
    ours = ("training on ", "lost the connection", "reconnected")
    arrived = [to_dict(e) for e in events if not (isinstance(e, Notice) and e.message.startswith(ours))]
    log = ssh_server.host_data / "remote-runs" / run.started.key / "events.jsonl"
    assert arrived == [json.loads(line) for line in log.read_text().splitlines()]
    with RunStore(tmp_path / "local.sqlite") as store:
        [local] = store.list()
        assert [e.step for e in of(store.get(local.id, with_events=True).events, Step)] == steps


def test_a_finished_run_is_listed_and_attached_again_with_every_event(remote, tmp_path):
    first: list = []
    run = RemoteRun(remote, db=str(tmp_path / "local.sqlite"))
    run.run(request(tmp_path), first.append, threading.Event())
    [info] = [info for info in host_runs(remote) if info.key == run.started.key]
    assert info.status == "finished" and info.events == len(first) - 1  # the local "training on" notice
    again: list = []
    result = RemoteRun(remote, db=str(tmp_path / "local.sqlite")).attach(run.started.key, again.append,
                                                                        threading.Event())
    assert isinstance(result, RunFinished)
    assert [type(e) for e in again] == [type(e) for e in first[1:]]
    with RunStore(tmp_path / "local.sqlite") as store:
        assert len(store.list()) == 1  # attaching again replaced this side's record, not doubled it


def test_attaching_again_reads_only_what_this_computers_record_has_not_unless_it_is_not_the_hosts_log(
        remote, tmp_path, ssh_server):
    """Left mid-run, then attached again: the run so far comes from this computer's history, only the events after
    its record over the wire, into the same record (a cursor, not a replay of the whole log). A record whose events
    are not the host's log up to there (it left some out, or holds others) is not resumed: attaching again replays
    the whole log into a record of its own, each event once."""
    db = str(tmp_path / "local.sqlite")
    run = RemoteRun(remote, db=db)

    def leave_at_step_20(event):
        if isinstance(event, Step) and event.step == 20:
            run.detach()

    left = run.run(request(tmp_path, epochs=3), leave_at_step_20, threading.Event())
    assert isinstance(left, RunFailed) and left.kind == "detached"
    with RunStore(db) as store:
        [record] = store.list()
        kept = len(store.get(record.id, with_events=True).events)
    assert kept > 20
    again: list = []
    follower = RemoteRun(remote, db=db)
    result = follower.attach(run.started.key, again.append, threading.Event())
    assert isinstance(result, RunFinished), result
    log = ssh_server.host_data / "remote-runs" / run.started.key / "events.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [to_dict(e) for e in again] == lines  # every event once, in order
    assert follower.resumed_from == kept and follower.received == len(lines)  # only the rest came by the wire
    with RunStore(db) as store:
        [same] = store.list()
        assert same.id == record.id and same.status == "finished"
        assert [to_dict(e) for e in store.get(same.id, with_events=True).events] == lines
        last = store.last_seq(same.id)  # its last event (the run's end) is another one here: as many, not the same
        store.db.execute("DELETE FROM events WHERE run_id = ? AND seq = ?", (same.id, last))
        store.append_events(same.id, last, [Notice("info", "only here")])
    again = []
    afresh = RemoteRun(remote, db=db)
    assert isinstance(afresh.attach(run.started.key, again.append, threading.Event()), RunFinished)
    assert afresh.resumed_from == 0 and [to_dict(e) for e in again] == lines
    with RunStore(db) as store:
        [written] = store.list()
        assert [to_dict(e) for e in store.get(written.id, with_events=True).events] == lines


def test_attaching_to_a_run_the_host_does_not_have_is_a_clear_failure(remote, tmp_path):
    result = RemoteRun(remote, db=str(tmp_path / "local.sqlite")).attach("no-such-run", lambda e: None,
                                                                        threading.Event())
    assert isinstance(result, RunFailed) and "no run 'no-such-run'" in result.message


def test_a_run_that_fails_there_ends_here_with_its_failure_and_is_listed_as_failed(remote, tmp_path):
    failed = RemoteRun(remote, db=str(tmp_path / "local.sqlite")).run(
        request(tmp_path, dataset="imagefolder", data_root="/no/such/folder"), lambda e: None, threading.Event())
    assert isinstance(failed, RunFailed) and failed.kind == "data", failed
    key = next(info.key for info in reversed(host_runs(remote)) if info.status == "failed")
    again = RemoteRun(remote, db=str(tmp_path / "local.sqlite")).attach(key, lambda e: None, threading.Event())
    assert again == failed  # replayed to its end: the failure is the log's last event


@pytest.mark.slow
def test_a_torchrun_launch_trains_there_with_every_process(remote, tmp_path):
    """`--nproc-per-node 2` on the host: its supervisor starts torchrun there, as `workbench train` does here."""
    events: list = []
    launched = RunRequest(TrainConfig(epochs=1, max_steps=12, batch_size=64, device="cpu"), out_dir="",
                          db=str(tmp_path / "local.sqlite"), launch=Launch(nproc_per_node=2))
    run = RemoteRun(remote, db=launched.db, spare=RemoteSpare(remote))  # a spare's single kernel is not used
    result = run.run(launched, events.append, threading.Event())
    assert isinstance(result, RunFinished) and result.steps == 12, result
    [started] = of(events, RunStarted)
    assert started.world_size == 2
    assert [event.step for event in of(events, Step)] == list(range(1, 13))


def test_a_sweeps_trials_train_there_and_the_study_stays_here(remote, tmp_path, ssh_server):
    db = tmp_path / "local.sqlite"
    base = TrainConfig(hidden_dim=64, batch_size=250)  # big batches: few steps per trial
    trials = run_sweep(base, SweepSettings("there", ("lr",), "random", trials=1), epochs=1, cuda_devices=0, db=db,
                       runs_dir=tmp_path / "runs", remote=remote)
    assert [trial.state for trial in trials] == ["complete"]
    assert not (tmp_path / "runs").exists()  # no empty folder here for a run that trains there
    with RunStore(db) as store:
        records = [store.get(trial.run_id) for trial in trials]
    assert all(record.host == str(remote) and record.status == "finished" for record in records)
    assert all(Path(record.out_dir).is_relative_to(ssh_server.host_data) for record in records)
    assert [record.config["lr"] for record in records] == [trial.params["lr"] for trial in trials]
    assert load_trials("there", db) == trials and (tmp_path / "sweeps.sqlite").is_file()  # the study is here
    on_host = {info.out_dir for info in host_runs(remote)}
    assert {record.out_dir for record in records} <= on_host


def test_nothing_listens_beyond_loopback_and_no_secret_is_on_a_command_line(remote, tmp_path, ssh_server):
    """Mid-run, on both ends: every listening socket of ours is on loopback, and no process's command line (what
    `ps` shows every user) holds a kernel's connection secret: a 32-hex-digit token, which travels in the
    environment (a forked kernel's is not even in its /proc/PID/environ, so the shape is what is looked for)."""
    seen: list[list[str]] = []
    command_lines: list[str] = []

    def emit(event):
        if isinstance(event, Step) and event.step == 10:
            ours = {os.getpid(), ssh_server.process.pid, *descendants(os.getpid()),
                    *descendants(ssh_server.process.pid)}
            seen.append(listening_addresses(ours))
            command_lines.extend(every_command_line())

    result = RemoteRun(remote, db=str(tmp_path / "local.sqlite")).run(request(tmp_path), emit, threading.Event())
    assert isinstance(result, RunFinished) and seen
    assert seen[0] and all(address in ("127.0.0.1", "::1") for address in seen[0]), seen[0]
    assert any("remote.host" in line and "supervise" in line for line in command_lines)  # the host's end, seen
    token = re.compile(r"\b[0-9a-f]{32}\b")
    assert token.fullmatch(ChildProcess.new_token())  # the shape of a real one
    assert not [line for line in command_lines if token.search(line) or TOKEN_ENV in line]


def every_command_line() -> list[str]:
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue  # ended meanwhile
    return lines


def listening_addresses(pids: set[int]) -> list[str]:
    """The local address of every listening TCP socket that one of `pids` holds (both ends of the test's SSH are
    on this machine: sshd and what it started, this process and its children), from /proc/net/tcp{,6}."""
    import ipaddress

    inodes = set()
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        inodes |= {link[len("socket:["):-1] for link in links if link.startswith("socket:[")}
    found = []
    for name, size in (("tcp", 4), ("tcp6", 16)):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(fields[1].split(":")[0])
            words = b"".join(raw[i:i + 4][::-1] for i in range(0, size, 4))
            found.append(str(ipaddress.ip_address(words)))
    return found
