"""Warm starts: a compiled run keeps its compile cache in its folder; a later run with the same key loads it before
its first compile (instruments.warm_start, history.warm_starts), and the payback says what a cold and a warm launch pay.

The key, the choice of run, the refusals and the payback lines are plain data (no compile). Two real Inductor runs
(a cold one and a warm one, each with a fresh Inductor cache folder, so that only the loaded artefacts can serve the
warm one) show that the artefacts are saved, found automatically, loaded and used."""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
from pathlib import Path

import pytest

from ..helpers import VERSIONS, assert_one_error_line, call, of
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import CompileEvent, CompileReport, Notice, RunFinished, from_dict, to_dict
from workbench.core.ground.payback import Payback
from workbench.core.ground.results import RunResults
from workbench.core.history.runs import RunStore
from workbench.core.ground.config import settings
from workbench.core.ground.signing import sign
from workbench.core.history.warm_starts import (CACHE_FILE, COMPILE_SETTINGS, KERNELS_FILE, KEY_FILE, CompileCache,
                                                WarmKey, WarmStartError, check_key, find_warm_source, key_differences,
                                                read_cache, signed_purpose, trusted_bytes, trusted_kernels,
                                                warm_measurement,
                                                warm_source, with_measured_launch)

KEY = WarmKey(settings={"backend": "inductor", "mode": "default", "hidden_dim": 8}, input_shape=(32, 1, 28, 28),
              model_hash="abc", torch="2.14.1", device="cpu: CPU (x86_64, 2 cores)")


def _recorded(store: RunStore, folder: Path, key: WarmKey | None = KEY, compile_seconds: float = 14.7,
              data: bytes = b"artefacts", signed: bool = True, **cache_fields) -> int:
    """A run row whose folder holds a compile cache made for `key` (none when `key` is None), signed as this
    Workbench signs the caches it writes (`signed`)."""
    folder.mkdir(parents=True, exist_ok=True)
    run_id = store.start_run(TrainConfig(backend="inductor").to_dict(), out_dir=str(folder))
    if key is not None:
        (folder / CACHE_FILE).write_bytes(data)
        cache = CompileCache(key=key, artifacts={"inductor": 3}, bytes=len(data), compile_seconds=compile_seconds,
                             signature=sign(data, signed_purpose(key)) if signed else "", **cache_fields)
        (folder / KEY_FILE).write_text(json.dumps(cache.to_dict()), encoding="utf-8")
    return run_id


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as opened:
        yield opened


# -- the key ------------------------------------------------------------------------------------------------------
def test_equal_keys_differ_in_nothing_and_each_difference_is_named():
    assert key_differences(KEY, KEY, "run #3") == []
    other = dataclasses.replace(KEY, settings={**KEY.settings, "hidden_dim": 16}, input_shape=(64, 1, 28, 28),
                                model_hash="def", torch="2.13.0", device="cuda: NVIDIA H200", world_size=2)
    assert key_differences(other, KEY, "run #3") == [
        "hidden_dim: 16 here, 8 in run #3", "batch shape: (64, 1, 28, 28) here, (32, 1, 28, 28) in run #3",
        "the model's code changed since run #3 (its source files hash differently)",
        "torch: 2.13.0 here, 2.14.1 in run #3", "device: cuda: NVIDIA H200 here, cpu: CPU (x86_64, 2 cores) in run #3",
        "processes: 2 here, 1 in run #3"]


def test_a_cache_built_for_another_platform_is_refused_before_compiling_naming_both(store, tmp_path):
    built_on = dataclasses.replace(KEY, platform="x86_64 avx2 · g++ 12.2.0")
    here = dataclasses.replace(KEY, platform="aarch64 asimd · clang 17.0.6")
    run_id = _recorded(store, tmp_path / "elsewhere", built_on)
    with pytest.raises(WarmStartError) as refused:
        check_key(warm_source(store, run_id), here)
    assert refused.value.message == (
        f"run #{run_id}'s compile cache was made for other settings: compiled code for: aarch64 asimd · clang 17.0.6 "
        f"here, x86_64 avx2 · g++ 12.2.0 in run #{run_id}")
    assert refused.value.hint.startswith("its code was compiled for another machine or PyTorch: warm-start from a run "
                                         "compiled here")
    unstamped = _recorded(store, tmp_path / "older", KEY)  # a cache from before the stamp
    assert key_differences(here, KEY, "run #9") == [
        "compiled code for: aarch64 asimd · clang 17.0.6 here, a platform not stamped (a cache from before it was) in "
        "run #9"] and unstamped


def test_compiled_kernels_are_put_back_only_as_this_workbench_signed_them(store, tmp_path):
    folder, tar = tmp_path / "run", b"kernels: binaries that would run here"
    run_id = _recorded(store, folder, KEY, kernels=2, kernels_bytes=len(tar),
                       kernels_signature=sign(tar, signed_purpose(KEY, "compiled kernels")))
    (folder / KERNELS_FILE).write_bytes(tar)
    assert trusted_kernels(warm_source(store, run_id)) == tar
    (folder / KERNELS_FILE).write_bytes(tar + b" changed")
    with pytest.raises(WarmStartError, match="compiled kernels .* do not carry this Workbench's signature"):
        trusted_kernels(warm_source(store, run_id))
    assert trusted_kernels(warm_source(store, _recorded(store, tmp_path / "none", KEY))) is None  # kept none


def test_a_cache_made_for_other_settings_is_refused_naming_the_setting_and_what_to_do(store, tmp_path):
    run_id = _recorded(store, tmp_path / "r1")
    source = warm_source(store, run_id)
    check_key(source, KEY)  # its own key: accepted
    with pytest.raises(WarmStartError) as info:
        check_key(source, dataclasses.replace(KEY, settings={**KEY.settings, "mode": "max-autotune"}))
    assert info.value.field == "warm_from"
    assert f"mode: 'max-autotune' here, 'default' in run #{run_id}" in str(info.value)
    assert f"workbench train --from {run_id}" in info.value.hint


# Every setting that changes the compiled graphs, written out here rather than read from the declarations: a setting
# whose `changes_graphs` is lost (or never set) fails the test below instead of silently leaving the key.
GRAPH_SETTINGS = {"dataset", "data_root", "model", "hidden_dim", "dropout", "batch_size", "backend", "mode", "dynamic",
                  "fullgraph", "eager_first_call", "amp", "matmul_precision"}
OTHER_VALUES = {"dataset": "fashion-mnist", "data_root": "/elsewhere", "model": "m.py:Net", "hidden_dim": 64,
                "dropout": 0.5, "batch_size": 64, "backend": "aot_eager", "mode": "max-autotune", "dynamic": True,
                "fullgraph": True, "eager_first_call": True, "amp": "bf16", "matmul_precision": "high"}


def test_the_key_holds_every_setting_that_changes_the_graphs_and_only_those():
    assert set(COMPILE_SETTINGS) == GRAPH_SETTINGS
    assert {s.name for s in settings() if s.changes_graphs} == GRAPH_SETTINGS  # one declaration, the key's source


@pytest.mark.parametrize("name", sorted(GRAPH_SETTINGS))
def test_a_cache_made_under_one_value_of_a_graph_setting_never_warms_a_run_with_another(name, store, tmp_path):
    from workbench.core.engine.instruments.warm_start import compile_key

    class Run:  # what compile_key reads of a run
        def __init__(self, config):
            self.config, self.device = config, __import__("torch").device("cpu")

    import torch

    example, model = torch.zeros(32, 784), torch.nn.Linear(784, 10)
    base = TrainConfig(backend="inductor")
    changed = base.replace(**{name: OTHER_VALUES[name]}, **({"backend": "inductor"} if name == "mode" else {}))
    cached, asking = (compile_key(Run(config), model, example, 1) for config in (base, changed))
    _recorded(store, tmp_path / "r1", cached)
    assert find_warm_source(store, cached) is not None  # the same settings warm
    assert find_warm_source(store, asking) is None
    assert any(line.startswith(f"{name}: ") for line in key_differences(asking, cached, "run #1"))


def test_the_model_hash_covers_the_base_classes_files(tmp_path, monkeypatch):
    from workbench.core.engine.instruments.warm_start import model_hash

    (tmp_path / "wb_base_net.py").write_text("import torch\nclass Base(torch.nn.Module):\n    pass\n")
    (tmp_path / "wb_own_net.py").write_text("from wb_base_net import Base\nclass Net(Base):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from wb_own_net import Net  # noqa: PLC0415 - written just above

    before = model_hash(Net)
    (tmp_path / "wb_base_net.py").write_text("import torch\nclass Base(torch.nn.Module):\n    scale = 2\n")
    assert model_hash(Net) != before
    for name in ("wb_own_net", "wb_base_net"):
        sys.modules.pop(name, None)


# -- which run ----------------------------------------------------------------------------------------------------
def test_the_newest_run_with_the_same_key_is_found_not_the_asking_one(store, tmp_path):
    assert find_warm_source(store, KEY) is None  # an empty history
    first = _recorded(store, tmp_path / "r1")
    _recorded(store, tmp_path / "r2", dataclasses.replace(KEY, torch="2.13.0"))  # another key
    _recorded(store, tmp_path / "r3", None)  # no cache (eager, aot_eager)
    asking = _recorded(store, tmp_path / "r4")  # the run asking: its own folder is no warm start
    assert find_warm_source(store, KEY, exclude=tmp_path / "r4").run_id == first
    assert find_warm_source(store, KEY).run_id == asking


def test_a_warm_cache_carries_the_cold_launch_it_descends_from(store, tmp_path):
    cold = _recorded(store, tmp_path / "cold", compile_seconds=14.7)
    warm = _recorded(store, tmp_path / "warm", compile_seconds=4.1, warm_from=cold, cold_run=cold,
                     cold_compile_seconds=14.7)
    assert (warm_source(store, cold).cold_run, warm_source(store, cold).cold_compile_seconds) == (cold, 14.7)
    assert (warm_source(store, warm).cold_run, warm_source(store, warm).cold_compile_seconds) == (cold, 14.7)
    assert warm_measurement(store, cold) == (warm, 4.1)  # completes the cold run's payback
    assert warm_measurement(store, warm) is None


def test_a_cold_runs_payback_gains_the_warm_launch_a_later_run_measured(store, tmp_path):
    cold = _recorded(store, tmp_path / "cold", compile_seconds=14.7)
    record = dataclasses.replace(store.get(cold), events=[RunFinished(steps=10_000, epochs=1, seconds=60.0,
                                                                      stopped=False, results=RunResults(payback=COLD))])
    assert with_measured_launch(store, record) is record  # no warm run yet: "not measured yet"
    warm = _recorded(store, tmp_path / "warm", compile_seconds=4.1, warm_from=cold, cold_run=cold,
                     cold_compile_seconds=14.7)
    shown = with_measured_launch(store, record).results.payback
    assert (shown.warm_run, shown.warm_compile_s) == (warm, 4.1)
    assert f"(compile 4.1 s, measured in run #{warm})" in shown.launch_lines()[1]
    warm_record = dataclasses.replace(store.get(warm), events=[RunFinished(
        steps=10_000, epochs=1, seconds=50.0, stopped=False,
        results=RunResults(payback=dataclasses.replace(COLD, warm_from=cold)))])
    assert with_measured_launch(store, warm_record) is warm_record  # a warm run has its own launch


# -- only what this Workbench signed is loaded ----------------------------------------------------------------------
@pytest.mark.parametrize("case", ["unsigned", "bytes changed", "key changed", "another user's", "signature moved"])
def test_a_cache_this_workbench_did_not_sign_as_it_is_is_never_loaded(case, store, tmp_path, monkeypatch):
    folder = tmp_path / "r1"
    run_id = _recorded(store, folder, signed=case != "unsigned")
    cache = read_cache(folder)
    if case == "bytes changed":  # what a crafted file in a run's folder is
        (folder / CACHE_FILE).write_bytes(b"crafted pickle")
    if case == "key changed":  # passed off as a cache for other settings
        other = dataclasses.replace(cache, key=dataclasses.replace(KEY, torch="2.13.0"))
        (folder / KEY_FILE).write_text(json.dumps(other.to_dict()), encoding="utf-8")
    if case == "another user's":  # signed by a Workbench with another key (a folder copied from elsewhere)
        monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "another-data"))
    if case == "signature moved":  # a signature this Workbench made, for other bytes
        stolen = sign(b"other artefacts", signed_purpose(KEY))
        (folder / KEY_FILE).write_text(json.dumps(dataclasses.replace(cache, signature=stolen).to_dict()))
    with pytest.raises(WarmStartError) as info:
        warm_source(store, run_id)
    words = "is not signed" if case == "unsigned" else "does not carry this Workbench's signature"
    assert words in str(info.value) and "runs the code it holds" in str(info.value)
    refused = []
    key = read_cache(folder).key
    assert find_warm_source(store, key, refused=refused.append) is None  # passed over by the automatic choice
    assert [str(e) for e in refused] == [str(info.value)]


def test_a_signed_cache_is_loaded_as_the_bytes_that_were_checked(store, tmp_path):
    run_id = _recorded(store, tmp_path / "r1", data=b"our artefacts")
    source = warm_source(store, run_id)
    assert trusted_bytes(source) == b"our artefacts"
    (tmp_path / "r1" / CACHE_FILE).write_bytes(b"swapped after the choice")
    with pytest.raises(WarmStartError, match="does not carry this Workbench's signature"):
        trusted_bytes(source)  # what is loaded is read and checked at once, not chosen earlier and read later


def test_the_signing_key_is_made_once_readable_by_the_user_alone():
    from workbench.core.ground import signing

    first = sign(b"x", "p")
    assert sign(b"x", "p") == first and sign(b"x", "q") != first and sign(b"y", "p") != first
    assert signing.key_path().stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("case", ["no such run", "no cache", "folder gone", "unreadable key"])
def test_warm_from_a_run_that_cannot_serve_says_why(store, tmp_path, case):
    folder = tmp_path / "r1"
    run_id = 7 if case == "no such run" else _recorded(store, folder, None if case == "no cache" else KEY)
    if case == "folder gone":
        (folder / CACHE_FILE).unlink()
        (folder / KEY_FILE).unlink()
        folder.rmdir()
    if case == "unreadable key":
        (folder / KEY_FILE).write_text("{not json", encoding="utf-8")
        assert read_cache(folder) is None
    with pytest.raises(WarmStartError) as info:
        warm_source(store, run_id)
    expected = {"no such run": "no run with id 7", "no cache": f"run #{run_id} left no compile cache",
                "folder gone": "is gone", "unreadable key": f"run #{run_id} left no compile cache"}[case]
    assert expected in str(info.value) and info.value.hint


def test_the_command_line_refuses_a_warm_from_run_without_a_cache_before_training(store, tmp_path, capsys):
    empty = _recorded(store, tmp_path / "r1", None)
    for run_id, words in ((empty, f"run #{empty} left no compile cache"), (99, "no run with id 99")):
        code, _, err = call(capsys, "train", "--backend", "inductor", "--warm-from", run_id, "--db", store.path,
                            "--out", tmp_path / "new")
        line = assert_one_error_line(err)
        assert code == 2 and line.startswith("workbench: error: --warm-from: ") and words in line
    assert [r.id for r in store.list()] == [empty]  # nothing was started, nor recorded
    assert not (tmp_path / "new" / "events.jsonl").exists()


# -- the payback of a cold and a warm launch ------------------------------------------------------------------------
# A compiled step saves 2 ms: 14.7 s of cold compile come back at step 7,350, 4.1 s of warm compile at step 2,050.
COLD = Payback(eager_step_s=0.010, compiled_step_s=0.008, compile_s=14.7, steps=10_000)
WARM = dataclasses.replace(COLD, compile_s=4.1, warm_from=3, cold_run=1, cold_compile_s=14.7)


def test_a_cold_run_says_its_launch_and_that_the_warm_one_is_not_measured_yet():
    assert COLD.launch_lines() == (
        "cold launch: pays off at step 7,350 (compile 14.7 s, measured in this run)",
        "next launch (warm): not measured yet: the next run with these settings starts warm from this run's "
        "compile cache and measures it")
    assert COLD.with_warm_launch(5, 4.1).launch_lines()[1] == (
        "next launch (warm): pays off at step 2,050 (compile 4.1 s, measured in run #5)")


def test_a_warm_run_says_both_launches_each_with_the_run_that_measured_it():
    assert WARM.launch_lines() == ("cold launch: pays off at step 7,350 (compile 14.7 s, measured in run #1)",
                                   "next launch (warm): pays off at step 2,050 (compile 4.1 s, measured in this run)")
    unknown = dataclasses.replace(WARM, cold_compile_s=None, cold_run=None)
    assert unknown.launch_lines()[0] == "cold launch: not known: the cold run's compile time was not recorded"


def test_a_launch_that_never_pays_off_says_so():
    slower = dataclasses.replace(WARM, compiled_step_s=0.012)
    assert slower.launch_lines()[1] == ("next launch (warm): never pays off (compile 4.1 s, measured in this run; "
                                        "compiled steps are 0.83× as fast as eager)")


def test_the_launch_figures_survive_the_record_and_a_cold_payback_keeps_the_old_layout():
    assert Payback.from_dict(json.loads(json.dumps(WARM.to_dict()))) == WARM
    assert not {"warm_from", "cold_compile_s", "warm_compile_s"} & set(COLD.to_dict())
    assert Payback.from_dict(COLD.to_dict()) == COLD
    with pytest.raises(ValueError, match="Payback.warm_from"):
        Payback.from_dict({**WARM.to_dict(), "warm_from": "3"})


def test_a_compile_report_without_the_warm_fields_still_loads():
    old = to_dict(CompileReport(compiled=True, backend="inductor", mode="default"))
    for name in ("warm_from", "cold_run", "cold_compile_seconds"):
        old.pop(name)
    assert from_dict(old).warm_from is None
    warm = CompileReport(compiled=True, backend="inductor", mode="default", warm_from=3, cold_run=1,
                         cold_compile_seconds=14.7)
    assert from_dict(json.loads(json.dumps(to_dict(warm)))) == warm
    with pytest.raises(ValueError, match="warm_from"):
        from_dict({**to_dict(warm), "warm_from": "3"})


def test_the_report_says_a_runs_launch_and_both_payback_lines(tmp_path):
    from workbench.core.ground.events import RunStarted
    from workbench.core.ground.results import RunResults
    from workbench.core.history.recording import RunRecorder
    from workbench.core.history.report.build import write_report_files

    with RunStore(tmp_path / "runs.sqlite") as store:
        recorder = RunRecorder(store, out_dir=str(tmp_path / "run"), interval=0)
        for event in (RunStarted(config=TrainConfig(backend="inductor"), device="cpu", device_name="CPU",
                                 versions=VERSIONS, train_size=960, val_size=100, steps_per_epoch=30, total_steps=30),
                      dataclasses.replace(CompileReport(compiled=True, backend="inductor", mode="default"),
                                          warm_from=3, cold_run=1, cold_compile_seconds=14.7),
                      RunFinished(steps=30, epochs=1, seconds=9.0, stopped=False,
                                  results=RunResults(compile_seconds=4.1, payback=WARM))):
            recorder(event)
        html_path, _ = write_report_files([store.get(recorder.run_id, with_events=True)], {}, tmp_path / "r.html")
    text = html_path.read_text(encoding="utf-8")
    assert ("<tr><th>Launch</th><td>warm: run #3&#x27;s compile cache loaded before the first compile; a cold "
            "launch compiled for 14.70 s in run #1</td></tr>") in text
    assert "<li>Cold launch: pays off at step 7,350 (compile 14.7 s, measured in run #1).</li>" in text
    assert "<li>Next launch (warm): pays off at step 2,050 (compile 4.1 s, measured in this run).</li>" in text


# -- two real launches -----------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Launched:
    cold_id: int
    warm_id: int
    cold_dir: Path
    warm_dir: Path
    cold: tuple  # (events, result)
    warm: tuple
    db: Path
    planted: int  # a run between them with a crafted compile cache for the same key


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> Launched:
    """A cold Inductor run, then the same settings again: each with a fresh Inductor cache folder (no kernel either
    could find on disk but what the warm start loaded), recorded in one history."""
    import torch
    from torch._inductor.utils import clear_caches

    from workbench.core.kernel.launch import start_run
    from workbench.core.run.run_request import Launch, RunRequest

    root = tmp_path_factory.mktemp("warm-start")
    config = TrainConfig(epochs=1, max_steps=2, hidden_dim=8, backend="inductor", device="cpu")
    runs = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as patch:  # its own folders, as every test gets (_isolated_workbench_dirs)
            patch.setenv("WORKBENCH_DATA_DIR", str(root / "data"))
            patch.setenv("WORKBENCH_CACHE_DIR", str(root / "cache"))
            loaded = []  # every cache handed to torch to load (it unpickles what it is given)
            load = torch.compiler.load_cache_artifacts
            patch.setattr(torch.compiler, "load_cache_artifacts", lambda data: loaded.append(data) or load(data))
            for name in ("cold", "warm"):
                patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(root / f"inductor-{name}"))
                clear_caches()
                events: list = []
                request = RunRequest(config, out_dir=str(root / name), db=str(root / "runs.sqlite"),
                                     launch=Launch(where="here"))
                runs[name] = (events, start_run(request, events.append))
                assert isinstance(runs[name][1], RunFinished), runs[name][1]
                if name == "cold":
                    with RunStore(root / "runs.sqlite") as store:
                        planted = _plant_crafted_cache(store, root / "planted", read_cache(root / "cold"))
        clear_caches()
    finally:
        torch.set_num_threads(threads)
    with RunStore(root / "runs.sqlite") as store:
        cold_id, _, warm_id = (r.id for r in store.list())
    assert loaded == [(root / "cold" / CACHE_FILE).read_bytes()]  # never the planted file's
    return Launched(cold_id, warm_id, root / "cold", root / "warm", runs["cold"], runs["warm"], root / "runs.sqlite",
                    planted)


def _plant_crafted_cache(store: RunStore, folder: Path, cold: CompileCache) -> int:
    """A newer recorded run whose folder holds a crafted compile cache claiming the cold run's key, with the cold
    run's own signature: the newest match, which an automatic warm start must pass over."""
    run_id = _recorded(store, folder, None)
    (folder / CACHE_FILE).write_bytes(b"crafted: would run code when unpickled")
    (folder / KEY_FILE).write_text(json.dumps(cold.to_dict()), encoding="utf-8")
    return run_id


def test_a_compiled_run_keeps_its_compile_cache_with_its_key(launched):
    cache = read_cache(launched.cold_dir)
    results = launched.cold[1].results
    assert cache is not None and cache.warm_from is None
    assert cache.artifacts.get("inductor", 0) > 0 and cache.bytes == (launched.cold_dir / CACHE_FILE).stat().st_size
    assert cache.compile_seconds == results.compile_seconds
    assert cache.key.settings["backend"] == "inductor" and cache.key.input_shape == (32, 28, 28)
    assert of(launched.cold[0], CompileReport)[-1].warm_from is None
    # On the CPU it keeps the C++ kernels it built too (the mega-cache leaves them out), stamped with what they need.
    assert cache.kernels > 0 and cache.kernels_bytes == (launched.cold_dir / KERNELS_FILE).stat().st_size
    assert " · g++ " in cache.key.platform and cache.key.platform.startswith(platform.machine())


def test_a_warm_start_puts_the_kernels_back_and_its_compile_builds_none(launched):
    """The warm run's Inductor folder started empty: each kernel binary in it is the cold run's file, put back with
    its time, not one built again."""
    root = launched.cold_dir.parent
    notices = [n.message for n in of(launched.warm[0], Notice)]
    assert any("compiled C++ kernel files" in m for m in notices), notices
    built = {path.relative_to(root / "inductor-warm"): path.stat().st_mtime for path in
             (root / "inductor-warm").rglob("*.so")}
    assert built, "the warm run used no C++ kernel"
    for name, when in built.items():
        assert when == (root / "inductor-cold" / name).stat().st_mtime, f"{name} was built again"


def test_the_next_run_finds_it_loads_it_and_its_compile_uses_it(launched):
    events, result = launched.warm
    notices = [n.message for n in of(events, Notice)]
    assert any(m.startswith(f"warm start from #{launched.cold_id}: its compile cache (") for m in notices)
    assert any(m.startswith(f"no warm start from it: run #{launched.planted}'s compile cache ") and
               "does not carry this Workbench's signature" in m for m in notices)  # and it was never loaded
    # What the compile found came from the loaded artefacts: the warm run's Inductor folder started empty.
    kinds = {e.kind for e in of(events, CompileEvent)}
    assert "cache_hit" in kinds and "cache_miss" not in kinds
    assert any(m.startswith(f"warm start from #{launched.cold_id}: the compile found ") for m in notices)
    report = of(events, CompileReport)[-1]
    cold_seconds = launched.cold[1].results.compile_seconds
    assert (report.warm_from, report.cold_run, report.cold_compile_seconds) == (
        launched.cold_id, launched.cold_id, cold_seconds)
    payback = result.results.payback
    assert (payback.warm_from, payback.cold_run, payback.cold_compile_s) == (
        launched.cold_id, launched.cold_id, cold_seconds)
    assert f"(compile {result.results.compile_seconds:.1f} s, measured in this run" in payback.launch_lines()[1]
    # Its own cache serves the next launch and remembers the cold one; the history completes the cold run's payback.
    cache = read_cache(launched.warm_dir)
    assert (cache.warm_from, cache.cold_run, cache.cold_compile_seconds) == (
        launched.cold_id, launched.cold_id, cold_seconds)
    with RunStore(launched.db) as store:
        assert warm_measurement(store, launched.cold_id) == (launched.warm_id, result.results.compile_seconds)


def test_runs_show_and_the_report_give_the_cold_run_the_warm_launch_measured_after_it(launched, capsys,
                                                                                           tmp_path):
    code, out, err = call(capsys, "runs", "show", str(launched.cold_id), "--db", launched.db)
    assert code == 0, err
    warm_seconds = launched.warm[1].results.compile_seconds
    assert launched.cold[1].results.payback is not None, launched.cold[1].results.payback_problem
    [line] = [line for line in out.splitlines() if line.startswith("payback, next launch (warm): ")]
    assert f"compile {warm_seconds:.1f} s, measured in run #{launched.warm_id}" in line
    code, _, err = call(capsys, "report", str(launched.cold_id), "--out", tmp_path / "cold.html", "--db", launched.db)
    assert code == 0, err
    assert f"compile {warm_seconds:.1f} s, measured in run #{launched.warm_id}" in (tmp_path / "cold.html").read_text()
