"""The service kernel, for real: every short job over the protocol, what a job's failure looks like on the parent's
side, and a kernel that crashes (idle or mid-job) or is closed.

A kernel takes seconds to import torch, so the tests share one module-wide `KernelClient` (and the shared trained run);
only the test of a call made before the kernel is ready starts a kernel of its own."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import queue
import re
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from workbench.core.domain import checkpoint
from workbench.core.ground.answers import CheckpointInfo, Predictions, Score, Written
from workbench.core.ground.images import load_digit
from workbench.core.ground.capabilities import Capabilities
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import CompileReport
from workbench.core.ground.finder_results import LrFinding, LrPoint
from workbench.core.run.client import KernelClient
from workbench.core.run.protocol import JobError, NeedsConsent

# A supervising thread that dies of an exception would leave every later call unanswered: never let one pass.
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
# Bounds on waits for a kernel (a cold torch import on a loaded 2-core machine) and for one job: generous, never
# what a test measures.
START_S = 180.0
JOB_S = 180.0


@pytest.fixture(scope="module")
def module_env(tmp_path_factory):
    """What the function-scoped isolation in tests/conftest.py gives a test, for the module-wide kernel and run:
    their own data and cache folders, and one intra-op thread (fast and contention-proof on 2 cores)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_DATA_DIR", str(tmp_path_factory.mktemp("kernel-data")))
        patch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("kernel-cache")))
        patch.setenv("OMP_NUM_THREADS", "1")
        yield


@pytest.fixture(scope="module")
def kernel(module_env):
    client = KernelClient()
    yield client
    client.close()


def wait_ready(client: KernelClient) -> None:
    ready = threading.Event()

    def on_state(state: str, detail: str) -> None:
        if state == "ready":
            ready.set()

    client.listen(on_state)  # before looking: a change in between is heard
    try:
        if not client.ready:
            assert ready.wait(START_S), f"the kernel was not ready within {START_S:.0f} s ({client.state})"
    finally:
        client.unlisten(on_state)


def answer(client: KernelClient, job: str, **args):
    return client.call(job, **args).result(timeout=JOB_S)


def refusal(client: KernelClient, job: str, **args) -> JobError:
    with pytest.raises(JobError) as info:
        answer(client, job, **args)
    return info.value


def pixels_b64(pixels: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(pixels, dtype=np.uint8).tobytes()).decode()


# -- capabilities and explain -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_capabilities_name_torch_the_cpu_and_what_cannot_run_here(kernel):
    data = answer(kernel, "capabilities")
    caps = Capabilities.from_dict(data)
    assert caps.known and caps.torch_version == str(torch.__version__)
    assert "cpu" in [d.value for d in caps.devices]
    assert caps.cuda_devices == (torch.cuda.device_count() if torch.cuda.is_available() else 0)
    assert caps.backend_problem("eager", "cpu") is None
    refused = caps.backend_problem("cudagraphs", "cpu")
    assert refused and "CUDA" in refused  # refused on the CPU, with the reason a form shows
    assert Capabilities.from_dict(json.loads(json.dumps(caps.to_dict()))) == caps  # the wire round trip
    assert caps.to_dict() == data


def test_explain_finds_the_planted_break_at_its_line(kernel, planted_break_spec, planted_break_line):
    data = answer(kernel, "explain", config=TrainConfig(model=planted_break_spec, backend="aot_eager").to_dict())
    report = CompileReport.from_dict(data)
    assert isinstance(report, CompileReport) and report.source == "explain"
    assert report.graph_break_count >= 1 and report.breaks
    hits = [f for b in report.breaks for f in b.frames
            if Path(f.file).name == "planted_break.py" and f.line == planted_break_line]
    assert hits, f"no break at planted_break.py:{planted_break_line} in {report.breaks}"
    assert hits[0].source.startswith("print(")


# -- checkpoints ------------------------------------------------------------------------------------------------
def test_load_checkpoint_returns_its_classes_config_and_metrics(kernel, trained_run):
    data = answer(kernel, "load_checkpoint", path=str(trained_run.checkpoint))
    json.dumps(data)  # plain data all the way down
    info = CheckpointInfo.from_dict(data)
    assert info.path == str(Path(str(trained_run.checkpoint)).resolve())
    assert info.classes == tuple(str(i) for i in range(10))
    config = info.config
    assert config.epochs == 2 and config.hidden_dim == trained_run.config.hidden_dim
    assert info.results.best_val_accuracy == pytest.approx(trained_run.result.results.best_val_accuracy)
    assert "torch" in info.versions
    assert info.to_dict() == data  # the wire round trip


def test_a_file_that_is_not_a_checkpoint_is_a_clear_job_error(kernel, tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint" * 100)
    error = refusal(kernel, "load_checkpoint", path=str(garbage))
    assert error.kind == checkpoint.CheckpointError.kind
    assert "garbage.pt is not a readable PyTorch file" in str(error)


def test_a_user_model_file_is_imported_only_when_trusted(kernel, trained_run, tmp_path):
    marker = tmp_path / "imported.txt"
    model_file = tmp_path / "net.py"
    model_file.write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                          "from workbench.core.domain.model import SandwichNet as Net\n")
    spec = f"{model_file}:Net"
    payload = torch.load(str(trained_run.checkpoint), weights_only=True)
    payload["config"] = TrainConfig.from_dict(payload["config"]).replace(model=spec).to_dict()
    user = tmp_path / "user.pt"
    torch.save(payload, user)

    error = refusal(kernel, "load_checkpoint", path=str(user))
    assert error.kind == "untrusted_code" and error.detail["model_spec"] == spec
    assert isinstance(error, NeedsConsent) and error.model_spec == spec and error.model_file == str(model_file)
    assert str(model_file) in str(error) and error.hint
    assert not marker.exists()  # refused before anything was imported
    info = CheckpointInfo.from_dict(answer(kernel, "load_checkpoint", path=str(user), trust_model_code=True))
    assert info.config.model == spec and info.classes == tuple(str(i) for i in range(10))
    assert marker.read_text() == "ran"


def test_export_writes_a_checkpoint_that_loads(kernel, trained_run, tmp_path):
    target = tmp_path / "exported.pt"
    written = Written.from_dict(answer(kernel, "export_checkpoint", source=str(trained_run.checkpoint),
                                       target=str(target)))
    assert [Path(p) for p in written.paths] == [target, target.with_suffix(".safetensors")]  # every file written
    assert all(Path(p).is_file() for p in written.paths)
    original = CheckpointInfo.from_dict(answer(kernel, "load_checkpoint", path=str(trained_run.checkpoint)))
    exported = CheckpointInfo.from_dict(answer(kernel, "load_checkpoint", path=str(target)))
    assert exported.path != original.path
    assert dataclasses.replace(exported, path=original.path) == original  # all but where it lies


# -- predict, evaluate, report ----------------------------------------------------------------------------------
def test_predict_reads_a_bundled_seven(kernel, trained_run, samples_dir):
    seven = load_digit(samples_dir / "digit_7.png")
    assert seven.shape == (28, 28) and seven.dtype == np.uint8
    predictions = Predictions.from_dict(answer(kernel, "predict", checkpoint_path=str(trained_run.checkpoint),
                                               images=[pixels_b64(seven)] * 2))
    assert predictions.classes == tuple(str(i) for i in range(10))
    assert len(predictions.probabilities) == 2 and predictions.probabilities[0] == predictions.probabilities[1]
    probabilities = predictions.probabilities[0]
    assert len(probabilities) == 10 and sum(probabilities) == pytest.approx(1.0, abs=1e-5)
    assert predictions.classes[int(np.argmax(probabilities))] == "7"


def test_predict_refuses_an_image_of_the_wrong_size(kernel, trained_run):
    error = refusal(kernel, "predict", checkpoint_path=str(trained_run.checkpoint),
                    images=[pixels_b64(np.zeros(27 * 28, dtype=np.uint8))])
    assert error.kind == "input" and re.search(r"\b756 pixels\b.*\bnot\b.*\b784\b", str(error)), str(error)


def test_evaluate_gives_accuracy_and_a_confusion_matrix(kernel, trained_run):
    score = Score.from_dict(answer(kernel, "evaluate", checkpoint_path=str(trained_run.checkpoint), device="cpu"))
    assert score.dataset == "mnist-sample" and score.split == "val"
    confusion = np.array(score.confusion)
    assert confusion.shape == (10, 10) and confusion.sum() == score.images > 0
    assert score.accuracy == pytest.approx(np.trace(confusion) / score.images)
    assert score.accuracy > 0.8 and score.loss > 0
    assert score.classes == tuple(str(i) for i in range(10))


def test_report_writes_html_and_its_json_twin(kernel, trained_run, tmp_path):
    out = tmp_path / "report.html"
    written = Written.from_dict(answer(kernel, "report", run_ids=[trained_run.run_id], out=str(out),
                                       db=str(trained_run.db)))
    assert [Path(p) for p in written.paths] == [out, out.with_suffix(".json")]
    assert "<html" in out.read_text(encoding="utf-8").lower()
    assert json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))


def test_lr_find_reports_every_point_before_its_answer(kernel):
    heard = []
    finding = LrFinding.from_dict(kernel.call("lr_find", heard.append, config=TrainConfig(hidden_dim=16).to_dict(),
                                              steps=40).result(timeout=JOB_S))
    points = tuple(LrPoint.from_dict(point) for point in heard)  # each progress message is one point
    assert points == finding.points and len(heard) == 40  # in order, each once, all before the answer
    assert [point.step for point in points] == list(range(1, 41))


def test_a_cancelled_lr_find_answers_early_with_what_it_read_and_the_kernel_serves_on(kernel):
    heard: queue.Queue = queue.Queue()
    future = kernel.call("lr_find", heard.put, config=TrainConfig(hidden_dim=16).to_dict(), steps=5000)
    for _ in range(3):  # it is running: points are coming back
        heard.get(timeout=JOB_S)
    assert kernel.cancel(future)
    finding = LrFinding.from_dict(future.result(timeout=JOB_S))
    assert finding.ended == "stopped" and finding.stopped and 3 <= len(finding.points) < 5000
    assert not kernel.cancel(future)  # answered: nothing left to cancel
    kernel.call("capabilities").result(timeout=JOB_S)  # the cancel was for that job only
    follow = LrFinding.from_dict(kernel.call("lr_find", config=TrainConfig(hidden_dim=16).to_dict(),
                                             steps=30).result(timeout=JOB_S))
    assert len(follow.points) == 30 and follow.ended != "stopped" and not follow.stopped


def test_a_cancelled_call_still_queued_never_runs(module_env):
    client = KernelClient(start=False)  # never started: every call waits in the queue
    try:
        future = client.call("capabilities")
        assert client.cancel(future) and future.cancelled()
        assert not client._running and not client._queued
    finally:
        client.close()


# -- what goes wrong ---------------------------------------------------------------------------------------------
def test_an_unknown_job_is_refused_before_it_is_sent(kernel):
    with pytest.raises(ValueError, match="does not serve 'fly'"):
        kernel.call("fly")
    with pytest.raises(ValueError, match="does not serve 'train'"):  # a run gets a kernel of its own
        kernel.call("train", request={})


def test_bad_arguments_are_a_protocol_error_and_the_kernel_serves_on(kernel):
    error = refusal(kernel, "capabilities", bogus=1)
    assert error.kind == "protocol" and "bad arguments" in str(error) and "bogus" in str(error)
    error = refusal(kernel, "predict", checkpoint_path="x.pt")  # one missing
    assert error.kind == "protocol" and "images" in str(error)
    assert Capabilities.from_dict(answer(kernel, "capabilities")).known


def test_a_kernel_killed_while_idle_is_started_again(kernel):
    wait_ready(kernel)
    states = []
    back = threading.Event()

    def on_state(state: str, detail: str) -> None:
        states.append((state, detail))
        if state == "ready":
            back.set()

    killed = kernel.pid
    kernel.listen(on_state)
    try:
        os.kill(killed, signal.SIGKILL)
        assert back.wait(START_S), f"the kernel was not started again: {states}"
    finally:
        kernel.unlisten(on_state)
    assert [state for state, _ in states] == ["crashed", "starting", "ready"]
    assert f"killed by signal {signal.SIGKILL.value}" in states[0][1]
    assert kernel.pid != killed
    assert Capabilities.from_dict(answer(kernel, "capabilities")).known


def test_a_kernel_killed_mid_job_fails_that_job_and_serves_the_next(kernel, planted_break_spec):
    wait_ready(kernel)
    future = kernel.call("explain", config=TrainConfig(model=planted_break_spec, backend="aot_eager").to_dict())
    retry: queue.Queue = queue.Queue()
    # Asked again the moment the failure arrives (what a user does): it must wait for the new kernel, never be
    # sent to the dead one's socket and left unanswered.
    future.add_done_callback(lambda done: retry.put(kernel.call("capabilities")))
    os.kill(kernel.pid, signal.SIGKILL)  # it is still compiling: nothing has come back yet
    with pytest.raises(JobError) as info:
        future.result(timeout=JOB_S)
    assert info.value.kind == "crashed"
    assert f"killed by signal {signal.SIGKILL.value}" in str(info.value) and "explain" in str(info.value)
    again = retry.get(timeout=JOB_S)
    assert Capabilities.from_dict(again.result(timeout=START_S + JOB_S)).known


# -- start and close -------------------------------------------------------------------------------------------
def test_a_call_before_the_kernel_is_ready_is_queued_and_close_leaves_no_process(module_env):
    states = []
    client = KernelClient(on_state=lambda state, detail: states.append(state))
    try:
        assert not client.ready  # importing torch takes seconds
        future = client.call("capabilities")
        assert Capabilities.from_dict(future.result(timeout=START_S + JOB_S)).known
        assert states[:2] == ["starting", "ready"]
    finally:
        client.close()
    assert client._process.process.poll() is not None  # ended, not left running
    assert not client._thread.is_alive() and states[-1] == "closed"
    with pytest.raises(JobError, match="not running") as info:
        client.call("capabilities").result(timeout=1)
    assert info.value.kind == "crashed"
