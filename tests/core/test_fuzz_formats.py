"""Property-based fuzzing of every file format Workbench reads (issue 11, item 11).

Each test feeds garbage or a mutated valid file to a reader and asserts that the result is either a valid value or
the app's own error (a WorkbenchError subclass, which the CLI and GUI show as a message): never another exception,
never a hang, never a gigabyte allocation on the word of a header. After the module, a line says how many inputs
each format was given, so a report can quote "N bad inputs tried, all handled".
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import sqlite3
import tempfile
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from workbench import cli
from workbench.core.domain import checkpoint
from workbench.core.domain.checkpoint import CheckpointError
from workbench.core.domain.data import DataError, load_split, read_idx
from workbench.core.ground.images import ImageError, load_digit
from workbench.core.domain.model import SandwichNet
from workbench.core.ground import events
from workbench.core.ground.config import ConfigError, TrainConfig
from workbench.core.ground.results import RunResults
from workbench.core.history.runs import RunStore, RunStoreError

TRIED: Counter = Counter()  # inputs tried per format
# derandomize: the same inputs on every run (a failure is one a rerun shows again, never a flake)
FAST = settings(max_examples=150, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CLASSES = tuple("0123456789")
CONFIG = TrainConfig(hidden_dim=8, epochs=1)


@contextlib.contextmanager
def _scratch():
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


def _mutate(data: bytes, draw_ops: list[tuple[str, int, int]]) -> bytes:
    """Flip, overwrite, delete or truncate bytes at the drawn positions."""
    buf = bytearray(data)
    for op, pos, value in draw_ops:
        if not buf:
            break
        i = pos % len(buf)
        if op == "flip":
            buf[i] ^= 1 << (value % 8)
        elif op == "set":
            buf[i] = value % 256
        elif op == "delete":
            del buf[i: i + 1 + value % 16]
        elif op == "truncate":
            del buf[i:]
    return bytes(buf)


MUTATIONS = st.lists(st.tuples(st.sampled_from(["flip", "set", "delete", "truncate"]),
                               st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


# -- checkpoints ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def good_checkpoint(tmp_path_factory) -> bytes:
    torch.manual_seed(0)
    path = checkpoint.save(tmp_path_factory.mktemp("ckpt") / "checkpoint.pt", SandwichNet(hidden_dim=8), CONFIG,
                           results=RunResults(val_accuracy=0.5), versions={"torch": str(torch.__version__)},
                           classes=CLASSES)
    assert checkpoint.load(path).classes == CLASSES
    return path.read_bytes()


def _load_checkpoint_bytes(data: bytes) -> None:
    TRIED["checkpoint"] += 1
    with _scratch() as folder:
        path = folder / "checkpoint.pt"
        path.write_bytes(data)
        try:
            ckpt = checkpoint.load(path)
        except CheckpointError:
            return
        assert isinstance(ckpt.results, RunResults) and isinstance(ckpt.versions, dict)
        assert all(isinstance(c, str) for c in ckpt.classes)
        ckpt.build_model()


@FAST
@given(st.binary(max_size=512))
def test_checkpoint_random_bytes(data):
    _load_checkpoint_bytes(data)


@FAST
@given(MUTATIONS)
def test_checkpoint_mutated(good_checkpoint, ops):
    _load_checkpoint_bytes(_mutate(good_checkpoint, ops))


WRONG = st.none() | st.integers(-(2**40), 2**40) | st.text(max_size=6) | st.lists(st.integers(), max_size=3) \
    | st.dictionaries(st.text(max_size=4), st.integers(), max_size=3) | st.floats()


@FAST
@given(st.fixed_dictionaries({}, optional={
    "config": WRONG | st.builds(lambda h, n: {**CONFIG.to_dict(), "hidden_dim": h, "epochs": n},
                                st.integers(-(2**40), 2**40) | st.sampled_from([8, 4, 0, -1]),
                                st.integers(-5, 5) | st.text(max_size=3)),
    "metrics": WRONG, "versions": WRONG,
    "classes": WRONG | st.lists(st.text(max_size=3) | st.integers(), max_size=12),
    "format_version": st.sampled_from([1, 0, -1, 2, True, "1", None, 2**70]),
    "state_dict": st.sampled_from(["good", "empty", "wrong-shape", "not-tensors"]),
    "format": st.sampled_from([checkpoint.FORMAT, "other", 7]),
}))
def test_checkpoint_fuzzed_fields(fields):
    state = SandwichNet(hidden_dim=8).state_dict()
    base = {"format": checkpoint.FORMAT, "format_version": 1, "config": CONFIG.to_dict(), "metrics": {},
            "versions": {}, "classes": list(CLASSES)}
    kind = fields.pop("state_dict", "good")
    base["state_dict"] = {"good": state, "empty": {}, "wrong-shape": {k: v[..., :1] for k, v in state.items()},
                          "not-tensors": {k: 1 for k in state}}[kind]
    base.update(fields)
    buf = io.BytesIO()
    torch.save(base, buf)
    _load_checkpoint_bytes(buf.getvalue())


def test_checkpoint_classes_and_metrics_must_be_plain_data(tmp_path):
    """Regression: a checkpoint whose classes were a string or whose metrics were a list loaded as 'valid'. Its
    metrics are a run's results: one of the wrong type is refused too."""
    for field, value in [("classes", "0123456789"), ("metrics", [1, 2]), ("versions", "torch"),
                         ("classes", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), ("metrics", {"samples_per_s": "fast"})]:
        payload = {"format": checkpoint.FORMAT, "format_version": 1, "config": CONFIG.to_dict(),
                   "state_dict": SandwichNet(hidden_dim=8).state_dict(), "metrics": {}, "versions": {},
                   "classes": list(CLASSES), field: value}
        torch.save(payload, tmp_path / "c.pt")
        with pytest.raises(CheckpointError, match=field):
            checkpoint.load(tmp_path / "c.pt")


# -- IDX --------------------------------------------------------------------------------------------------------
def _idx_header(code: int, dims: list[int]) -> bytes:
    return bytes([0, 0, code, len(dims)]) + b"".join(d.to_bytes(4, "big") for d in dims)


@FAST
@given(code=st.sampled_from([0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E, 0x07, 0x00]),
       dims=st.lists(st.integers(0, 2**32 - 1) | st.sampled_from([0, 1, 3, 28]), min_size=0, max_size=5),
       body=st.binary(max_size=256), magic=st.sampled_from([b"\0\0", b"\x1f\x8b", b"\xff\0"]),
       compress=st.booleans(), cut=st.integers(0, 64), ops=MUTATIONS | st.just([]))
def test_idx_fuzzed_header(code, dims, body, magic, compress, cut, ops):
    TRIED["idx"] += 1
    raw = magic + _idx_header(code, dims)[2:] + body
    raw = raw[: len(raw) - cut] if cut < len(raw) else raw
    data = gzip.compress(raw) if compress else raw
    with _scratch() as folder:
        path = folder / "x-idx3-ubyte"
        path.write_bytes(_mutate(data, ops) if ops else data)
        try:
            array = read_idx(path)
        except DataError:
            return
        seen = _readable(path.read_bytes())  # a mutation may have changed the header: judge by what was read
        assert array.nbytes <= len(seen) - 4 - 4 * array.ndim and array.shape == _declared_shape(seen)


def _readable(data: bytes) -> bytes:
    """The bytes a reader of this file gets: gzip decompressed as far as the stream goes, else the file itself."""
    if data[:2] != b"\x1f\x8b":
        return data
    out = bytearray()
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
        try:
            while chunk := stream.read(4096):
                out += chunk
        except (OSError, EOFError, zlib.error):
            pass
    return bytes(out)


def _declared_shape(raw: bytes) -> tuple[int, ...]:
    ndim = raw[3]
    return tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))


@FAST
@given(images=st.sampled_from([(5, 28, 28), (5, 28), (0, 28, 28), (3, 27, 28), (2**31, 28, 28), (5,)]),
       labels=st.sampled_from([(5,), (4,), (0,), (5, 1), (2**32 - 1,)]),
       label_code=st.sampled_from([0x08, 0x09, 0x0D, 0x0E]), ops=st.lists(
           st.tuples(st.sampled_from(["flip", "set", "truncate"]), st.integers(0, 4096), st.integers(0, 255)),
           max_size=3),
       compress=st.booleans())
def test_idx_folder_fuzzed(images, labels, label_code, ops, compress):
    TRIED["idx folder"] += 1
    n_img = min(math.prod(images), 5 * 28 * 28)
    img_raw = _idx_header(0x08, list(images)) + bytes(range(256)) * (n_img // 256) + bytes(n_img % 256)
    size = {0x08: 1, 0x09: 1, 0x0D: 4, 0x0E: 8}[label_code]
    lab_raw = _idx_header(label_code, list(labels)) + bytes(min(math.prod(labels), 5) * size)
    img_raw = _mutate(img_raw, ops) if ops else img_raw
    with _scratch() as folder:
        for name, raw in [("train-images-idx3-ubyte", img_raw), ("train-labels-idx1-ubyte", lab_raw)]:
            (folder / (name + (".gz" if compress else ""))).write_bytes(gzip.compress(raw) if compress else raw)
        try:
            split = load_split("idx", "train", str(folder))
        except DataError:
            return
        assert split.images.shape[1:] == (28, 28) and split.labels.dtype == torch.int64


def test_idx_gigabyte_header_in_gzip_is_refused_before_decompressing(tmp_path):
    """Regression: a gzip IDX file was decompressed whole before its header was read; a small file claiming (and
    expanding to) gigabytes was held in memory. The header is now read first and a claim over the cap refused."""
    for dims in ([2**31, 28, 28], [2**32 - 1] * 4):  # 1.6 TB claimed; a product that overflows int64
        path = tmp_path / "train-images-idx3-ubyte.gz"
        path.write_bytes(gzip.compress(_idx_header(0x08, dims) + bytes(1 << 20)))
        with pytest.raises(DataError, match="GiB are read"):
            read_idx(path)


def test_idx_damaged_deflate_stream_is_a_data_error(tmp_path):
    """Regression: a gzip file whose deflate data was damaged raised zlib.error, not a DataError."""
    data = bytearray(gzip.compress(_idx_header(0x08, [4, 28, 28]) + bytes(range(256)) * 12))
    data[12:20] = b"\xff" * 8
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(DataError):
        read_idx(path)


def test_idx_float_labels_are_refused(tmp_path):
    """Regression: float labels were cast to int64 silently (1.5 became class 1, NaN a garbage number)."""
    (tmp_path / "train-images-idx3-ubyte").write_bytes(_idx_header(0x08, [2, 28, 28]) + bytes(2 * 784))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(
        _idx_header(0x0D, [2]) + np.array([1.5, 2.0], ">f4").tobytes())
    with pytest.raises(DataError, match="float32 labels"):
        load_split("idx", "train", str(tmp_path))


# -- images -----------------------------------------------------------------------------------------------------
def _small_image(fmt: str, mode: str, size: tuple[int, int]) -> bytes:
    img = Image.new(mode, size, 0 if mode != "RGBA" else (0, 0, 0, 0))
    if size[0] > 2 and size[1] > 2:
        img.putpixel((size[0] // 2, size[1] // 2), 255 if mode in ("L", "P") else (255,) * len(mode))
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return buf.getvalue()


def _load_image_bytes(data: bytes, suffix: str) -> None:
    TRIED["image"] += 1
    with _scratch() as folder:
        path = folder / f"digit.{suffix}"
        path.write_bytes(data)
        try:
            pixels = load_digit(path)
        except ImageError:
            return
        assert pixels.shape == (28, 28) and pixels.dtype == np.uint8


@FAST
@given(st.binary(max_size=512), st.sampled_from(["png", "gif", "bmp", "jpg"]))
def test_image_random_bytes(data, suffix):
    _load_image_bytes(data, suffix)


@settings(max_examples=300, deadline=None, database=None)
@given(fmt=st.sampled_from(["PNG", "GIF", "BMP"]), mode=st.sampled_from(["L", "RGB", "RGBA", "P", "1"]),
       size=st.tuples(st.integers(1, 40), st.integers(1, 40)), ops=MUTATIONS | st.just([]))
def test_image_mutated(fmt, mode, size, ops):
    data = _small_image(fmt, mode, size)
    _load_image_bytes(_mutate(data, ops) if ops else data, fmt.lower())


@pytest.mark.parametrize("size", [(1, 1), (1, 5), (5, 1)])
def test_tiny_image_is_blank_not_a_crash(tmp_path, size):
    """Regression guard: one-pixel-wide images."""
    path = tmp_path / "d.png"
    Image.new("L", size, 255).save(path)
    with pytest.raises(ImageError):
        load_digit(path)


# -- config files -----------------------------------------------------------------------------------------------
def _config_from(text: str) -> None:
    TRIED["config"] += 1
    try:
        config = TrainConfig.from_json(text)
    except ConfigError:
        return
    assert TrainConfig.from_json(config.to_json()) == config


@FAST
@given(JSON)
def test_config_random_json(value):
    _config_from(json.dumps(value))


@FAST
@given(st.dictionaries(st.sampled_from(sorted(CONFIG.to_dict())), JSON | st.sampled_from(
    [float("nan"), float("inf"), -float("inf"), 10**400, "NaN", "cuda:99999999999999999999"]), max_size=5))
def test_config_fuzzed_fields(changes):
    _config_from(json.dumps({**CONFIG.to_dict(), **changes}))


@FAST
@given(st.text(max_size=64) | st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", "[" * 100_000,
                                                '{"a":' * 100_000, '{"lr": 1e999}', '{"epochs": 1e400}',
                                                '{"hidden_dim": 99999999999999999999999999999}']))
def test_config_text(text):
    _config_from(text)


def test_config_deep_nesting_is_a_config_error():
    """Regression: json.loads raised RecursionError (not a ConfigError) on deeply nested input."""
    with pytest.raises(ConfigError, match="nested"):
        TrainConfig.from_json("[" * 100_000 + "]" * 100_000)


# -- stored events ----------------------------------------------------------------------------------------------
_GOOD_EVENTS = [
    events.Step(step=1, epoch=1, loss=0.5, samples_per_s=10.0, step_seconds=0.1, memory=events.MemorySample(rss=1.0)),
    events.EpochEnd(epoch=1, train_loss=0.5, val_loss=0.4, val_accuracy=0.9, seconds=1.0),
    events.CompileReport(compiled=True, backend="inductor", mode="default", breaks=(
        events.GraphBreak(reason="r", frames=(events.Frame(file="f.py", line=1, function="f", source="x"),)),)),
    events.RunFinished(steps=1, epochs=1, seconds=1.0, stopped=False, results=RunResults(val_accuracy=0.5)),
    events.Notice(level="info", message="m"),
]


@FAST
@given(st.sampled_from(_GOOD_EVENTS), st.dictionaries(
    st.sampled_from(["type", "step", "epoch", "loss", "memory", "breaks", "frames", "reason", "level", "message",
                     "metrics", "recompiles", "warnings", "compiled", "extra"]),
    JSON | st.just([{"reason": 1}]) | st.just([{"frames": [1]}]) | st.just(["x"]), max_size=3))
def test_event_fuzzed_dict(good, changes):
    TRIED["event"] += 1
    data = {**events.to_dict(good), **changes}
    try:
        event = events.from_dict(data)
    except ValueError:
        return
    assert events.from_dict(events.to_dict(event)) == event


@FAST
@given(JSON)
def test_event_random_value(value):
    TRIED["event"] += 1
    try:
        events.from_dict(value)
    except ValueError:
        pass


@pytest.mark.parametrize("data", [
    {"type": "CompileReport", "compiled": True, "backend": "b", "mode": "m", "breaks": [{"frames": []}]},
    {"type": "CompileReport", "compiled": True, "backend": "b", "mode": "m", "breaks": ["x"]},
    {"type": "Step", "step": "one", "epoch": 1, "loss": 0.1, "samples_per_s": 1.0, "step_seconds": 1.0,
     "memory": {}},
    {"type": "Notice", "level": "info"},
    ["not", "a", "dict"],
])
def test_malformed_events_are_value_errors(data):
    """Regression: a break without 'reason' raised KeyError, a string break TypeError/AttributeError, and a
    Step with step='one' was accepted (and crashed the report later)."""
    with pytest.raises(ValueError):
        events.from_dict(data)


# -- run database -----------------------------------------------------------------------------------------------
COLUMNS = {"config": ["{", "[]", '"text"', "null", '{"dataset": 5}', "{}", "NaN"],
           "environment": ["{", "[1]", "5", None],
           "failure": ["{", "[1]", '{"kind": 1}', "7"],
           "steps": ["lots", None, 1.5, -3],
           "best_val_accuracy": ["high", "NaN", 1e308],
           "samples_per_s": ["fast", -1.0],
           "compile_seconds": ["slow"],
           "peak_memory_mib": ["big"],
           "created": [None, 5, "yesterday"],
           "status": [None, 7],
           "epochs": ["many"],
           "dataset": [None, 3]}


def _runs_cli(db: Path, *args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(["runs", *args, "--db", str(db)])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue() + err.getvalue()


@pytest.mark.slow
@settings(max_examples=80, deadline=None, database=None)
@given(st.lists(st.sampled_from([(c, v) for c, vs in COLUMNS.items() for v in vs]), min_size=1, max_size=3,
                unique=True))
def test_damaged_run_rows(damage):
    TRIED["run database"] += 1
    with _scratch() as folder:
        db = folder / "runs.sqlite"
        with RunStore(db) as store:
            ids = [store.start_run(CONFIG.to_dict()) for _ in range(3)]
            for column, value in damage:
                try:
                    store.db.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, ids[1]))
                except sqlite3.IntegrityError:  # NOT NULL: that damage cannot happen
                    pass
            records = {r.id: r for r in store.list()}
            assert set(records) == set(ids)
            for good in (ids[0], ids[2]):
                assert records[good].status == "running" and records[good].config == CONFIG.to_dict()
            for run_id in ids:
                record = store.get(run_id, with_events=True)
                assert isinstance(record.config, dict) and isinstance(record.environment, dict)
                assert record.failure is None or isinstance(record.failure, dict)
                assert isinstance(record.steps, int) and isinstance(record.created, str)
        code, text = _runs_cli(db)
        assert code == 0, text
        lines = text.splitlines()
        assert len(lines) == 4 and all(lines[i].endswith("running") for i in (1, 3)), text
        for run_id in ids:
            code, text = _runs_cli(db, "show", str(run_id))
            assert code == 0, text


def test_damaged_row_is_listed_as_damaged(tmp_path):
    """Regression: a row with garbage config JSON made `workbench runs` crash with a JSONDecodeError traceback
    for every row; now that row reads 'damaged' and the others show normally."""
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        ids = [store.start_run(CONFIG.to_dict()) for _ in range(3)]
        store.db.execute("UPDATE runs SET config = '{not json', steps = 'many' WHERE id = ?", (ids[1],))
        damaged = store.get(ids[1])
        assert damaged.status == "damaged" and "config" in damaged.failure["message"]
    code, text = _runs_cli(db)
    assert code == 0
    rows = text.splitlines()[1:]
    assert rows[1].rstrip().endswith("damaged") and "mnist-sample" in rows[0] and "mnist-sample" in rows[2]
    code, text = _runs_cli(db, "show", str(ids[1]))
    assert code == 0 and "damaged" in text


@pytest.mark.slow
@FAST
@given(st.lists(st.text(max_size=30) | JSON.map(json.dumps), min_size=1, max_size=3))
def test_damaged_stored_events(lines):
    """A stored event this version cannot read makes `get(with_events=True)` a RunStoreError (shown as a message
    by `runs show` and `report`), never another exception."""
    TRIED["stored events"] += 1
    with _scratch() as folder:
        with RunStore(folder / "runs.sqlite") as store:
            run_id = store.start_run(CONFIG.to_dict())
            store.db.executemany("INSERT INTO events (run_id, seq, type, data) VALUES (?, ?, 'x', ?)",
                                 [(run_id, i, line) for i, line in enumerate(lines)])
            try:
                store.get(run_id, with_events=True)
            except RunStoreError:
                pass


def test_deeply_nested_stored_event_is_a_run_store_error(tmp_path):
    """Regression: json.loads's RecursionError escaped `get` as a crash."""
    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.start_run(CONFIG.to_dict())
        store.db.execute("INSERT INTO events (run_id, seq, type, data) VALUES (?, 0, 'x', ?)",
                         (run_id, "[" * 100_000 + "]" * 100_000))
        with pytest.raises(RunStoreError, match="cannot read"):
            store.get(run_id, with_events=True)


# -- summary ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    """After the module: how many bad inputs each format was given (all handled, or a test above failed), so a
    report can quote the count. A report line, not a test: it depends on which tests ran before it."""
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if TRIED and reporter is not None:
        reporter.write_line("\nfuzzed inputs per format: " + ", ".join(f"{k} {v}" for k, v in sorted(TRIED.items()))
                            + f"; {sum(TRIED.values())} in all")
