"""Files that cannot be written mid-run (a full disk, a quota, a read-only folder), injected at the Python level.

- The checkpoint: `checkpoint.save` says why in words (never torch's "[enforce fail at …]"), the engine keeps the
  run finished but records `results.checkpoint_error`, and `workbench train` makes it an error exit (3).
- The event log: losing events.jsonl never costs a run that can still finish: a warning Notice says the log is
  incomplete and why, the part written is put in place, and the checkpoint is still written.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import torch

from workbench import cli
from workbench.core.domain import checkpoint
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import Notice, RunFailed, RunFinished, from_json
from workbench.core.ground.results import RunResults
from workbench.core.history.runs import RunStore
from workbench.core.kernel import run_files
from workbench.core.kernel.run_files import run_recorded
from workbench.core.run.run_request import RunRequest

from ..helpers import SMALL

# What torch 2.x raises when its zip writer's write comes up short on a full disk (seen writing to /dev/full).
TORCH_ENOSPC = "[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598"


def _torch_save_raising(exc: BaseException):
    def broken_save(obj, f, *args, **kwargs):
        Path(f).write_bytes(b"PK\x03\x04 half a zip")  # part of the file, then the disk is full
        raise exc

    return broken_save


def _recorded(tmp_path: Path, config: TrainConfig = SMALL, **kwargs) -> RunFinished | RunFailed:
    request = RunRequest(config=config, out_dir=str(tmp_path / "out"), db=str(tmp_path / "runs.sqlite"))
    return run_recorded(request, **kwargs)


def _hidden(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


# -- the checkpoint ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("raised, words", [
    (RuntimeError(TORCH_ENOSPC), "No space left on device"),
    (RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed"), "No space left on device"),
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
    (OSError(errno.ENOSPC, None), "No space left on device"),  # an errno without its text
    (OSError(errno.EDQUOT, "Disk quota exceeded"), "Disk quota exceeded"),
    (OSError(errno.EROFS, "Read-only file system"), "Read-only file system"),
    (OSError(errno.EACCES, "Permission denied"), "Permission denied"),
])
def test_a_failed_checkpoint_write_says_why_in_words(tmp_path, monkeypatch, raised, words):
    monkeypatch.setattr(torch, "save", _torch_save_raising(raised))
    target = tmp_path / "checkpoint.pt"
    with pytest.raises(checkpoint.CheckpointWriteError) as caught:
        checkpoint.save(target, torch.nn.Linear(2, 2), SMALL, results=RunResults(), versions={}, classes=("a", "b"))
    message = str(caught.value)
    assert words in message and str(target) in message
    assert "enforce fail" not in message and "inline_container" not in message
    assert _hidden(tmp_path) == [] and not target.exists()  # no half file, no temp file


@pytest.mark.parametrize("raised", [RuntimeError(TORCH_ENOSPC), OSError(errno.ENOSPC, "No space left on device")])
def test_a_run_whose_checkpoint_cannot_be_written_records_why(tmp_path, monkeypatch, raised):
    monkeypatch.setattr(torch, "save", _torch_save_raising(raised))
    events = []
    result = _recorded(tmp_path, sinks=(events.append,))
    assert isinstance(result, RunFinished) and result.steps == 20  # the run itself finished
    assert not result.results.checkpoint
    assert "No space left on device" in result.results.checkpoint_error
    assert any(isinstance(e, Notice) and e.level == "error" and "No space left" in e.message for e in events)
    assert not (tmp_path / "out" / "checkpoint.pt").exists()


@pytest.mark.parametrize("raised", [RuntimeError(TORCH_ENOSPC), OSError(errno.ENOSPC, "No space left on device")])
def test_train_exits_with_an_error_when_the_checkpoint_is_lost(tmp_path, monkeypatch, capsys, raised):
    monkeypatch.setattr(torch, "save", _torch_save_raising(raised))
    code = cli.main(["train", "--epochs", "1", "--max-steps", "20", "--hidden-dim", "16",
                     "--out", str(tmp_path / "out"), "--db", str(tmp_path / "runs.sqlite")])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_RUN_FAILED
    assert "no step was trained" not in out and "20 steps" in out
    assert "workbench: error: could not write the checkpoint" in err and "No space left on device" in err
    assert "enforce fail" not in err + out and "Traceback" not in err


# -- the event log ----------------------------------------------------------------------------------------------
class _FillsUpAfter:
    """A text file that takes `lines` writes, then fails every write, flush and close as a full disk does."""

    def __init__(self, real, lines: int):
        self.real, self.left = real, lines

    def write(self, text: str) -> int:
        if self.left <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.left -= 1
        return self.real.write(text)

    def flush(self) -> None:
        self.real.flush()

    def close(self) -> None:
        self.real.close()


def _writer_filling_up(monkeypatch, wrap):
    class Writer(run_files.RunWriter):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._fh = wrap(self._fh)

    monkeypatch.setattr(run_files, "RunWriter", Writer)


def _assert_went_on_without_the_log(tmp_path: Path, result, events: list) -> list:
    out = tmp_path / "out"
    assert isinstance(result, RunFinished) and not result.stopped and result.steps == SMALL.max_steps
    assert events[-1] == result and [e for e in events if isinstance(e, (RunFinished, RunFailed))] == [result]
    warnings = [e for e in events if isinstance(e, Notice) and "event log" in e.message]
    assert len(warnings) == 1  # said once, not once per event
    assert warnings[0].level == "warning" and "incomplete" in warnings[0].message
    assert "No space left on device" in warnings[0].message
    assert (out / "checkpoint.pt").is_file() and result.results.checkpoint == str(out / "checkpoint.pt")
    assert (out / "metrics.json").is_file()
    assert _hidden(out) == []  # no temp file left
    with RunStore(tmp_path / "runs.sqlite") as store:
        [record] = store.list()
        assert record.status == "finished"
        recorded = store.get(record.id, with_events=True).events
    assert warnings[0] in recorded and recorded.index(warnings[0]) < recorded.index(result)  # before the end
    return [from_json(line) for line in (out / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_full_disk_while_the_event_log_streams_does_not_stop_the_run(tmp_path, monkeypatch):
    _writer_filling_up(monkeypatch, lambda real: _FillsUpAfter(real, lines=5))
    events = []
    result = _recorded(tmp_path, sinks=(events.append,))
    logged = _assert_went_on_without_the_log(tmp_path, result, events)
    assert logged == events[:5]  # the part that was written is kept, whole lines only


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_log_on_a_full_device_fails_in_the_buffered_writes_and_the_run_goes_on(tmp_path, monkeypatch):
    """The real io stack on a device that is always full: the failure comes from a buffer flush, not a write."""
    def on_dev_full(real):
        real.close()  # the temp file stays (empty); every byte now goes to /dev/full
        return open("/dev/full", "w", encoding="utf-8")

    _writer_filling_up(monkeypatch, on_dev_full)
    events = []
    result = _recorded(tmp_path, sinks=(events.append,))
    assert _assert_went_on_without_the_log(tmp_path, result, events) == []
