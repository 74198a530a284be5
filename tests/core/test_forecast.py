"""The recompile forecast: its batch arithmetic, its matching of Dynamo's wording, and three real compiled runs whose
recompiles it must predict exactly (backend aot_eager: Dynamo's guards without Inductor's compile time)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.forecast import (BATCH_OF_ONE, CONFIRMED, DID_NOT_HAPPEN, EVAL_BATCH, EVAL_MODE,
                                            NOT_PREDICTED, PARTIAL_VAL_BATCH, Forecast, check_forecast,
                                            forecast_recompiles, recompile_cause, steps_per_epoch, val_batch_sizes)

COMPILED = TrainConfig(backend="aot_eager")

# Real reasons, verbatim, as the final CompileReport.recompiles of engine runs carried them (torch 2.14.1, aot_eager,
# the built-in network, batch 32 unless said). Every compiled run's first validation:
GRAD_MODE = "forward: 0/0: GLOBAL_STATE changed: grad_mode (expected: validation runs without gradients)"
# dynamic=None or True, a validation split of 1,025 (batches 1,024 + 1):
ZERO_ONE = ("forward: 0/1: 2 <= x.size()[0]  # x = x.flatten(1)  # workbench/core/domain/model.py:31 in forward (user "
            "code shown is first use of this value--the guard itself is not due user code but due to 0/1 "
            "specialization in the framework; to avoid specialization try "
            "torch._dynamo.decorators.mark_unbacked(tensor, dim))")
# dynamic=False with 1,100 validation images (1,024 + 76), and dynamic=None with batch_size=1024 on the same split:
SIZE_76 = "forward: 0/1: tensor 'x' size mismatch at index 0. expected 1024, actual 76"
# dynamic=False with 1,025 validation images:
SIZE_1 = "forward: 0/1: tensor 'x' size mismatch at index 0. expected 1024, actual 1"
# Not from the engine's loop (there grad_mode fails first): model.eval() with gradients on, Dynamo's own reason.
TRAINING_FLAG = ("forward: 0/0: self._modules['core_block']._modules['dropout'].training == True  # return "
                 "F.dropout(input, self.p, self.training, self.inplace)  # nn/modules/dropout.py:73 in forward\n"
                 "User stack trace:\n  File \"/work/main/workbench/core/domain/model.py\", line 66, in forward\n"
                 "    return self.core_block(self.input_adapter(x))")


def causes(forecasts) -> list[str]:
    return [f.cause for f in forecasts]


# -- the batch arithmetic ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("train_size, batch_size, world_size", [
    (4000, 32, 1), (4001, 32, 1), (31, 32, 1), (101, 8, 2), (54000, 64, 2), (1000, 3, 3), (7, 1, 1)])
def test_steps_per_epoch_is_the_loaders(train_size, batch_size, world_size):
    import torch

    from workbench.core.domain.data import DeviceBatches, Split

    split = Split(torch.zeros(train_size, 1, dtype=torch.uint8), torch.zeros(train_size, dtype=torch.long))
    for rank in range(world_size):
        loader = DeviceBatches(split, batch_size // world_size, torch.device("cpu"), rank=rank, world_size=world_size)
        assert steps_per_epoch(batch_size, train_size, world_size) == len(loader)


@pytest.mark.parametrize("val_size, world_size", [(1000, 1), (1024, 1), (1025, 1), (2124, 1), (1, 1), (4097, 2),
                                                  (3, 2), (2049, 3)])
def test_val_batch_sizes_are_the_loaders(val_size, world_size):
    import torch

    from workbench.core.domain.data import DeviceBatches, Split
    split = Split(torch.zeros(val_size, 1, dtype=torch.uint8), torch.zeros(val_size, dtype=torch.long))
    for rank in range(world_size):
        loader = DeviceBatches(split, EVAL_BATCH, torch.device("cpu"), shuffle=False, drop_last=False,
                               rank=rank, world_size=world_size)
        assert val_batch_sizes(val_size, world_size, rank) == tuple(len(y) for _, y in loader.epoch(0))


# -- the forecast -----------------------------------------------------------------------------------------------
def test_an_eager_run_recompiles_nothing():
    assert forecast_recompiles(TrainConfig(), 4000, 1025) == ()
    assert forecast_recompiles(TrainConfig(dynamic=False), 9900, 1100) == ()


def test_a_run_the_engine_refuses_or_a_process_without_validation_images_has_no_forecast():
    assert forecast_recompiles(COMPILED.replace(batch_size=64), 63, 1000) == ()
    assert forecast_recompiles(COMPILED, 4000, 1, world_size=2, rank=1) == ()


@pytest.mark.parametrize("dynamic", [None, True, False])
def test_every_compiled_run_recompiles_once_for_validation_by_design(dynamic):
    (only,) = forecast_recompiles(COMPILED.replace(dynamic=dynamic), 4000, 1000)  # the bundled sample: one batch
    assert only.cause == EVAL_MODE and only.phase == "eval" and only.expected and only.count == 1
    assert only.when == "at the first validation (after step 125)"
    assert only.fix.startswith("expected: no fix needed")
    assert "grad_mode" in only.text and "1,000 against the training batch of 32" in only.text


def test_the_first_validation_comes_after_the_first_epoch_or_max_steps():
    assert forecast_recompiles(COMPILED, 60_000, 10_000)[0].when == "at the first validation (after step 1,875)"
    assert forecast_recompiles(COMPILED.replace(max_steps=20), 60_000, 10_000)[0].when == \
        "at the first validation (after step 20)"


def test_eval_graph_dynamic_or_static_by_setting():
    automatic, on, off = (forecast_recompiles(COMPILED.replace(dynamic=d), 9900, 1100)[0].text
                          for d in (None, True, False))
    assert "dynamic batch size (automatic dynamic shapes" in automatic
    assert "dynamic batch size (dynamic=True)" in on
    assert "static, for batches of 1,024 (dynamic=False)" in off
    same = forecast_recompiles(COMPILED.replace(batch_size=1024), 9900, 1100)[0].text
    assert "static" in same and "equals the training batch" in same and "against the training batch" not in same


@pytest.mark.parametrize("dynamic, expected", [(None, [EVAL_MODE]), (True, [EVAL_MODE]),
                                               (False, [EVAL_MODE, PARTIAL_VAL_BATCH])])
def test_a_partial_last_validation_batch(dynamic, expected):
    forecasts = forecast_recompiles(COMPILED.replace(dynamic=dynamic), 9900, 1100)  # batches 1,024 + 76
    assert causes(forecasts) == expected
    if dynamic is False:
        partial = forecasts[1]
        assert partial.batch == 76 and not partial.expected and partial.phase == "eval"
        assert partial.when == "at the first validation's last batch (76 images, after step 309)"
        assert "dynamic=None (automatic) or dynamic=True" in partial.fix
        assert "torch._dynamo.mark_dynamic(x, 0)" in partial.fix and "1,024 or 2,048" in partial.fix


def test_a_partial_batch_with_automatic_shapes_when_training_and_validation_batches_are_equal():
    forecasts = forecast_recompiles(COMPILED.replace(batch_size=1024), 9900, 1100)
    assert causes(forecasts) == [EVAL_MODE, PARTIAL_VAL_BATCH]
    assert forecasts[1].batch == 76 and forecasts[1].fix.startswith("dynamic=True")
    assert causes(forecast_recompiles(COMPILED.replace(batch_size=1024, dynamic=True), 9900, 1100)) == [EVAL_MODE]


@pytest.mark.parametrize("val_size", [1024, 2048, 1000, 1])
def test_a_split_without_a_partial_batch_recompiles_only_for_eval_mode(val_size):
    for dynamic in (None, True, False):
        assert causes(forecast_recompiles(COMPILED.replace(dynamic=dynamic), 9000, val_size)) == [EVAL_MODE]


@pytest.mark.parametrize("dynamic", [None, True])
def test_a_last_validation_batch_of_one_is_specialised_even_with_dynamic_shapes(dynamic):
    forecasts = forecast_recompiles(COMPILED.replace(dynamic=dynamic), 9225, 1025)
    assert causes(forecasts) == [EVAL_MODE, BATCH_OF_ONE]
    one = forecasts[1]
    assert one.batch == 1 and "0/1" in one.text and "mark_unbacked(x, 0)" in one.fix
    assert "1,024 or 1,026 images" in one.fix


@pytest.mark.parametrize("dynamic", [None, True, False])
def test_a_first_validation_batch_of_one_is_specialised_whatever_the_dynamic_setting(dynamic):
    """A validation split of one image (or a shard of one): Dynamo specialises sizes 0 and 1, so even dynamic=True
    gives a static eval graph for it — the forecast must say so, not promise a dynamic batch size."""
    config = COMPILED.replace(dynamic=dynamic)
    (only,) = forecast_recompiles(config, 4000, 1)
    assert only.cause == EVAL_MODE and only.expected
    assert only.text.endswith("; a batch of one is specialised: the eval graph is static")
    assert "dynamic batch size" not in only.text and "static, for batches of" not in only.text
    assert "its batch of 1 against the training batch of 32" in only.text
    # One process's shard of one: 3 images over two processes leave rank 1 a single image.
    (sharded,) = forecast_recompiles(config.replace(batch_size=64), 4000, 3, world_size=2, rank=1)
    assert sharded.text.endswith("; a batch of one is specialised: the eval graph is static")
    assert sharded.when == "at the first validation (after step 62) on rank 1 (its 1 of the 3 validation images)"


def test_a_last_batch_of_one_on_a_static_graph_is_a_size_mismatch_that_dynamic_shapes_would_not_fix():
    forecasts = forecast_recompiles(COMPILED.replace(dynamic=False), 9225, 1025)
    assert causes(forecasts) == [EVAL_MODE, PARTIAL_VAL_BATCH]
    assert forecasts[1].batch == 1
    assert "mark_unbacked" in forecasts[1].fix and "dynamic=True" not in forecasts[1].fix


def test_a_training_batch_of_one_recompiles_nothing_in_training():
    for dynamic in (None, True, False):
        forecasts = forecast_recompiles(COMPILED.replace(batch_size=1, dynamic=dynamic), 4000, 1000)
        assert causes(forecasts) == [EVAL_MODE] and all(f.phase == "eval" for f in forecasts)


def test_several_processes_shard_both_splits():
    config = COMPILED.replace(batch_size=64)
    rank0 = forecast_recompiles(config, 54000, 4097, world_size=2)  # shards of 2,049 and 2,048
    rank1 = forecast_recompiles(config, 54000, 4097, world_size=2, rank=1)
    assert causes(rank0) == [EVAL_MODE, BATCH_OF_ONE] and causes(rank1) == [EVAL_MODE]
    assert rank0[0].when == "at the first validation (after step 843) on rank 0 (its 2,049 of the 4,097 validation " \
                            "images)"
    assert "against the training batch of 32" in rank0[0].text  # each process trains on 64 // 2
    assert "4,096 or 4,100 images" in rank0[1].fix  # no shard left with a batch of one
    # A split one process would validate in whole batches leaves each of two a partial one: 2,048 → 1,024 each is
    # fine, 3,072 → 1,536 each is not.
    assert causes(forecast_recompiles(config.replace(dynamic=False), 54000, 2048, world_size=2)) == [EVAL_MODE]
    sharded = forecast_recompiles(config.replace(dynamic=False), 54000, 3072, world_size=2)
    assert causes(sharded) == [EVAL_MODE, PARTIAL_VAL_BATCH] and sharded[1].batch == 512
    assert "multiple of 2,048 (e.g. 2,048 or 4,096" in sharded[1].fix


def test_a_batch_smaller_than_the_number_of_processes_trains_nothing_and_forecasts_nothing():
    """batch_size // world_size == 0: no process gets a batch (the engine refuses it); no division by zero."""
    assert steps_per_epoch(1, 4000, 2) == 0 and steps_per_epoch(3, 4000, 4) == 0
    assert forecast_recompiles(COMPILED.replace(batch_size=1), 4000, 1000, world_size=2) == ()


# -- matching the real reasons ----------------------------------------------------------------------------------
@pytest.mark.parametrize("reason, cause", [
    (GRAD_MODE, (EVAL_MODE, None)), (GRAD_MODE.replace("grad_mode ", "grad_mode  "), (EVAL_MODE, None)),
    (TRAINING_FLAG, (EVAL_MODE, None)), (ZERO_ONE, (BATCH_OF_ONE, 1)), (SIZE_76, ("size", 76)),
    (SIZE_1, ("size", 1)), ("forward: 0/3: ___check_type_id(L['y'], 94)", None)])
def test_recompile_cause_reads_dynamos_wording(reason, cause):
    assert recompile_cause(reason) == cause


def test_check_confirms_a_right_forecast():
    forecasts = forecast_recompiles(COMPILED.replace(dynamic=False), 9900, 1100)
    checks = check_forecast(forecasts, (GRAD_MODE, SIZE_76))
    assert [(c.forecast, c.observed, c.verdict) for c in checks] == [
        (forecasts[0], (GRAD_MODE,), CONFIRMED), (forecasts[1], (SIZE_76,), CONFIRMED)]
    one = forecast_recompiles(COMPILED, 9225, 1025)
    assert [c.verdict for c in check_forecast(one, (GRAD_MODE, ZERO_ONE))] == [CONFIRMED, CONFIRMED]
    static_one = forecast_recompiles(COMPILED.replace(dynamic=False), 9225, 1025)
    assert [c.verdict for c in check_forecast(static_one, (GRAD_MODE, SIZE_1))] == [CONFIRMED, CONFIRMED]


def test_check_names_what_did_not_happen_and_what_was_not_predicted():
    forecasts = forecast_recompiles(COMPILED.replace(dynamic=False), 9900, 1100)  # predicts "actual 76"
    checks = check_forecast(forecasts, (GRAD_MODE, SIZE_1))
    assert [(c.forecast, c.observed, c.verdict) for c in checks] == [
        (forecasts[0], (GRAD_MODE,), CONFIRMED), (forecasts[1], (), DID_NOT_HAPPEN), (None, (SIZE_1,), NOT_PREDICTED)]
    assert [c.verdict for c in check_forecast((), (GRAD_MODE,))] == [NOT_PREDICTED]
    assert [c.verdict for c in check_forecast(forecasts, ())] == [DID_NOT_HAPPEN, DID_NOT_HAPPEN]
    assert check_forecast((), ()) == ()


def test_check_gathers_each_frames_recompile_under_one_forecast():
    """A forward split by a graph break is two frames, and each compiles an eval graph of its own."""
    resumed = GRAD_MODE.replace("forward: 0/0", "torch_dynamo_resume_in_forward_at_12: 1/0")
    (check,) = check_forecast(forecast_recompiles(COMPILED, 4000, 1000), (GRAD_MODE, resumed))
    assert check.verdict == CONFIRMED and check.observed == (GRAD_MODE, resumed)


def test_a_forecast_is_plain_data():
    forecast = Forecast(cause=EVAL_MODE, phase="eval", when="w", text="t", fix="f", expected=True)
    assert forecast.count == 1 and forecast.batch is None
    with pytest.raises(AttributeError):
        forecast.count = 2  # frozen


# -- real runs: the forecast against what Dynamo did ------------------------------------------------------------
def _idx(array: np.ndarray) -> bytes:
    return bytes([0, 0, 0x08, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in array.shape) + array.tobytes()


def _idx_folder(root: Path, images: int) -> str:
    """An IDX folder of `images` random digits: the engine holds out 10% of them for validation."""
    rng = np.random.default_rng(0)
    root.mkdir()
    (root / "train-images-idx3-ubyte").write_bytes(_idx(rng.integers(0, 256, (images, 28, 28), dtype=np.uint8)))
    (root / "train-labels-idx1-ubyte").write_bytes(_idx(rng.integers(0, 10, images, dtype=np.uint8)))
    return str(root)


@pytest.fixture(scope="module")
def idx_folders(tmp_path_factory) -> dict[int, str]:
    """Validation size → an IDX folder whose hold-out has that many images."""
    root = tmp_path_factory.mktemp("forecast-idx")
    return {1025: _idx_folder(root / "v1025", 10_250), 1100: _idx_folder(root / "v1100", 11_000)}


@pytest.fixture
def fresh_dynamo():
    import torch._dynamo

    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("settings, val_size, expected", [
    (dict(), 1025, [EVAL_MODE, BATCH_OF_ONE]),  # automatic dynamic shapes, a last batch of one
    (dict(dynamic=True), 1000, [EVAL_MODE]),  # the bundled sample: one validation batch of 1,000
    (dict(dynamic=False), 1100, [EVAL_MODE, PARTIAL_VAL_BATCH]),  # a static eval graph, a last batch of 76
], ids=["automatic-batch-of-one", "dynamic-sample", "static-partial"])
@pytest.mark.slow
def test_the_forecast_matches_a_real_run(settings, val_size, expected, idx_folders, fresh_dynamo):
    from workbench.core.engine import Trainer
    from workbench.core.ground.events import CompileReport, RunFinished, RunStarted

    data = {} if val_size == 1000 else dict(dataset="idx", data_root=idx_folders[val_size])
    config = TrainConfig(epochs=1, max_steps=3, hidden_dim=16, backend="aot_eager", **data, **settings)
    events: list = []
    assert isinstance(Trainer().run(config, events.append), RunFinished)
    started = next(e for e in events if isinstance(e, RunStarted))
    assert started.val_size == val_size
    report = [e for e in events if isinstance(e, CompileReport)][-1]
    assert report.source == "run"

    forecasts = forecast_recompiles(config, started.train_size, started.val_size, started.world_size)
    assert causes(forecasts) == expected
    checks = check_forecast(forecasts, report.recompiles)
    assert [c.verdict for c in checks] == [CONFIRMED] * len(expected), report.recompiles
    assert sum(f.count for f in forecasts) == len(report.recompiles)
