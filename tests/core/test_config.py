"""TrainConfig: one validated dataclass; every bad value names its field and the values allowed."""

from __future__ import annotations

import json
import pickle

import pytest

import dataclasses

from workbench.core.ground.config import (AMP_CHOICES, BACKENDS, GROUPS, ConfigError, Setting, TrainConfig, setting,
                                          setting_named, settings)
from workbench.core.ground.datasets import CATALOGUE


def test_defaults_are_valid_and_runnable_on_cpu():
    config = TrainConfig()
    config.check_values()
    config.check_runnable(cuda_available=False)
    assert config.dataset == "mnist-sample"
    assert config.backend == "eager" and not config.compiled
    assert config.amp == "off"


@pytest.mark.parametrize("changes, field, allowed_words", [
    ({"batch_size": 0}, "batch_size", ["1 to"]),
    ({"batch_size": -3}, "batch_size", ["1 to"]),
    ({"lr": 0.0}, "lr", ["> 0"]),
    ({"lr": -1.0}, "lr", ["> 0"]),
    ({"lr": float("nan")}, "lr", []),
    ({"epochs": 0}, "epochs", ["1 to"]),
    ({"epochs": "5"}, "epochs", ["1 to"]),
    ({"epochs": True}, "epochs", ["1 to"]),
    ({"hidden_dim": 0}, "hidden_dim", ["1 to"]),
    ({"dropout": 1.5}, "dropout", []),
    ({"max_steps": 0}, "max_steps", ["1 to"]),
    ({"backend": "nvprims_nvfuser"}, "backend", list(BACKENDS)),
    ({"amp": "fp8"}, "amp", list(AMP_CHOICES)),
    ({"optimizer": "lbfgs"}, "optimizer", ["adamw", "sgd"]),
    ({"mode": "turbo", "backend": "inductor"}, "mode", ["default", "reduce-overhead", "max-autotune"]),
    ({"mode": "max-autotune", "backend": "aot_eager"}, "mode", ["default"]),
    ({"mode": "reduce-overhead", "backend": "eager"}, "mode", ["default"]),
    ({"device": "tpu"}, "device", ["auto", "cpu", "cuda", "cuda:N"]),
    ({"device": "cuda:x"}, "device", ["cuda:N"]),
    ({"dataset": "  "}, "dataset", ["mnist-sample"]),
    ({"dataset": "imagenet"}, "dataset", ["mnist-sample", "imagefolder"]),
    ({"lr_schedule": "step"}, "lr_schedule", ["cosine", "constant"]),
    ({"fullgraph": "yes"}, "fullgraph", []),
    ({"dynamic": "maybe"}, "dynamic", ["true", "false"]),
])
def test_invalid_value_names_field_and_allowed_values(changes, field, allowed_words):
    with pytest.raises(ConfigError) as info:
        TrainConfig(**changes)
    err = info.value
    assert err.field == field
    assert str(err).startswith(f"{field}:")
    for word in allowed_words:
        assert word in str(err), f"{word!r} missing from {err}"
    if allowed_words:
        assert err.allowed and "allowed:" in str(err)


def test_replace_validates_too():
    with pytest.raises(ConfigError) as info:
        TrainConfig().replace(batch_size=0)
    assert info.value.field == "batch_size"


@pytest.mark.parametrize("changes, field", [
    ({"backend": "cudagraphs"}, "backend"),
    ({"backend": "inductor", "mode": "reduce-overhead"}, "mode"),
    ({"device": "cuda"}, "device"),
    ({"device": "cuda:0"}, "device"),
    ({"device": "cpu", "backend": "cudagraphs"}, "backend"),
])
def test_check_runnable_without_cuda_rejects_cuda_only_settings(changes, field):
    config = TrainConfig(**changes)  # valid values ...
    with pytest.raises(ConfigError) as info:
        config.check_runnable(cuda_available=False)  # ... that this machine cannot run
    assert info.value.field == field
    assert info.value.allowed  # says what would work instead


@pytest.mark.parametrize("changes", [
    {"amp": "fp16"}, {"backend": "cudagraphs"}, {"backend": "inductor", "mode": "reduce-overhead"},
    {"device": "cuda:0"},
])
def test_check_runnable_with_cuda_accepts_cuda_settings(changes):
    TrainConfig(**changes).check_runnable(cuda_available=True)


@pytest.mark.parametrize("changes", [{"amp": "bf16"}, {"amp": "fp16"}, {"backend": "aot_eager"},
                                     {"backend": "inductor"}, {"device": "cpu"}, {"device": "auto"}])
def test_check_runnable_without_cuda_accepts_cpu_settings(changes):
    TrainConfig(**changes).check_runnable(cuda_available=False)


def test_fp16_runs_on_the_cpu_of_a_cuda_machine_too():  # GradScaler("cpu"): loss scaling without a GPU
    TrainConfig(device="cpu", amp="fp16").check_runnable(cuda_available=True)


def test_json_round_trip_is_equal():
    config = TrainConfig(dataset="idx", data_root="/data/mnist", epochs=3, batch_size=64, lr=1e-3, seed=7,
                         hidden_dim=32, dropout=0.0, backend="inductor", mode="max-autotune", fullgraph=True,
                         dynamic=False, amp="bf16", allow_eager_fallback=True, max_steps=11, optimizer="sgd",
                         lr_schedule="constant")
    text = config.to_json()
    assert json.loads(text)["hidden_dim"] == 32
    again = TrainConfig.from_json(text)
    assert again == config
    assert TrainConfig.from_dict(config.to_dict()) == config
    assert pickle.loads(pickle.dumps(config)) == config


def test_from_dict_partial_uses_defaults():
    assert TrainConfig.from_dict({"epochs": 2}) == TrainConfig(epochs=2)


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_dict({"epochs": 2, "learning_rate": 0.1})
    assert info.value.field == "learning_rate"
    assert "lr" in info.value.allowed  # lists the settings that do exist


@pytest.mark.parametrize("text", ["{not json", "", '{"epochs": 2,}'])
def test_from_json_invalid_json_raises_config_error(text):
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_json(text)
    assert info.value.field == "config"
    assert "JSON" in str(info.value)


def test_from_json_non_object_raises_config_error():
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_json("[1, 2, 3]")
    assert "object" in str(info.value)


def test_from_json_bad_value_raises_config_error():
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_json('{"batch_size": 0}')
    assert info.value.field == "batch_size"


@pytest.mark.parametrize("field, value", [("device", 5), ("device", None), ("data_root", 5), ("data_root", ["d"])])
def test_wrong_types_from_a_config_file_are_config_errors(field, value):
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_dict({field: value})
    assert info.value.field == field


def test_data_root_may_be_absent_or_a_path():
    assert TrainConfig.from_dict({"data_root": None}).data_root is None
    assert TrainConfig.from_dict({"data_root": "/data"}).data_root == "/data"


# -- the declarations: one source for validation, the CLI and the setup form ----------------------------------------
NUMBERS = [s for s in settings() if s.kind in (int, float)]
CHOICES = [s for s in settings() if s.choices]


def test_every_field_is_declared_once_in_order_with_words_and_a_group():
    declared = list(settings())
    assert [s.name for s in declared] == [f.name for f in dataclasses.fields(TrainConfig)]
    for s in declared:
        assert isinstance(s, Setting)
        assert s.help and s.label and s.group in GROUPS
        assert s.flag == "--" + s.name.replace("_", "-")
        assert s.default == getattr(TrainConfig(), s.name)
    groups = [s.group for s in declared]
    assert sorted(groups, key=GROUPS.index) == groups  # declared group by group, in GROUPS order


def test_declared_types():
    kinds = {s.name: (s.kind, s.optional) for s in settings()}
    assert kinds["batch_size"] == (int, False) and kinds["lr"] == (float, False)
    assert kinds["data_root"] == (str, True) and kinds["max_steps"] == (int, True)
    assert kinds["dynamic"] == (bool, True) and kinds["fullgraph"] == (bool, False)


def test_dataset_choices_are_the_catalogue():
    dataset = setting_named("dataset")
    assert dataset.choices == tuple(CATALOGUE)
    assert all(dataset.choice_label(name) == info.title for name, info in CATALOGUE.items())


def test_setting_refuses_an_unknown_group():
    with pytest.raises(ValueError):
        setting("x", "Miscellaneous")


@pytest.mark.parametrize("declared", NUMBERS, ids=lambda s: s.name)
def test_every_range_is_enforced_exactly_as_declared(declared):
    assert declared.low is not None and declared.high is not None
    assert getattr(TrainConfig(**{declared.name: declared.high}), declared.name) == declared.high
    if not declared.low_open:
        assert getattr(TrainConfig(**{declared.name: declared.low}), declared.name) == declared.low
    step = 1 if declared.kind is int else 0.001
    for bad in (declared.high + step, declared.low - step) + ((declared.low,) if declared.low_open else ()):
        with pytest.raises(ConfigError) as info:
            TrainConfig(**{declared.name: bad})
        assert info.value.field == declared.name and info.value.allowed


@pytest.mark.parametrize("declared", [s for s in NUMBERS if s.kind is int], ids=lambda s: s.name)
def test_a_whole_number_out_of_range_says_the_declared_range(declared):
    with pytest.raises(ConfigError) as info:
        TrainConfig(**{declared.name: declared.high + 1})
    assert str(info.value) == (f"{declared.name}: {declared.high + 1} is out of range "
                               f"(allowed: {declared.low} to {declared.high})")


@pytest.mark.parametrize("declared", CHOICES, ids=lambda s: s.name)
def test_every_declared_choice_is_valid_and_nothing_else(declared):
    for value in declared.choices:
        extra = {"backend": "inductor"} if declared.name == "mode" else {}  # modes are the inductor's
        assert getattr(TrainConfig(**{declared.name: value}, **extra), declared.name) == value
    with pytest.raises(ConfigError) as info:
        TrainConfig(**{declared.name: "no-such-value"})
    assert info.value.field == declared.name
    assert info.value.allowed == ", ".join(declared.choices)
    assert f"unknown {declared.name.replace('_', ' ')} 'no-such-value'" in str(info.value)


@pytest.mark.parametrize("declared", [s for s in settings() if s.optional], ids=lambda s: s.name)
def test_optional_settings_take_none(declared):
    assert getattr(TrainConfig(**{declared.name: None}), declared.name) is None


@pytest.mark.parametrize("declared", [s for s in settings() if not s.optional], ids=lambda s: s.name)
def test_other_settings_refuse_none(declared):
    with pytest.raises(ConfigError) as info:
        TrainConfig(**{declared.name: None})
    assert info.value.field == declared.name


def test_the_form_leaves_out_only_the_advanced_settings():
    assert {s.name for s in settings() if not s.form} == {"dropout", "lr_schedule", "weight_decay", "max_steps",
                                                          "loss_scale", "resume", "warm_from"}
