"""The host's end of a remote session (run/remote/host.py), in this process: what a caller sends it cannot reach outside
its folders (a received file's name, a spare's key), and a run's control lines act as they say (cancel; profile N only
for N ≥ 1)."""

from __future__ import annotations

import io
import json
import threading

from workbench.core.run.remote import host as remote_host
from workbench.core.run.protocol import RUN_JOB_ID


def test_a_received_files_name_cannot_leave_its_transfer_folder(tmp_path):
    out = io.BytesIO()
    stdin = io.BytesIO(json.dumps({"name": "../../escaped.txt", "size": 3}).encode() + b"\nabc")
    assert remote_host.receive_file(stdin, out) == 0
    written = json.loads(out.getvalue())["path"]
    transfers = remote_host.paths.data_dir() / "transfers"
    assert [p.name for p in transfers.rglob("*") if p.is_file()] == ["escaped.txt"]
    assert written.startswith(str(transfers)) and open(written, "rb").read() == b"abc"
    assert not (remote_host.paths.data_dir() / "escaped.txt").exists()


def test_a_spare_key_that_climbs_out_of_the_runs_folder_claims_nothing():
    outside = remote_host.runs_root().parent / "outside"
    outside.mkdir(parents=True)
    (outside / remote_host.SPARE).write_text("1")
    remote_host.runs_root().mkdir(parents=True, exist_ok=True)
    assert remote_host._claimed("../outside") is None  # read as the runs folder's "outside": there is none
    assert (outside / remote_host.SPARE).is_file() and not (outside / remote_host.CLAIMED).exists()


class Kernel:
    """What `_follow_control` drives: the run's process, asked for a profile."""

    def __init__(self):
        self.asked: list[int] = []

    def profile(self, steps: int) -> None:
        self.asked.append(steps)


def test_control_lines_cancel_the_run_and_ask_for_profiles_of_at_least_one_step():
    folder = remote_host.new_folder()
    lines = [{"profile": 0}, {"profile": -3}, {"profile": "20"}, {"profile": 20}, {"cancel": "another job"},
             "not an object", {"cancel": RUN_JOB_ID}]
    (folder.path / remote_host.CONTROL).write_text("".join(json.dumps(line) + "\n" for line in lines) + "{half")
    kernel, stop = Kernel(), threading.Event()
    threading.Thread(target=remote_host._follow_control, args=(folder, kernel, stop), daemon=True).start()
    assert stop.wait(30)  # set by the last whole line, after every line before it was acted on
    assert kernel.asked == [20]
