"""The service kernel's jobs when the kernel is on another host, with the files on the right side. Torch-free.

A job reads and writes paths in the kernel's file system. On a host that is not this computer, a path the user
chose here means nothing there, so:
- a file this computer has (a checkpoint the user opened or dropped, the run history a report reads) is copied to
  the host first — once per version of the file — and the job reads the copy;
- a job that writes (export a checkpoint or a model, write a report) writes into a new folder on the host, and
  what it wrote is copied back to where the user asked here (atomically), with `progress(done, total)` bytes.
A path this computer does not have (a remote run's checkpoint, recorded here with the host's path) goes as it is.
The answers name the files here. Copies run on a thread of their own: the kernel client's reader never waits.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import tempfile
import threading
from concurrent.futures import CancelledError, Future
from pathlib import Path
from typing import Any, Callable, Sequence

from ...ground.answers import CheckpointInfo, Doing, EvaluationView, ParityTable, Predictions, Score, Written
from ...history.runs import default_db_path
from ..client import KernelClient
from .kernels import fetch, send, staging
from ..service import Answer, Paths, ServiceClient
from .ssh import Remote


class RemoteService(ServiceClient):
    def __init__(self, kernel: KernelClient, remote: Remote,
                 progress: Callable[[int, int], None] | None = None):
        super().__init__(kernel)
        self.remote = remote
        self.progress = progress
        self._sent: dict[tuple[str, int, int], str] = {}  # (path, mtime_ns, size) here → its copy on the host
        self._lock = threading.Lock()

    def there(self, path: Paths) -> str:
        """The host's path for a file named here: a copy of it when this computer has the file."""
        local = Path(path)
        if not local.is_file():
            return str(path)
        stat = local.stat()
        key = (str(local.resolve()), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            known = self._sent.get(key)
        if known is None:
            known = send(self.remote, local, self.progress)
            with self._lock:
                self._sent[key] = known
        return known

    # -- jobs that read a checkpoint (the same signatures as ServiceClient's) ---------------------------------
    def load_checkpoint(self, path: Paths, *, trust_model_code: bool = False) -> Future[CheckpointInfo]:
        return self._after_upload(lambda: super(RemoteService, self).load_checkpoint(
            self.there(path), trust_model_code=trust_model_code))

    def predict(self, checkpoint: Paths, images: Sequence[Any], *,
                trust_model_code: bool = False) -> Future[Predictions]:
        return self._after_upload(lambda: super(RemoteService, self).predict(
            self.there(checkpoint), images, trust_model_code=trust_model_code))

    def evaluate(self, checkpoint: Paths, *, dataset: str | None = None, data_root: str | None = None,
                 split: str | None = None, device: str = "auto", trust_model_code: bool = False) -> Future[Score]:
        return self._after_upload(lambda: super(RemoteService, self).evaluate(
            self.there(checkpoint), dataset=dataset, data_root=data_root, split=split, device=device,
            trust_model_code=trust_model_code))

    def evaluate_view(self, checkpoint: Paths, *, trust_model_code: bool = False) -> Future[EvaluationView]:
        return self._after_upload(lambda: super(RemoteService, self).evaluate_view(
            self.there(checkpoint), trust_model_code=trust_model_code))

    # -- jobs that write files --------------------------------------------------------------------------------
    def export_checkpoint(self, source: Paths, target: Paths, *, trust_model_code: bool = False) -> Future[Written]:
        def job():
            folder = staging(self.remote)
            written = super(RemoteService, self).export_checkpoint(
                self.there(source), f"{folder}/{Path(target).name}", trust_model_code=trust_model_code)
            return written, lambda answer: self._written_back(answer, Path(target).parent)

        return self._write_job(job)

    def export_model(self, source: Paths, out: Paths, *, fmt: str, compile_backend: str, trust_model_code: bool = False,
                     on_step: Callable[[Doing], None] | None = None) -> Future[ParityTable]:
        def job():
            folder = f"{staging(self.remote)}/{Path(out).name}"
            table = super(RemoteService, self).export_model(self.there(source), folder, fmt=fmt,
                                                            compile_backend=compile_backend,
                                                            trust_model_code=trust_model_code, on_step=on_step)

            def back(answer: ParityTable) -> ParityTable:
                copied = fetch(self.remote, folder, out, self.progress)
                return dataclasses.replace(answer, file=str(copied / Path(answer.file).name))

            return table, back

        return self._write_job(job)

    def write_report(self, run_ids: Sequence[int], out: Paths, *, db: Paths | None = None,
                     trust_model_code: bool = False) -> Future[Written]:
        """The report reads this computer's run history (its remote runs' checkpoints are on the host): a
        consistent copy of it goes to the host with the job."""
        def job():
            folder = staging(self.remote)
            with tempfile.TemporaryDirectory(prefix="workbench-history-") as temp:
                history = send(self.remote, _snapshot(Path(db) if db is not None else default_db_path(), Path(temp)),
                               self.progress)
            written = super(RemoteService, self).write_report(run_ids, f"{folder}/{Path(out).name}", db=history,
                                                              trust_model_code=trust_model_code)
            return written, lambda answer: self._written_back(answer, Path(out).parent)

        return self._write_job(job)

    # -- the mechanics ----------------------------------------------------------------------------------------
    def _written_back(self, answer: Written, folder: Path) -> Written:
        return Written(tuple(str(fetch(self.remote, path, folder / Path(path).name, self.progress))
                             for path in answer.paths))

    def _after_upload(self, submit: Callable[[], Answer]) -> Answer:
        """The job, once its input files are on the host (copied on a thread: the caller never waits)."""
        return self._write_job(lambda: (submit(), lambda answer: answer))

    def _write_job(self, start: Callable[[], tuple[Answer, Callable[[Any], Any]]]) -> Answer:
        """`start()` copies what the job needs and submits it, giving its answer and how the answer is brought back
        here; all of that on a thread of its own, the outcome in the returned Answer (cancel reaches the job)."""
        outer = Answer(Future())

        def run() -> None:
            try:
                inner, back = start()
                outer.wire = inner.wire
                answer = inner.result()
                outer.set_result(back(answer))
            except CancelledError:  # dropped before it ran
                outer.cancel()
            except BaseException as exc:  # noqa: BLE001 - every failure is the answer's
                if not outer.done():
                    outer.set_exception(exc)

        threading.Thread(target=run, name="workbench-remote-files", daemon=True).start()
        return outer


def _snapshot(db: Path, folder: Path) -> Path:
    """A consistent copy of an SQLite database that may be being written (the backup API), in `folder`."""
    copy = folder / "runs.sqlite"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return copy
