"""Run configuration: one validated dataclass that the GUI, the CLI and child processes all share.

Every setting is declared once, on `TrainConfig`, with its metadata (`setting(...)`): help text, group, label,
choices, range. Validation reads its ranges and choices from there, the CLI generates its flags from there and the
setup form its widgets, so that no front end can allow what another refuses. `settings()` lists the declarations.

Validation lives here, in one place, so that every front end refuses the same bad values with the same words:
each error names the field, what was wrong, and the values that are allowed.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import typing
from pathlib import Path
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterator, Mapping

from .codec import Record
from .datasets import CATALOGUE, DataError, checked_root, dataset_info
from .errors import WorkbenchError

BACKENDS = ("eager", "inductor", "aot_eager", "cudagraphs")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
AMP_CHOICES = ("off", "bf16", "fp16")
# What a recompile does (TrainConfig.on_recompile), each a torch.compiler.set_stance stance (recompile_stance.py).
RECOMPILE_ACTIONS = ("compile", "eager", "fail")
MATMUL_PRECISIONS = ("highest", "high", "medium")  # torch.set_float32_matmul_precision's choices
OPTIMIZERS = ("adamw", "sgd")
LR_SCHEDULES = ("cosine", "constant")
DATASETS = tuple(CATALOGUE)
DEVICE_KINDS = ("auto", "cpu", "cuda", "cuda:N")
# Backends and modes that only make sense with CUDA graphs / a CUDA device.
CUDA_ONLY_BACKENDS = ("cudagraphs",)
CUDA_ONLY_MODES = ("reduce-overhead",)


BUILTIN_MODEL = "sandwich"


def split_model_spec(spec: str) -> tuple[str, str] | None:
    """(file, class name) of a user model spec `path/to/file.py:ClassName`; None for the built-in network or a
    malformed spec. Every reader of a spec parses it here."""
    path_text, sep, name = spec.rpartition(":")
    if spec == BUILTIN_MODEL or not sep or not path_text or not name:
        return None
    return path_text, name


def uses_cuda_graphs(config: Mapping[str, Any]) -> bool:
    """Whether a run with this config (a TrainConfig's dict) replays CUDA graphs: the cudagraphs backend, or
    Inductor in a mode that captures them ("max-autotune" does too, on a GPU). Such a run's graph pool counts as
    CUDA *reserved*, not allocated (pytorch/pytorch#121932), so its memory curves must say so."""
    backend = config.get("backend")
    return backend in CUDA_ONLY_BACKENDS or (backend == "inductor"
                                             and config.get("mode") in ("reduce-overhead", "max-autotune"))

# The groups settings are shown in, in this order (the CLI's help, the setup form's boxes).
DATA_AND_MODEL = "Data and model"
TRAINING = "Training"
COMPILE = "Compile"
PRECISION = "Precision"
ALERTS = "Statistics and alerts"
GROUPS = (DATA_AND_MODEL, TRAINING, COMPILE, PRECISION, ALERTS)

_KEY = "workbench.setting"  # where a field's declaration lives in its dataclasses metadata


class ConfigError(WorkbenchError):
    """A config value that cannot run. `field` names the offending setting so a UI can point at it. Its text calls
    the setting by that name, as a config file does; `naming` and `called` say it with another (the setup form's
    label: `label_of`; the CLI's flag)."""

    kind = "config"

    def __init__(self, field: str, message: str, allowed: str | None = None):
        self.field = field
        self.message = message
        self.allowed = allowed
        super().__init__(self.naming(field))

    def naming(self, name: str) -> str:
        """The error's text with the setting called `name`: 'Learning rate: 0 must be greater than 0 (allowed: …)'."""
        text = f"{name}: {self.message}"
        return f"{text} (allowed: {self.allowed})" if self.allowed else text

    def called(self, name: str) -> ConfigError:
        """The same error, its text calling the setting `name` (the CLI's flag: '--batch-size: 0 is out of …')."""
        error = ConfigError(self.field, self.message, self.allowed)
        error.args = (self.naming(name),)
        return error


def _choices(values) -> str:
    return ", ".join(values)


# Validation's (and evaluation's) batch size: the engine's loader and the torch-free recompile forecast use this one.
EVAL_BATCH = 1024

def setting(help: str, group: str, *, label: str | None = None, choices: tuple = (),
            choice_labels: Mapping[Any, str] | None = None, low: float | None = None, high: float | None = None,
            low_open: bool = False, form: bool = True, flag: str | None = None, step: float | None = None,
            decimals: int | None = None, changes_graphs: bool = False) -> Mapping[str, dict]:
    """A TrainConfig field's metadata: `field(default=…, metadata=setting(...))`.

    help: what the setting does, in a sentence fragment (the CLI's help, the form's tooltip).
    group: one of GROUPS. label: the form's words for it (default: the name). choices: the only values allowed,
    with `choice_labels` as a picker shows them. low/high: the range of a number, inclusive (`low_open`: low itself
    is not allowed). form: whether the setup form shows it (else it keeps the value it was given). flag: the CLI
    flag (default --the-name). step/decimals: how a spin box moves and shows it. changes_graphs: two runs that
    differ in it compile different graphs (or compile them differently), so a compile cache made under one value
    must not warm-start a run with another (history.warm_starts' key holds every such setting).
    """
    if group not in GROUPS:
        raise ValueError(f"unknown group {group!r}")
    return MappingProxyType({_KEY: dict(help=help, group=group, label=label, choices=tuple(choices),
                                        choice_labels=dict(choice_labels or {}), low=low, high=high,
                                        low_open=low_open, form=form, flag=flag, step=step, decimals=decimals,
                                        changes_graphs=changes_graphs)})


@dataclass(frozen=True)
class Setting:
    """One declared setting of TrainConfig: the single source of its type, range, choices and words."""

    name: str
    kind: type  # int, float, str or bool
    optional: bool  # None is a value of its own (no data folder, automatic dynamic shapes, no step limit)
    default: Any
    help: str
    group: str
    label: str
    choices: tuple = ()
    choice_labels: Mapping[Any, str] = field(default_factory=dict)
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    form: bool = True
    flag: str = ""
    step: float | None = None
    decimals: int | None = None
    changes_graphs: bool = False

    def choice_label(self, value: Any) -> str:
        return self.choice_labels.get(value, str(value))

    @property
    def allowed(self) -> str:
        """The values allowed, as an error message says them."""
        if self.choices:
            return _choices(self.choices)
        if self.kind is bool:
            return "true, false" + (", or null for automatic" if self.optional else "")
        if self.kind is int:
            return f"{self.low} to {self.high}"
        if self.kind is float:
            return f"> {self.low:g} and ≤ {self.high:g}" if self.low_open else f"{self.low:g} to {self.high:g}"
        return ""

    def check(self, value: Any) -> None:
        """Refuse a value this setting never takes, with the field's name and what is allowed."""
        if value is None and self.optional:
            return
        if self.kind is bool:
            if not isinstance(value, bool):
                raise ConfigError(self.name, f"{value!r} is not a switch", self.allowed)
        elif self.kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(self.name, f"{value!r} is not a whole number", self.allowed)
            if not self.low <= value <= self.high:
                raise ConfigError(self.name, f"{value} is out of range", self.allowed)
        elif self.kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise ConfigError(self.name, f"{value!r} is not a number", self.allowed)
            if self.low_open and value <= self.low:
                raise ConfigError(self.name, f"{value} must be greater than {self.low:g}", self.allowed)
            if not self.low_open and value < self.low:
                raise ConfigError(self.name, f"{value} must not be below {self.low:g}", self.allowed)
            if value > self.high:
                raise ConfigError(self.name, f"{value} is too large", f"up to {self.high:g}")
        elif not isinstance(value, self.kind):
            raise ConfigError(self.name, f"{value!r} is not a {self.kind.__name__}")
        if self.choices and value not in self.choices:
            raise ConfigError(self.name, f"unknown {self.name.replace('_', ' ')} {value!r}", self.allowed)


def settings() -> Iterator[Setting]:
    """Every setting of TrainConfig, in declaration order (which is also the order of GROUPS)."""
    return iter(_settings())


def setting_named(name: str) -> Setting:
    for declared in _settings():
        if declared.name == name:
            return declared
    raise KeyError(name)


def label_of(name: str) -> str:
    """The setup form's words for a setting ('Learning rate' for lr): how the window names it, in its errors too; a
    name that is no setting ('config') as it is."""
    try:
        return setting_named(name).label
    except KeyError:
        return name


@functools.cache
def _settings() -> tuple[Setting, ...]:
    hints = typing.get_type_hints(TrainConfig)
    declared = []
    for f in dataclasses.fields(TrainConfig):
        meta = f.metadata.get(_KEY)
        if meta is None:
            raise TypeError(f"TrainConfig.{f.name} has no setting(...) metadata")
        kinds = [k for k in typing.get_args(hints[f.name]) or (hints[f.name],) if k is not type(None)]
        if len(kinds) != 1 or kinds[0] not in (int, float, str, bool):
            raise TypeError(f"TrainConfig.{f.name}: a setting is an int, float, str or bool (or None)")
        kind = kinds[0]
        if kind in (int, float) and (meta["low"] is None or meta["high"] is None):
            raise TypeError(f"TrainConfig.{f.name}: a number needs a range (low=…, high=…)")
        declared.append(Setting(
            name=f.name, kind=kind, optional=type(None) in typing.get_args(hints[f.name]), default=f.default,
            label=meta["label"] or f.name.replace("_", " "), flag=meta["flag"] or "--" + f.name.replace("_", "-"),
            **{k: v for k, v in meta.items() if k not in ("label", "flag")}))
    return tuple(declared)


@dataclass(frozen=True)
class TrainConfig(Record):
    """Everything one run needs. Plain values only, so it round-trips through JSON and pickles across processes.

    Declared in GROUPS order; the setup form shows the settings with form=True in this order."""

    # -- data and model --
    dataset: str = field(default="mnist-sample", metadata=setting(
        "the images to train on", DATA_AND_MODEL, label="Dataset", choices=DATASETS,
        choice_labels={name: info.title for name, info in CATALOGUE.items()}, changes_graphs=True))
    data_root: str | None = field(default=None, metadata=setting(
        "folder with an existing dataset layout (idx and imagefolder need one)", DATA_AND_MODEL,
        label="Data folder", changes_graphs=True))  # its classes are the output layer's width
    model: str = field(default=BUILTIN_MODEL, metadata=setting(
        "'sandwich' (built in) or path/to/file.py:ClassName for your own network", DATA_AND_MODEL, label="Model",
        changes_graphs=True))
    device: str = field(default="auto", metadata=setting(
        f"where to train: {_choices(DEVICE_KINDS)}", DATA_AND_MODEL, label="Device"))
    hidden_dim: int = field(default=128, metadata=setting(
        "width of the built-in network's hidden layer", DATA_AND_MODEL, label="Hidden size", low=1, high=1 << 16,
        step=16, changes_graphs=True))
    dropout: float = field(default=0.2, metadata=setting(
        "dropout probability of the built-in network", DATA_AND_MODEL, label="Dropout", low=0.0, high=0.99,
        step=0.05, decimals=2, form=False, changes_graphs=True))
    # -- training --
    epochs: int = field(default=5, metadata=setting(
        "passes over the training set", TRAINING, label="Epochs", low=1, high=100_000))
    batch_size: int = field(default=32, metadata=setting(
        "examples per optimizer step (the global batch, split between processes)", TRAINING, label="Batch size",
        low=1, high=1 << 20, step=16, changes_graphs=True))
    lr: float = field(default=4e-3, metadata=setting(
        "learning rate", TRAINING, label="Learning rate", low=0.0, low_open=True, high=100.0))
    optimizer: str = field(default="adamw", metadata=setting(
        "the optimizer", TRAINING, label="Optimizer", choices=OPTIMIZERS, choice_labels={"adamw": "AdamW",
                                                                                         "sgd": "SGD"}))
    lr_schedule: str = field(default="cosine", metadata=setting(
        "how the learning rate changes over the run", TRAINING, label="LR schedule", choices=LR_SCHEDULES,
        form=False))
    weight_decay: float = field(default=0.01, metadata=setting(
        "weight decay", TRAINING, label="Weight decay", low=0.0, high=10.0, step=0.01, decimals=4, form=False))
    seed: int = field(default=0, metadata=setting(
        "random seed: the same seed and settings give the same run", TRAINING, label="Seed", low=0,
        high=2**32 - 1))
    max_steps: int | None = field(default=None, metadata=setting(
        "stop after this many optimizer steps (smoke tests, benchmarks)", TRAINING, label="Max steps", low=1,
        high=1 << 40, form=False))
    resume: str | None = field(default=None, metadata=setting(
        "continue the run whose checkpoint this is (its weights, optimizer, schedule and random streams): the "
        "steps go on from where it stopped; only the epochs, max steps, compile and instrument settings may change",
        TRAINING, label="Continue from", form=False))
    profile_steps: int = field(default=0, metadata=setting(
        "profile this many steady steps with torch.profiler (op table, timeline, memory, a Chrome trace); 0 = off",
        TRAINING, label="Profile steps", low=0, high=1000, step=10))
    # -- compile --
    backend: str = field(default="eager", metadata=setting(
        "torch.compile backend; eager = no compile", COMPILE, label="Backend", choices=BACKENDS,
        changes_graphs=True))
    mode: str = field(default="default", metadata=setting(
        "inductor mode (the inductor backend only)", COMPILE, label="Mode", choices=MODES,
        changes_graphs=True))
    dynamic: bool | None = field(default=None, metadata=setting(
        "dynamic shapes: compile for varying input shapes (automatic: when a shape changes)", COMPILE,
        label="Dynamic shapes", choice_labels={None: "automatic", True: "on", False: "off"}, changes_graphs=True))
    fullgraph: bool = field(default=False, metadata=setting(
        "fail on any graph break instead of running that part eagerly", COMPILE,
        label="fullgraph (fail on any graph break)", changes_graphs=True))
    allow_eager_fallback: bool = field(default=False, metadata=setting(
        "if compiling fails, continue in eager mode with a warning instead of failing", COMPILE,
        label="fall back to eager if compiling fails"))
    compile_trace: bool = field(default=False, metadata=setting(
        "record PyTorch's structured compile trace in the run's folder and render it with tlparse", COMPILE,
        label="record compile trace (tlparse)"))
    on_recompile: str = field(default="compile", metadata=setting(
        "what a recompile does once the first step and the first validation have compiled "
        "(torch.compiler.set_stance): compile again, run that call eagerly (eager_on_recompile), or fail the run "
        "naming the guard that failed (fail_on_recompile)", COMPILE, label="On a recompile",
        choices=RECOMPILE_ACTIONS, choice_labels={"compile": "compile again", "eager": "run that call eagerly",
                                                  "fail": "fail the run"}))
    eager_first_call: bool = field(default=False, metadata=setting(
        "run the model's first call eagerly and compile from its second (torch.compiler.set_stance"
        "('eager_then_compile')): which dimensions vary is seen in two calls instead of compiling a static graph "
        "first", COMPILE, label="eager first call, then compile", changes_graphs=True))  # dynamic from the start
    recompile_limit: int = field(default=16, metadata=setting(
        "compiles allowed per function (torch._dynamo.config.recompile_limit); past it the function runs eagerly, "
        "and the compile timeline warns one recompile before", COMPILE, label="Recompile limit", low=1, high=1024))
    warm_from: int | None = field(default=None, metadata=setting(
        "load the compile cache of this recorded run (its id) before the first compile; not set: of the newest "
        "recorded run with the same compile settings, model code and torch (automatic); 0: none (a cold start)",
        COMPILE, label="Warm start from run", low=0, high=2**62, form=False,
        choice_labels={None: "automatic", 0: "none (cold start)"}))
    # -- precision --
    amp: str = field(default="off", metadata=setting(
        "mixed precision", PRECISION, label="AMP", choices=AMP_CHOICES, choice_labels={"off": "off (fp32)"},
        changes_graphs=True))
    loss_scale: float = field(default=65536.0, metadata=setting(
        "fp16: the GradScaler's initial loss scale (halved after each overflowing step, doubled after 2,000 good "
        "ones)", PRECISION, label="Initial loss scale (fp16)", low=1.0, high=2.0**40, form=False))
    matmul_precision: str = field(default="highest", metadata=setting(
        "precision of float32 matrix multiplies (torch.set_float32_matmul_precision): 'high' lets them use TF32 "
        "tensor cores on Ampere and newer GPUs, 'medium' bf16 ones; faster, with fewer mantissa bits",
        PRECISION, label="fp32 matmul precision", choices=MATMUL_PRECISIONS,
        choice_labels={"highest": "highest (full fp32)", "high": "high (TF32)", "medium": "medium (bf16)"},
        changes_graphs=True))
    # -- statistics and alerts --
    stats_every: int = field(default=100, metadata=setting(
        "sample per-layer statistics (weight and gradient norms, update ratio, dead units, histograms) every this "
        "many steps, and at steps 1, 2, 4, 8, 16, 32 before; 0 = off (the gradient and dead-unit alerts too)",
        ALERTS, label="Layer statistics every (steps)", low=0, high=1_000_000))
    alert_grad_factor: float = field(default=10.0, metadata=setting(
        "alert when the gradient norm is this many times its median so far (exploding), or a layer's is below "
        "1/factor³ of the largest layer's (vanishing)", ALERTS, label="Gradient alert factor", low=1.0,
        high=1e6, low_open=True))
    alert_plateau_steps: int = field(default=0, metadata=setting(
        "alert when the smoothed loss has not improved by 1% for this many steps; 0 = off", ALERTS,
        label="Plateau alert after (steps)", low=0, high=1_000_000))
    alert_throughput_drop: float = field(default=0.5, metadata=setting(
        "alert when throughput falls by more than this share below the run's median (another process, thermal "
        "throttling)", ALERTS, label="Throughput drop alert (share)", low=0.0, high=1.0, low_open=True, step=0.05,
        decimals=2))
    alert_memory_share: float = field(default=0.9, metadata=setting(
        "alert when memory use reaches this share of the device's (the machine's on the CPU)", ALERTS,
        label="Memory alert (share of device)", low=0.0, high=1.0, low_open=True, step=0.05, decimals=2))
    alert_recompile_storm: int = field(default=5, metadata=setting(
        "alert when this many recompiles happen within 100 steps", ALERTS, label="Recompile storm (per 100 steps)",
        low=1, high=10_000))

    def __post_init__(self) -> None:
        self.check_values()

    # -- validation ---------------------------------------------------------------------------------------------
    def check_values(self) -> None:
        """Reject values that can never run, wherever they came from (GUI, CLI flags, a JSON file)."""
        for declared in _settings():
            declared.check(getattr(self, declared.name))
        if self.mode != "default" and self.backend != "inductor":
            raise ConfigError("mode", f"'{self.mode}' only applies to the inductor backend "
                                      f"(backend is '{self.backend}')", "default")
        if not (self.device in ("auto", "cpu", "cuda") or _is_cuda_index(self.device)):
            raise ConfigError("device", f"unknown device '{self.device}'", _choices(DEVICE_KINDS))

    def check_runnable(self, cuda_available: bool) -> None:
        """Reject combinations this machine cannot run (CUDA graphs without CUDA). fp16 runs on the CPU too
        (autocast and GradScaler("cpu")): slower than fp32 without fp16 hardware, which AmpReport's recommendation
        says, but it shows loss scaling at work."""
        on_cuda = cuda_available and self.device != "cpu"
        if self.device.startswith("cuda") and not cuda_available:
            raise ConfigError("device", f"'{self.device}' was asked for but this machine has no usable CUDA device",
                              "auto, cpu")
        if not on_cuda:
            if self.backend in CUDA_ONLY_BACKENDS:
                raise ConfigError("backend", f"'{self.backend}' needs a CUDA device",
                                  _choices(b for b in BACKENDS if b not in CUDA_ONLY_BACKENDS))
            if self.mode in CUDA_ONLY_MODES:
                raise ConfigError("mode", f"'{self.mode}' uses CUDA graphs and needs a CUDA device",
                                  _choices(m for m in MODES if m not in CUDA_ONLY_MODES))

    # -- serialisation: the codec's to_dict; read by its own rules, which name the setting -----------------------
    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        if not isinstance(data, dict):
            raise ConfigError("config", f"expected a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(unknown[0], "is not a setting Workbench knows", _choices(sorted(known)))
        return cls(**data)

    @classmethod
    def read(cls, data: Any, where: str) -> "TrainConfig":
        """Inside another record (a RunStarted's config): its own rules, the error said where it is."""
        try:
            return cls.from_dict(data)
        except ConfigError as exc:
            raise ValueError(f"{where}: {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> "TrainConfig":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError("config", f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        except RecursionError:  # json.loads recurses once per level of [ or {
            raise ConfigError("config", "not a config: nested too deeply") from None
        return cls.from_dict(data)

    def replace(self, **changes: Any) -> "TrainConfig":
        return dataclasses.replace(self, **changes)

    @property
    def compiled(self) -> bool:
        return self.backend != "eager"


# What a continued run (TrainConfig.resume) may set differently from the run it continues: how long it goes on, how
# it is compiled and measured. Anything else would make it another run (other data, model or optimisation).
RESUME_MAY_CHANGE = ("resume", "epochs", "max_steps", "profile_steps", "compile_trace", "backend", "mode", "dynamic",
                     "fullgraph", "allow_eager_fallback", "matmul_precision", "device", "on_recompile",
                     "eager_first_call", "recompile_limit", "warm_from", "stats_every", "alert_grad_factor",
                     "alert_plateau_steps", "alert_throughput_drop", "alert_memory_share", "alert_recompile_storm")


def resume_conflicts(saved: Mapping[str, Any], config: "TrainConfig") -> list[str]:
    """The settings of `config` that differ from the continued run's `saved` config but may not ('lr: 0.004 → 0.01')."""
    ours = config.to_dict()
    return [f"{name}: {saved.get(name)!r} → {ours[name]!r}" for name in ours
            if name not in RESUME_MAY_CHANGE and saved.get(name, ours[name]) != ours[name]]


def setup_label(config: dict) -> str:
    """'inductor · max-autotune · bf16', 'eager · off': how a run's compile and precision settings are shown."""
    mode = f" · {config['mode']}" if config.get("backend") == "inductor" else ""
    return f"{config.get('backend')}{mode} · {config.get('amp')}"


def _is_cuda_index(device: str) -> bool:
    prefix, _, index = device.partition(":")
    return prefix == "cuda" and index.isdigit()


def local_data_problem(config: TrainConfig) -> ConfigError | None:
    """The run's data folder missing on this computer (or a folder dataset without one): said before a run starts,
    not after PyTorch has. Only for a run trained here: a host has its own folders."""
    try:
        checked_root(dataset_info(config.dataset), config.data_root)
    except DataError as exc:
        return ConfigError("data_root", str(exc).removeprefix("data root "))
    return None


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The settings a JSON file sets (only those: the caller's own defaults stay for the rest), after checking that
    the file is a valid config on its own, so errors name the file's fields. `train --config` and the window's
    File → Open settings… read a file through here, with the same checks."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("config", f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError("config", f"cannot read {path}: not UTF-8 text (a JSON file is)") from None
    TrainConfig.from_json(text)
    return json.loads(text)
