"""The command line end to end: train → evaluate → predict → explain, and one clean error line for bad input.

Most cases call `workbench.cli.main(argv)` in-process (fast, output captured with capsys); a few run
`python -m workbench` in a subprocess to check exit codes and stderr exactly as a shell sees them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import pytest

from workbench import cli
from workbench.core.domain import devices
from workbench.core.ground.config import TrainConfig, settings
from workbench.core.ground.events import EpochEnd, RunFinished, RunStarted, Step, from_json
from workbench.core.history.runs import RunStore

from ..helpers import assert_one_error_line, call, shell, wait_for_epoch

RUN_FILES = ["checkpoint.pt", "checkpoint.safetensors", "events.jsonl", "metrics.json"]
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A 3-epoch run of the defaults on the bundled sample, made through the CLI; its output folder."""
    import torch

    out = tmp_path_factory.mktemp("trained") / "run"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # see tests/conftest.py::one_torch_thread
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("WORKBENCH_DATA_DIR", str(out.parent / "data"))
            mp.setenv("WORKBENCH_CACHE_DIR", str(out.parent / "cache"))
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
                code = cli.main(["train", "--epochs", "3", "--out", str(out)])
    finally:
        torch.set_num_threads(threads)
    assert code == 0, err.getvalue()
    return out


# -- train ------------------------------------------------------------------------------------------------------
def test_train_one_epoch_writes_the_run_files(tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, stderr = call(capsys, "train", "--epochs", "1", "--out", out)
    assert code == 0, stderr
    assert sorted(p.name for p in out.iterdir()) == RUN_FILES  # and no leftover temp files
    assert "finished: 125 steps, 1 epoch(s)" in stdout
    assert "val accuracy" in stdout
    assert re.search(r"epoch 1/1: train loss [\d.]+ · val loss [\d.]+ · val accuracy [\d.]+%", stderr)

    events = [from_json(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert [e.step for e in events if isinstance(e, Step)] == list(range(1, 126))
    assert sum(isinstance(e, EpochEnd) for e in events) == 1

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 125 and metrics["stopped"] is False
    assert metrics["config"]["epochs"] == 1
    assert len(metrics["epochs"]) == 1
    assert metrics["metrics"]["val_accuracy"] == events[-1].results.val_accuracy
    assert metrics["metrics"]["checkpoint"] == str(out / "checkpoint.pt")


def test_config_file_then_flags(tmp_path, capsys):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"epochs": 2, "max_steps": 9, "hidden_dim": 16, "seed": 4}))
    out = tmp_path / "out"
    code, _, stderr = call(capsys, "train", "--config", config, "--max-steps", "5", "--out", out)
    assert code == 0, stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 5  # the flag overrides the file
    assert metrics["config"]["hidden_dim"] == 16 and metrics["config"]["seed"] == 4  # the file overrides defaults


def test_config_file_sets_only_its_own_fields(tmp_path, capsys):
    """A file's unset fields are not its defaults: explain's inductor default survives a file without a backend."""
    config = tmp_path / "f.json"
    config.write_text(json.dumps({"hidden_dim": 16}))
    code, stdout, stderr = call(capsys, "explain", "--config", config, "--mode", "max-autotune")
    assert code == 0, stderr
    assert "graphs: 1 · graph breaks: 0" in stdout


def test_training_flags_reach_the_run_config(tmp_path, capsys):
    out = tmp_path / "out"
    code, _, stderr = call(capsys, "train", "--max-steps", "2", "--fullgraph", "--optimizer", "sgd", "--lr-schedule",
                           "constant", "--dynamic", "false", "--no-allow-eager-fallback", "--weight-decay", "0.5",
                           "--out", out)
    assert code == 0, stderr
    config = json.loads((out / "metrics.json").read_text())["config"]
    assert (config["fullgraph"], config["optimizer"], config["lr_schedule"], config["dynamic"],
            config["allow_eager_fallback"], config["weight_decay"]) == (True, "sgd", "constant", False, False, 0.5)


# -- flags: one per declared setting (TrainConfig's metadata) -------------------------------------------------------
def _flags(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {flag: action for action in sub.choices[command]._actions for flag in action.option_strings}


@pytest.mark.parametrize("command", ["train", "explain"])
def test_every_declared_setting_has_its_flag(command):
    flags = _flags(command)
    assert "--config" in flags
    for declared in settings():
        assert flags[declared.flag].dest == declared.name, declared.flag
        if declared.kind is bool and not declared.optional:  # --fullgraph / --no-fullgraph
            assert flags["--no-" + declared.flag[2:]].dest == declared.name


def test_help_shows_each_setting_with_its_range_choices_and_default(capsys):
    code, stdout, _ = call(capsys, "train", "--help")
    assert code == 0
    text = " ".join(stdout.split())  # argparse wraps lines anywhere
    for declared in settings():
        assert declared.flag in text
        if declared.kind is int:
            assert f"{declared.low} to {declared.high}" in text, declared.name
        if declared.choices:
            assert "{" + ",".join(declared.choices) + "}" in text, declared.name
    for words in ("--dynamic {auto,true,false}", "default: 32", "default: 0.004", "default: mnist-sample",
                  "default: auto", "--allow-eager-fallback, --no-allow-eager-fallback", "> 0 and ≤ 100"):
        assert words in text, words


@pytest.mark.parametrize("declared", [s for s in settings() if s.kind in (int, float)], ids=lambda s: s.name)
def test_the_cli_takes_the_declared_high_and_refuses_one_more(declared, tmp_path, capsys):
    args = cli.build_parser().parse_args(["train", declared.flag, str(declared.high)])
    assert getattr(cli.config_from_args(args), declared.name) == declared.high
    code, _, stderr = call(capsys, "train", "--out", tmp_path / "out", declared.flag, declared.high + 1)
    assert code == cli.EXIT_USAGE
    line = assert_one_error_line(stderr)
    assert f"error: {declared.flag}:" in line  # called by the flag typed, not the field's name
    assert not (tmp_path / "out").exists()


def test_a_bad_value_from_a_config_file_is_called_by_the_files_field(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text('{"batch_size": 0}', encoding="utf-8")
    code, _, stderr = call(capsys, "explain", "--config", config)
    assert code == cli.EXIT_USAGE
    assert "error: batch_size: 0 is out of range" in assert_one_error_line(stderr)


@pytest.mark.parametrize("flag, value", [("--backend", "nvfuser"), ("--dataset", "imagenet"), ("--amp", "fp8"),
                                         ("--optimizer", "lbfgs"), ("--lr-schedule", "step"), ("--mode", "turbo"),
                                         ("--dynamic", "maybe")])
def test_a_value_outside_the_choices_is_one_line_naming_the_setting(flag, value, tmp_path, capsys):
    code, _, stderr = call(capsys, "explain", flag, value)
    assert code == cli.EXIT_USAGE
    line = assert_one_error_line(stderr)
    assert f"error: {flag}:" in line and "allowed:" in line and repr(value) in line


def test_every_flag_reaches_the_config():
    argv = ["train", "--dataset", "kmnist", "--data-root", "/data", "--model", "net.py:Net", "--device", "cpu",
            "--hidden-dim", "64", "--dropout", "0.5", "--epochs", "3", "--batch-size", "48", "--lr", "0.01",
            "--optimizer", "sgd", "--lr-schedule", "constant", "--weight-decay", "0.1", "--seed", "9",
            "--max-steps", "4", "--backend", "inductor", "--mode", "max-autotune", "--dynamic", "true",
            "--fullgraph", "--allow-eager-fallback", "--compile-trace", "--amp", "bf16", "--matmul-precision", "medium",
            "--profile-steps", "20", "--loss-scale", "1024", "--resume", "/runs/one/checkpoint.pt",
            "--on-recompile", "fail", "--eager-first-call", "--recompile-limit", "8", "--warm-from", "3",
            "--stats-every", "25", "--alert-grad-factor", "20", "--alert-plateau-steps", "300",
            "--alert-throughput-drop", "0.3", "--alert-memory-share", "0.8", "--alert-recompile-storm", "3"]
    config = cli.config_from_args(cli.build_parser().parse_args(argv))
    assert config == TrainConfig(dataset="kmnist", data_root="/data", model="net.py:Net", device="cpu",
                                 hidden_dim=64, dropout=0.5, epochs=3, batch_size=48, lr=0.01, optimizer="sgd",
                                 lr_schedule="constant", weight_decay=0.1, seed=9, max_steps=4, backend="inductor",
                                 mode="max-autotune", dynamic=True, fullgraph=True, allow_eager_fallback=True,
                                 compile_trace=True, amp="bf16", matmul_precision="medium", profile_steps=20,
                                 loss_scale=1024.0, resume="/runs/one/checkpoint.pt", on_recompile="fail",
                                 eager_first_call=True, recompile_limit=8, warm_from=3, stats_every=25,
                                 alert_grad_factor=20.0, alert_plateau_steps=300, alert_throughput_drop=0.3,
                                 alert_memory_share=0.8, alert_recompile_storm=3)
    changed = {s.name for s in settings() if getattr(config, s.name) != s.default}
    assert changed == {s.name for s in settings()}, "a setting this test does not set: add its flag above"


def test_unset_flags_keep_the_defaults_and_the_file():
    assert cli.config_from_args(cli.build_parser().parse_args(["train"])) == TrainConfig()
    args = cli.build_parser().parse_args(["train", "--no-fullgraph", "--dynamic", "auto"])
    assert cli.config_from_args(args, fullgraph=True, dynamic=False) == TrainConfig()


def test_from_a_run_takes_its_settings_then_the_config_file_then_the_flags(tmp_path, capsys):
    from workbench.cli.train import run_settings

    db, folder = tmp_path / "runs.sqlite", tmp_path / "run"
    folder.mkdir()
    with RunStore(db) as store:
        earlier = TrainConfig(hidden_dim=64, lr=0.01, seed=3, epochs=2, resume="/old/checkpoint.pt")
        store.start_run(earlier.to_dict(), str(folder))
        store.start_run(earlier.to_dict())
        store.db.execute("UPDATE runs SET config = '{garbage' WHERE id = 2")
    config_file = tmp_path / "config.json"
    config_file.write_text('{"lr": 0.02, "epochs": 4}', encoding="utf-8")
    args = cli.build_parser().parse_args(["train", "--config", str(config_file), "--epochs", "5"])
    for run in ("1", "#1", str(folder)):  # a new run: not a continuation of the one it came from
        assert cli.config_from_args(args, **run_settings(run, str(db))) == TrainConfig(hidden_dim=64, seed=3,
                                                                                         lr=0.02, epochs=5)
    for argv, words in ((["--from", "2"], "--from 2: the settings of run #2 cannot be read (this run's row"),
                        (["--from", "1", "--resume", "1"], "--from and --resume do not go together")):
        code, _, err = call(capsys, "train", *argv, "--db", db, "--out", tmp_path / "never")
        assert code == cli.EXIT_USAGE and words in assert_one_error_line(err)
    assert not (tmp_path / "never").exists()


def test_ctrl_c_stops_after_the_step_and_keeps_the_checkpoint(tmp_path, start_train):
    proc, _ = start_train("--epochs", "100000", "--out", str(tmp_path / "run"))
    wait_for_epoch(proc)
    proc.send_signal(signal.SIGINT)  # what Ctrl+C does
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == cli.EXIT_INTERRUPTED, err
    assert "stopping after this step" in err and "Traceback" not in err
    assert out.startswith("stopped early:")
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert [r.status for r in store.list()] == ["stopped"]


def test_version_comes_from_package_metadata(tmp_path):
    result = shell("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"workbench {version('workbench')}"


# -- evaluate / predict / explain -------------------------------------------------------------------------------
def _matrix(stdout: str) -> list[list[int]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("confusion matrix"))
    rows = lines[start + 2: start + 12]
    return [[int(v) for v in row.split()[1:]] for row in rows]


def test_evaluate_defaults_to_validation_where_there_is_no_test_split(trained, capsys):
    code, stdout, _ = call(capsys, "evaluate", trained / "checkpoint.pt")
    assert code == 0 and stdout.startswith("mnist-sample val: 1000 images")


def test_evaluate_on_the_validation_split(trained, capsys):
    code, stdout, stderr = call(capsys, "evaluate", trained / "checkpoint.pt", "--split", "val")
    assert code == 0, stderr
    found = re.search(r"mnist-sample val: 1000 images · accuracy ([\d.]+)% · loss ([\d.]+)", stdout)
    assert found, stdout
    accuracy = float(found.group(1)) / 100
    assert accuracy > 0.9
    matrix = _matrix(stdout)
    assert len(matrix) == 10 and all(len(row) == 10 for row in matrix)
    assert sum(map(sum, matrix)) == 1000
    assert sum(matrix[i][i] for i in range(10)) / 1000 == pytest.approx(accuracy, abs=0.0001)
    recorded = json.loads((trained / "metrics.json").read_text())["metrics"]["val_accuracy"]
    assert accuracy == pytest.approx(recorded, abs=0.0001)  # same weights, same images, same figure


def test_evaluate_on_the_official_test_split(trained, mnist_test_dir, capsys):
    code, stdout, stderr = call(capsys, "evaluate", trained / "checkpoint.pt", "--dataset", "idx",
                                "--data-root", mnist_test_dir)
    assert code == 0, stderr
    found = re.search(r"idx test: 10000 images · accuracy ([\d.]+)%", stdout)
    assert found, stdout
    assert float(found.group(1)) > 85
    matrix = _matrix(stdout)
    assert [sum(row) for row in matrix] == MNIST_TEST_COUNTS  # rows are the true classes


def test_evaluate_on_a_dataset_with_other_classes_is_refused(trained, samples_dir, tmp_path, capsys):
    for cls in ("one", "zero"):  # a 2-class image folder; the checkpoint knows the 10 digits
        (tmp_path / cls).mkdir()
        for i in range(10):
            shutil.copy(samples_dir / f"digit_{i % 2}.png", tmp_path / cls / f"{i}.png")
    code, stdout, stderr = call(capsys, "evaluate", trained / "checkpoint.pt", "--dataset", "imagefolder",
                                "--data-root", tmp_path)
    assert code == 2 and stdout == ""
    assert "trained on 10 classes (0, 1, 2, 3, 4, 5, 6, 7, …) but imagefolder has 2 (one, zero)" in stderr


def test_predict_names_the_bundled_digits(trained, samples_dir, capsys):
    images = [samples_dir / f"digit_{d}.png" for d in range(10)]
    code, stdout, stderr = call(capsys, "predict", trained / "checkpoint.pt", *images)
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert len(lines) == 10
    for digit, (image, line) in enumerate(zip(images, lines)):
        found = re.fullmatch(rf"{re.escape(str(image))}: (\d) \(([\d.]+)%\)", line)
        assert found, line
        assert int(found.group(1)) == digit, line


def test_predict_json(trained, samples_dir, capsys):
    code, stdout, _ = call(capsys, "predict", "--json", trained / "checkpoint.pt", samples_dir / "digit_4.png")
    assert code == 0
    record = json.loads(stdout)
    assert record["class"] == "4"
    assert sum(record["probabilities"]) == pytest.approx(1.0, abs=1e-5)
    assert record["confidence"] == max(record["probabilities"])


def test_predict_reports_each_bad_image_and_goes_on(trained, samples_dir, tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("not an image")
    code, stdout, stderr = call(capsys, "predict", trained / "checkpoint.pt", notes, samples_dir / "digit_7.png")
    assert code == cli.EXIT_USAGE
    assert "notes.txt" in assert_one_error_line(stderr)
    assert re.fullmatch(r".*digit_7\.png: 7 \([\d.]+%\)", stdout.strip())  # the good image was still classified


def test_explain_planted_break_names_file_and_line(planted_break_spec, planted_break_line, capsys):
    code, stdout, stderr = call(capsys, "explain", "--model", planted_break_spec)
    assert code == 0, stderr
    assert "graph breaks: 1" in stdout
    assert f"planted_break.py:{planted_break_line}" in stdout
    assert "print(" in stdout


def test_explain_plain_network(capsys):
    code, stdout, _ = call(capsys, "explain", "--hidden-dim", "16")
    assert code == 0
    assert "graphs: 1 · graph breaks: 0" in stdout
    assert "no graph breaks" in stdout


# -- bad input: one line on stderr, a non-zero exit, never a traceback ------------------------------------------
@pytest.fixture
def bad_inputs(tmp_path, trained):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    corrupted = tmp_path / "corrupted.pt"
    data = (trained / "checkpoint.pt").read_bytes()
    corrupted.write_bytes(data[: len(data) // 2])
    notes = tmp_path / "notes.txt"
    notes.write_text("just some text\n")
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"epochs": 2,,}')
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"dataset": "données"}'.encode("latin-1"))
    return {"out": tmp_path / "out", "under_file": a_file / "out", "missing": tmp_path / "missing",
            "corrupted": corrupted, "ckpt": trained / "checkpoint.pt", "notes": notes, "bad_json": bad_json,
            "latin1": latin1, "folder": tmp_path}


TRAIN = ("train", "--max-steps", "2", "--out", "{out}")


@pytest.mark.parametrize("argv, words", [
    (TRAIN + ("--batch-size", "0"), ["--batch-size: 0", "1 to"]),
    (TRAIN + ("--lr", "-1"), ["--lr: -1", "greater than 0"]),
    (TRAIN + ("--lr", "0"), ["--lr: 0"]),
    (TRAIN + ("--backend", "cudagraphs"), ["backend", "CUDA"]),
    (TRAIN + ("--backend", "aot_eager", "--mode", "max-autotune"), ["mode", "inductor"]),
    (TRAIN + ("--device", "tpu"), ["device", "cuda:N"]),
    (TRAIN + ("--dataset", "idx", "--data-root", "{missing}"), ["missing", "does not exist"]),
    (TRAIN + ("--dataset", "idx"), ["--data-root"]),
    (TRAIN + ("--dataset", "imagenet"), ["unknown dataset"]),
    (TRAIN + ("--model", "{missing}/net.py:Net"), ["net.py", "does not exist"]),
    (("train", "--max-steps", "2", "--out", "{under_file}"), ["cannot write", "--out"]),
    (TRAIN + ("--config", "{bad_json}"), ["config", "JSON"]),
    (TRAIN + ("--config", "{missing}/none.json"), ["config", "cannot read"]),
    (TRAIN + ("--config", "{latin1}"), ["latin1.json", "UTF-8"]),
    (("evaluate", "{corrupted}"), ["corrupted.pt", "damaged or truncated"]),
    (("evaluate", "{missing}/checkpoint.pt"), ["does not exist"]),
    (("evaluate", "{folder}"), ["folder"]),
    (("evaluate", "{ckpt}", "--split", "test"), ["mnist-sample", "val"]),  # no test split: says to use val
    (("evaluate", "{ckpt}", "--dataset", "idx", "--data-root", "{missing}"), ["does not exist"]),
    (("evaluate", "{ckpt}", "--device", "tpu"), ["device", "cuda:N"]),
    (("evaluate", "{ckpt}", "--device", "cuda"), ["device", "no usable CUDA device"]),
    (("predict", "{corrupted}", "{notes}"), ["corrupted.pt"]),
    (("predict", "{ckpt}", "{notes}"), ["notes.txt", "not an image"]),
    (("predict", "{ckpt}", "{folder}"), ["folder"]),
    (("explain", "--model", "{missing}/net.py:Net"), ["net.py"]),
    (("explain", "--batch-size", "0"), ["--batch-size: 0"]),
    # bench: refused before any measuring starts (the progress lines would be a second line)
    (("bench", "--device", "tpu"), ["device", "cuda:N"]),
    (("bench", "--device", "cuda"), ["device", "no usable CUDA device"]),
    (("bench", "--recording", "--device", "cuda:0"), ["device", "no usable CUDA device"]),
    (("bench", "--json", "{under_file}/bench.json"), ["cannot write", "--json"]),
    (("bench", "--json", "{folder}"), ["cannot write", "folder"]),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_bad_input_gives_one_error_line(bad_inputs, argv, words, capsys, monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)  # the same answers on a GPU machine
    code, _, stderr = call(capsys, *(a.format(**bad_inputs) for a in argv))
    assert code != 0
    line = assert_one_error_line(stderr)
    for word in words:
        assert word in line, line


@pytest.mark.parametrize("launch, words", [
    (("--nnodes", "2", "--master-port", "70000"), ["--master-port 70000 is not a TCP port", "29500"]),
    (("--nproc-per-node", "2", "--master-port", "-1"), ["--master-port -1 is not a TCP port"]),
    (("--nproc-per-node", "2", "--master-port", "0"), ["--master-port 0 is not a TCP port"]),
    (("--nproc-per-node", "0"), ["--nproc-per-node", "at least 1"]),
    (("--nnodes", "2", "--node-rank", "2", "--master-port", "29500"), ["--node-rank 2 is outside 0…1"]),
    (("--nnodes", "2", "--node-rank", "-1", "--master-port", "29500"), ["--node-rank -1 is outside 0…1"]),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_launch_numbers_out_of_range_give_one_error_line(launch, words, tmp_path, capsys):
    """Regression: a master port outside 1…65535 ended in bind()'s OverflowError traceback."""
    code, _, stderr = call(capsys, "train", "--max-steps", "2", "--device", "cpu", "--out", tmp_path / "out",
                           "--db", tmp_path / "runs.sqlite", *launch)
    assert code == cli.EXIT_USAGE
    line = assert_one_error_line(stderr)
    for word in words:
        assert word in line, line
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs.sqlite").exists()


def test_unwritable_out_creates_nothing(bad_inputs, tmp_path, capsys):
    before = sorted(tmp_path.rglob("*"))
    code, _, _ = call(capsys, "train", "--max-steps", "2", "--out", bad_inputs["under_file"], "--db",
                      tmp_path / "runs.sqlite")
    assert code == cli.EXIT_USAGE
    assert sorted(tmp_path.rglob("*")) == before  # no temp file, no output folder, no run database


@pytest.mark.parametrize("flag", ["--windows", "--window-steps", "--warmup", "--gui-epochs"])
def test_bench_counts_must_be_positive(flag, capsys):
    code, _, stderr = call(capsys, "bench", flag, "0")
    assert code == cli.EXIT_USAGE
    assert stderr.splitlines()[0].endswith(f"argument {flag}: 0 is not allowed (at least 1)")
    assert "Traceback" not in stderr


def test_bench_json_write_failure_is_one_error_line(tmp_path, monkeypatch):
    """The results are measured by then: a failing write (disk full) is reported, never a traceback."""
    from workbench.cli.common import _write_json
    from workbench.core.ground import atomic
    from workbench.core.ground.errors import WorkbenchError

    def disk_full(target, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic, "write_text_atomic", disk_full)
    with pytest.raises(WorkbenchError, match="cannot write .*bench.json: No space left on device"):
        _write_json(str(tmp_path / "bench.json"), {"rows": []})


def test_run_failure_exit_code_and_files(tmp_path, capsys):
    out = tmp_path / "out"
    code, _, stderr = call(capsys, "train", "--lr", "10", "--max-steps", "50", "--out", out)
    assert code == cli.EXIT_RUN_FAILED
    # the alerts the run raised on its way come first (the dead units); the failure is one line, said once: the
    # loss alert it repeats is in the run's events, not printed again
    alerts = [line for line in stderr.splitlines() if line.startswith("alert (")]
    assert [line.split(":")[0] for line in alerts] == ["alert (warning, step 4)"]
    line = assert_one_error_line("\n".join(line for line in stderr.splitlines() if line not in alerts))
    assert "diverged" in line and "learning rate" in line  # the hint comes along
    assert '"rule":"loss_exploded"' in (out / "events.jsonl").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["events.jsonl"]  # the stream is kept, no checkpoint
    assert "RunFailed" in (out / "events.jsonl").read_text().splitlines()[-1]


@pytest.mark.parametrize("argv, code", [
    (("train", "--batch-size", "0", "--out", "out"), cli.EXIT_USAGE),
    (("predict", "{corrupted}", "{image}"), cli.EXIT_USAGE),
    (("train", "--config", "{bad_json}", "--out", "out"), cli.EXIT_USAGE),
])
def test_bad_input_in_a_real_shell(tmp_path, bad_inputs, samples_dir, argv, code):
    values = {**bad_inputs, "image": samples_dir / "digit_1.png"}
    result = shell(*(str(a).format(**values) for a in argv), cwd=tmp_path)
    assert result.returncode == code
    assert_one_error_line(result.stderr)
    assert result.stdout == ""
    assert not (tmp_path / "out").exists()


# -- the core needs no Qt ---------------------------------------------------------------------------------------
QT_FREE = textwrap.dedent("""
    import sys
    sys.modules["PySide6"] = None      # any `import PySide6...` now raises ImportError
    sys.modules["pyqtgraph"] = None
    import workbench.core.engine, workbench.cli
    from workbench.core.ground.config import TrainConfig
    from workbench.core.engine import Trainer
    from workbench.core.ground.events import RunFinished, Step
    events = []
    result = Trainer().run(TrainConfig(epochs=1, max_steps=3, hidden_dim=16), events.append)
    assert isinstance(result, RunFinished), result
    assert [e.step for e in events if isinstance(e, Step)] == [1, 2, 3]
    assert sys.modules["PySide6"] is None and sys.modules["pyqtgraph"] is None
    assert not any(name.startswith("workbench.ui") for name in sys.modules)
    print("QT-FREE OK", result.steps)
""")


def test_core_runs_without_qt(tmp_path):
    result = subprocess.run([sys.executable, "-c", QT_FREE], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "QT-FREE OK 3" in result.stdout


def test_blocking_qt_really_blocks_it(tmp_path):
    """The check above would prove nothing if the blocking trick did not work."""
    code = ("import sys; sys.modules['PySide6'] = None\n"
            "try:\n import PySide6.QtCore\nexcept ImportError:\n print('blocked')")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "blocked"


# -- documented problems ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    "    def __init__(self):\n        super().__init__()\n",
    "    def __init__(self, **kw):\n        super().__init__()\n        self.fc = nn.Linear(10, 10)\n"
    "    def forward(self, x):\n        return self.fc(x)\n",
], ids=["wrong-constructor", "forward-fails"])
def test_explain_with_a_broken_user_model_gives_one_error_line(tmp_path, body, capsys):
    path = tmp_path / "mine.py"
    path.write_text("from torch import nn\n\nclass Net(nn.Module):\n" + body)
    code, _, stderr = call(capsys, "explain", "--model", f"{path}:Net")
    assert code == cli.EXIT_USAGE
    assert_one_error_line(stderr)


def test_predict_with_a_text_file_as_checkpoint(tmp_path, samples_dir, capsys):
    fake = tmp_path / "model.pt"
    fake.write_text("hello world\n")
    code, _, stderr = call(capsys, "predict", fake, samples_dir / "digit_1.png")
    assert code == cli.EXIT_USAGE
    assert_one_error_line(stderr)


def test_predict_with_weights_that_are_not_finite_is_one_error_line(tmp_path, samples_dir, capsys):
    """Regression: it printed 'digit_1.png: 0 (nan%)'."""
    import torch

    from workbench.core.domain import checkpoint
    from workbench.core.domain.model import SandwichNet
    from workbench.core.ground.results import RunResults

    model = SandwichNet(hidden_dim=16)
    with torch.no_grad():
        model.core_block.fc1.weight.fill_(float("nan"))
    path = checkpoint.save(tmp_path / "checkpoint.pt", model, TrainConfig(hidden_dim=16), results=RunResults(),
                           versions={}, classes=tuple("0123456789"))
    code, out, stderr = call(capsys, "predict", path, samples_dir / "digit_1.png")
    assert code == cli.EXIT_USAGE and out == ""
    line = assert_one_error_line(stderr)
    assert "not finite" in line and "diverged" in line and "lower learning rate" in line


def test_train_with_missing_data_root_exits_with_usage_code(tmp_path, capsys):
    code, _, _ = call(capsys, "train", "--dataset", "idx", "--data-root", tmp_path / "missing", "--out",
                      tmp_path / "out")
    assert code == cli.EXIT_USAGE


@pytest.mark.parametrize("argv, named", [(("train", "--lr", "abc"), "--lr"), (("runs", "show"), "run_id"),
                                         (("train", "--no-such-flag"), "--no-such-flag")])
def test_a_mistyped_flag_is_one_error_line_and_where_the_help_is(argv, named, capsys):
    code, out, err = call(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 2, err  # not the 35-line usage above it
    assert lines[0].startswith("workbench") and ": error: " in lines[0] and named in lines[0]
    assert lines[1].endswith("--help)")


def test_a_terminal_is_told_while_pytorch_loads_and_the_line_is_wiped(monkeypatch):
    import io

    from workbench.cli import common

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    common.quiet_torch_logs()
    assert terminal.getvalue() == "loading PyTorch…\r\033[K"


def test_a_missing_data_folder_is_said_before_pytorch_loads(tmp_path):
    """`train --data-root /nope` answered at once, in a fresh interpreter that never imports torch."""
    code = ("import sys; from workbench import cli; rc = cli.main(['train', '--data-root', sys.argv[1]]); "
            "print('TORCH', 'torch' in sys.modules); sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "nope")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "TORCH False" in out.stdout
    missing = tmp_path / "nope"
    assert out.stderr.strip() == f"workbench: error: --data-root: '{missing}' does not exist or is not a folder"
