"""Hosts that do not behave, through the real sshd (tests/support/sshd.py): a login that prints a banner, a host on a
newer or older protocol, a host that sends a line that is not the protocol or an event this Workbench cannot read in
the middle of a run. Each ends in one clear line that says what to do — never a traceback, never a reconnection loop
(another session would meet the same output)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunFailed
from workbench.core.run.protocol import PROTOCOL_VERSION, RUN_JOB_ID, event_line
from workbench.core.run.remote.kernels import RemoteRun
from workbench.core.run.run_request import RunRequest
from workbench.core.run.remote.ssh import Remote, RemoteError

from ..helpers import assert_one_error_line, call


def wrapper(tmp_path: Path, name: str, body: str) -> str:
    """A remote Python: a shell script on the host, `body` around the real one (`$REAL "$@"`)."""
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\nREAL='{REAL}'\n{body}\n")
    script.chmod(0o755)
    return str(script)


REAL = ""  # the host's Python for this test, set by the autouse fixture below


@pytest.fixture(autouse=True)
def _real(ssh_server, monkeypatch, tmp_path):
    """As the sshd's remote Python, with a data folder of this test's own: the runs these hosts leave training
    are no other test's business (another test listing the host's runs must not meet them)."""
    script = Path(ssh_server.remote_python).read_text().replace(str(ssh_server.host_data), str(tmp_path / "host"))
    own = tmp_path / "own-python"
    own.write_text(script)
    own.chmod(0o755)
    monkeypatch.setattr(f"{__name__}.REAL", str(own))


def _hello_line(protocol: int) -> str:
    return json.dumps({"workbench": "9.9.9", "protocol": protocol, "python": "/usr/bin/python3",
                       "python_version": "3.13", "hostname": "other", "data_dir": "/tmp"})


@pytest.mark.parametrize("offset", [1, -1])
def test_a_host_on_a_newer_or_older_protocol_is_refused_with_both_versions_and_the_way_out(remote, tmp_path,
                                                                                          offset):
    python = wrapper(tmp_path, "other-python", f"echo '{_hello_line(PROTOCOL_VERSION + offset)}'")
    with pytest.raises(RemoteError) as caught:
        Remote.parse(str(remote), python).hello()
    assert caught.value.step == "version"
    assert (f"runs workbench 9.9.9 (protocol {PROTOCOL_VERSION + offset}), this window needs protocol "
            f"{PROTOCOL_VERSION}") in str(caught.value)
    newer = "newer" if offset > 0 else "older"
    assert f"the host's Workbench is {newer}" in caught.value.hint


def test_a_host_whose_workbench_lacks_the_host_program_is_another_version_not_a_missing_install(remote, tmp_path):
    python = wrapper(tmp_path, "older-python", 'echo "/usr/bin/python3: No module named '
                                              'workbench.core.run.remote.host" >&2; exit 1')
    with pytest.raises(RemoteError) as caught:
        Remote.parse(str(remote), python).hello()
    assert caught.value.step == "version" and "is another version: it has no workbench.core.run.remote.host" in \
        str(caught.value)


def test_a_login_that_prints_a_banner_is_named_with_the_fix(remote, tmp_path):
    python = wrapper(tmp_path, "banner-python", 'echo "Welcome to gpu-box, have a nice day"\nexec "$REAL" "$@"')
    with pytest.raises(RemoteError) as caught:
        Remote.parse(str(remote), python).hello()
    assert caught.value.step == "protocol"
    assert "printed 'Welcome to gpu-box, have a nice day' before Workbench started" in str(caught.value)
    assert "~/.bashrc" in caught.value.hint and "true` must print nothing" in caught.value.hint


def _injecting(tmp_path: Path, line: str) -> str:
    """A host whose run session carries `line` as its third line (after the run's header and first event)."""
    (tmp_path / "injected").write_text(line + "\n")
    return wrapper(tmp_path, "injecting-python",
                   f'"$REAL" "$@" | awk -v f={tmp_path / "injected"} '
                   "'NR==3 {while ((getline l < f) > 0) print l; fflush()} {print; fflush()}'")


@pytest.mark.parametrize("line, says", [
    ("Segmentation fault (core dumped)", "sent a line that is not Workbench's protocol during the run: "
                                         "'Segmentation fault (core dumped)'"),
    (event_line(RUN_JOB_ID, json.dumps({"type": "Step", "step": "seven"})), "sent an event this Workbench cannot "
                                                                             "read"),
    ("[1, 2, 3]", "sent a line that is not Workbench's protocol during the run: '[1, 2, 3]'"),
])
def test_a_line_that_is_not_the_protocol_mid_run_ends_the_follow_in_one_line_not_a_reconnection_loop(
        remote, ssh_server, tmp_path, capsys, line, says):
    python = _injecting(tmp_path, line)
    code, _, err = call(capsys, "train", "--host", ssh_server.address, "--remote-python", python, "--epochs", "1",
                        "--max-steps", "30", "--db", tmp_path / "local.sqlite")
    said = [line for line in err.splitlines() if not line.startswith(("connected to", "info: training on"))]
    error = assert_one_error_line("\n".join(said))
    assert code == 2 and says in error and "the run goes on on" in error
    assert "reconnect" not in err  # no second session was tried: it would meet the same


def test_the_same_fault_in_the_window_is_a_failure_naming_the_fix_and_how_to_attach_again(remote, tmp_path):
    python = _injecting(tmp_path, "garbage from a wrapper")
    run = RemoteRun(Remote.parse(str(remote), python), db=str(tmp_path / "local.sqlite"))
    events: list = []
    result = run.run(RunRequest(TrainConfig(epochs=1, max_steps=30), out_dir=""), events.append, threading.Event())
    assert isinstance(result, RunFailed) and result.kind == "remote"
    assert "not Workbench's protocol" in result.message and f"workbench attach {remote}" in result.hint


# -- what comes back -----------------------------------------------------------------------------------------------
CRAFTED = '''import io, json, sys, tarfile
kind = sys.argv[1]
data = io.BytesIO()
with tarfile.open(fileobj=data, mode="w") as tar:
    def add(info, payload=b""):
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    add(tarfile.TarInfo("./checkpoint.pt"), b"fine")
    if kind == "dotdot":
        add(tarfile.TarInfo("../escaped.txt"), b"outside")
    elif kind == "absolute":
        add(tarfile.TarInfo(sys.argv[2]), b"outside")
    elif kind == "symlink":
        link = tarfile.TarInfo("./out")
        link.type, link.linkname = tarfile.SYMTYPE, sys.argv[2]
        add(link)
        add(tarfile.TarInfo("./out/escaped.txt"), b"outside")
payload = data.getvalue()
out = sys.stdout.buffer
out.write((json.dumps({"size": len(payload), "kind": "tar"}) + "\\n").encode())
out.write(payload)
'''


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_a_folder_from_the_host_with_a_member_that_leaves_it_is_refused_and_nothing_is_written(
        remote, tmp_path, kind):
    import sys

    from workbench.core.run.remote.kernels import fetch

    (tmp_path / "crafted.py").write_text(CRAFTED)
    outside = tmp_path / "outside"
    outside.mkdir()
    python = wrapper(tmp_path, "crafting-python", f'{sys.executable} {tmp_path / "crafted.py"} {kind} '
                                                  f'{outside / "escaped.txt" if kind == "absolute" else outside}')
    target = tmp_path / "here" / "run"
    target.mkdir(parents=True)
    (target / "kept.txt").write_text("what was here")
    with pytest.raises(RemoteError) as caught:
        fetch(Remote.parse(str(remote), python), "/host/runs/1", target)
    assert caught.value.step == "protocol" and "was refused" in str(caught.value) and "nothing was written" in \
        str(caught.value)
    assert list(outside.iterdir()) == [] and not (tmp_path / "here" / "escaped.txt").exists()
    assert sorted(p.name for p in (tmp_path / "here").iterdir()) == ["run"]  # no staging folder left
    assert (target / "kept.txt").read_text() == "what was here"  # the copy it would have replaced is untouched
