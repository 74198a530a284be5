"""A diff that explains: what differs between two or more runs, and nothing else, in three sections.

- settings: the config values that differ (and, when a model is a file, the file's content hash today);
- environment: what the run was recorded on (PyTorch, Python, CUDA, device, Workbench, host);
- behaviour: what the runs did (graph breaks, recompiles, compile time, payback, AMP skipped steps, alerts, peak
  memory, samples/s, best accuracy, steps, duration), each with a note that names the settings that differ and bear
  on it, and says why where a setting is known to explain it (fp16 → skipped steps, eager → no compile).

A row's values are the texts the window and `runs show` show, one per run; rows whose texts are all equal are left
out, so two runs that measured 1,234.4 and 1,234.1 samples/s do not differ. A run that lacks a value shows "—".
The diff is plain data (`RunDiff.to_dict()`), so it can travel from the kernel to the window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..ground.config import Setting, label_of, settings, split_model_spec
from ..ground.consent import file_digest, model_file
from ..ground.errors import WorkbenchError
from ..ground.alerts import Alert
from ..ground.events import AmpSkipped, CompileReport
from ..ground.figures import BEST_VAL_ACCURACY, COMPILE, PEAK_MEMORY, SAMPLES_PER_S
from ..ground.progress import format_duration
from ..ground.codec import Record
from ..ground.results import RunResults
from .naming import run_name
from .layers import WATCHED_BY
from .report.cells import compile_time, mib, num, pct
from .report.facts import last_compile_report
from .runs import RunRecord

SETTINGS, ENVIRONMENT, BEHAVIOUR = "settings", "environment", "behaviour"
SECTIONS = (SETTINGS, ENVIRONMENT, BEHAVIOUR)
MISSING = "—"
MODEL_FILE = "Model file (sha256 today)"
MODEL_FILE_NOTE = "the file's content now, which may have changed since the run trained"
MAX_NAMED = 4  # settings a behaviour's note names at most
# The environment's entries (RunStarted's device and versions) in the order and words the diff shows them; others
# (a newer version's) follow by name.
ENVIRONMENT_LABELS = {"torch": "PyTorch", "python": "Python", "cuda": "CUDA", "device": "Device",
                      "device_name": "Device name", "gpu": "GPU", "workbench": "Workbench"}
HOST = "Host"
# The rows of the environment that bear on speed, memory and compile time: named beside those behaviours.
MACHINE = (*(ENVIRONMENT_LABELS[k] for k in ("device", "device_name", "gpu", "torch", "cuda")), HOST)


@dataclass(frozen=True)
class DiffRow(Record):
    section: str  # one of SECTIONS
    field: str  # the setting's label, the environment entry's or the behaviour's name
    values: tuple[str, ...]  # one per run, in the diff's order
    note: str = ""  # behaviour: why it differs, or the settings that differ with it


@dataclass(frozen=True)
class RunDiff(Record):
    run_ids: tuple[int, ...]
    rows: tuple[DiffRow, ...]

    def section(self, name: str) -> tuple[DiffRow, ...]:
        return tuple(row for row in self.rows if row.section == name)


def diff_runs(records: Sequence[RunRecord]) -> RunDiff:
    """What differs between `records` (loaded with their events), in SECTIONS order."""
    if len(records) < 2:
        raise WorkbenchError("a diff compares two or more runs", "select at least two runs")
    changed = _changed_settings(records)
    environment = list(_environment_rows(records))
    rows = [*_setting_rows(records), *environment, *_behaviour_rows(records, changed, environment)]
    return RunDiff(tuple(r.id for r in records), tuple(rows))


def _differs(values: tuple[str, ...]) -> bool:
    return len(set(values)) > 1


# -- settings -----------------------------------------------------------------------------------------------------
def _plain(value) -> str:
    """A setting's value as it is written in a config or a query: 'inductor', '0.004', 'on', 'none'."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return format(value, "g") if isinstance(value, float) else str(value)


def _shown(declared: Setting | None, value) -> str:
    """As the setup form shows it: a choice's label ('MNIST sample', 'automatic'), else its plain value."""
    if declared is not None and value in declared.choice_labels:
        return declared.choice_label(value)
    return _plain(value)


def _keys(records: Sequence[RunRecord]) -> list[str]:
    """Every setting, declared ones in the form's order, then any a record holds that this version does not know."""
    declared = [s.name for s in settings()]
    return declared + sorted(set().union(*(r.config for r in records)) - set(declared))


def _changed_settings(records: Sequence[RunRecord]) -> dict[str, tuple[str, ...]]:
    """Setting → each run's plain value, for the settings that differ (what behaviour notes name)."""
    changed = {}
    for key in _keys(records):
        values = tuple(_plain(r.config[key]) if key in r.config else MISSING for r in records)
        if _differs(values):
            changed[key] = values
    return changed


def _setting_rows(records: Sequence[RunRecord]):
    declared = {s.name: s for s in settings()}
    for key in _keys(records):
        values = tuple(_shown(declared.get(key), r.config[key]) if key in r.config else MISSING for r in records)
        if _differs(values):
            yield DiffRow(SETTINGS, label_of(key), values)
    specs = [r.config.get("model") for r in records]
    if any(isinstance(spec, str) and split_model_spec(spec) for spec in specs):
        digests = tuple(_model_digest(spec) for spec in specs)
        if _differs(digests):
            yield DiffRow(SETTINGS, MODEL_FILE, digests, MODEL_FILE_NOTE)


def _model_digest(spec) -> str:
    """The model file's sha256 (12 digits); "file gone" when it is no longer there; "—" for the built-in network or
    a relative path (the folder it was relative to is not recorded)."""
    path = model_file(spec) if isinstance(spec, str) else None
    if path is None:
        return MISSING
    if not path.is_file():
        return "file gone"
    digest = file_digest(path)
    return digest[:12] if digest else "cannot be read"


# -- environment --------------------------------------------------------------------------------------------------
def _environment_rows(records: Sequence[RunRecord]):
    present = set().union(*(r.environment for r in records))
    keys = [k for k in ENVIRONMENT_LABELS if k in present] + sorted(present - set(ENVIRONMENT_LABELS))
    for key in keys:
        values = tuple(str(r.environment[key]) if key in r.environment else MISSING for r in records)
        if _differs(values):
            yield DiffRow(ENVIRONMENT, ENVIRONMENT_LABELS.get(key, key), values)
    hosts = tuple(r.host or MISSING for r in records)
    if _differs(hosts):
        yield DiffRow(ENVIRONMENT, HOST, hosts)


# -- behaviour ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Measured:
    """A run's record with what its events say, read once."""

    record: RunRecord
    results: RunResults | None
    report: CompileReport | None  # the last compile report of the run (None: it has none)

    @property
    def compiled(self) -> CompileReport | None:
        return self.report if self.report is not None and self.report.compiled else None


def _alerts(m: _Measured) -> str:
    """The rules the run's alerts came from, with their steps ('grad_exploding (step 8), …'); 'none' for a run the
    rules watched that raised none; a dash for one recorded before them."""
    alerts = [e for e in m.record.events if isinstance(e, Alert)]
    if alerts:
        return ", ".join(f"{alert.rule} (step {alert.step:,})" for alert in sorted(alerts, key=lambda a: a.step))
    return "none" if WATCHED_BY in m.record.config else MISSING


def _skipped(m: _Measured) -> str:
    """fp16's skipped steps: the run's count at its end, else its AmpSkipped events (a run that did not finish)."""
    amp = m.results.amp if m.results is not None else None
    if amp is not None and amp.final_scale is not None:
        return f"{amp.skipped:,}"
    events = sum(isinstance(e, AmpSkipped) for e in m.record.events)
    return f"{events:,}" if events else MISSING


@dataclass(frozen=True)
class _Behaviour:
    name: str
    read: Callable[[_Measured], str]
    bears_on: tuple[str, ...]  # settings that change it, the most telling first
    machine: bool = False  # the device and versions change it too
    variation: bool = False  # it varies from run to run when nothing differs


STATUS, BACKEND_USED, GRAPH_BREAKS, RECOMPILES = "status", "backend used", "graph breaks", "recompiles"
PAYBACK, SKIPPED, STEPS, DURATION = "payback", "AMP skipped steps", "steps", "duration"
ALERTS = "alerts"
_SPEED = ("backend", "mode", "amp", "batch_size", "hidden_dim", "model", "device", "matmul_precision", "dataset",
          "dynamic", "profile_steps")
BEHAVIOURS = (
    _Behaviour(STATUS, lambda m: m.record.status or MISSING, ()),
    _Behaviour(BACKEND_USED, lambda m: m.record.backend_used or MISSING, ("backend", "allow_eager_fallback")),
    _Behaviour(GRAPH_BREAKS, lambda m: f"{m.compiled.graph_break_count:,}" if m.compiled else MISSING,
               ("backend", "model", "fullgraph", "mode", "dynamic")),
    _Behaviour(RECOMPILES, lambda m: f"{len(m.compiled.recompiles):,}" if m.compiled else MISSING,
               ("backend", "dynamic", "batch_size", "dataset", "model", "mode")),
    _Behaviour(COMPILE.name, lambda m: compile_time(m.record.compile_seconds, m.record.backend_used),
               ("backend", "mode", "dynamic", "fullgraph", "model", "hidden_dim", "amp", "device"), machine=True,
               variation=True),
    _Behaviour(PAYBACK, lambda m: m.results.payback.short() if m.results and m.results.payback else MISSING,
               _SPEED, machine=True, variation=True),
    _Behaviour(SKIPPED, _skipped, ("amp", "loss_scale", "lr", "model")),
    _Behaviour(ALERTS, _alerts, ("lr", "optimizer", "lr_schedule", "model", "amp", "batch_size", "hidden_dim",
                                 "backend", "stats_every", "alert_grad_factor", "alert_plateau_steps",
                                 "alert_throughput_drop", "alert_memory_share", "alert_recompile_storm")),
    _Behaviour(PEAK_MEMORY.name, lambda m: mib(m.record.peak_memory_mib),
               ("batch_size", "hidden_dim", "model", "amp", "backend", "mode", "device", "dataset"), machine=True,
               variation=True),
    _Behaviour(SAMPLES_PER_S.name, lambda m: num(m.record.samples_per_s or None, ",.0f"), _SPEED, machine=True,
               variation=True),
    _Behaviour(BEST_VAL_ACCURACY.name, lambda m: pct(m.record.best_val_accuracy),
               ("lr", "optimizer", "lr_schedule", "weight_decay", "epochs", "max_steps", "batch_size", "hidden_dim",
                "dropout", "model", "dataset", "amp", "seed", "resume"), variation=True),
    _Behaviour(STEPS, lambda m: f"{m.record.steps:,}", ("epochs", "max_steps", "batch_size", "dataset", "resume")),
    _Behaviour(DURATION, lambda m: format_duration(m.record.duration_s) if m.record.duration_s is not None
               else MISSING, ("epochs", "max_steps", "batch_size", "dataset", *_SPEED), machine=True,
               variation=True),
)


@dataclass(frozen=True)
class _Why:
    """A setting known to explain a behaviour when its values across the runs are such."""

    behaviour: str
    setting: str
    applies: Callable[[tuple[str, ...]], bool]
    text: str


def _has(value: str) -> Callable[[tuple[str, ...]], bool]:
    return lambda values: value in values


WHYS = (
    _Why(SKIPPED, "amp", _has("fp16"), "only fp16 scales the loss, and skips the steps whose gradients overflow"),
    _Why(COMPILE.name, "backend", _has("eager"), "an eager run compiles nothing"),
    _Why(COMPILE.name, "mode", lambda values: any(v.startswith("max-autotune") for v in values),
         "max-autotune times kernel variants while it compiles"),
    _Why(GRAPH_BREAKS, "backend", _has("eager"), "an eager run has no graphs to break"),
    _Why(GRAPH_BREAKS, "fullgraph", _has("on"), "with fullgraph a graph break fails the run"),
    _Why(RECOMPILES, "backend", _has("eager"), "an eager run compiles nothing, so nothing recompiles"),
    _Why(RECOMPILES, "dynamic", lambda values: len(set(values)) > 1,
         "dynamic shapes decide whether a new input shape compiles again"),
    _Why(PAYBACK, "backend", _has("eager"), "the payback is measured for compiled runs only"),
)


def _behaviour_rows(records: Sequence[RunRecord], changed: dict[str, tuple[str, ...]],
                    environment: list[DiffRow]):
    measured = [_Measured(r, r.results, last_compile_report(r.events)) for r in records]
    machine = [row for row in environment if row.field in MACHINE]
    for behaviour in BEHAVIOURS:
        values = tuple(behaviour.read(m) for m in measured)
        if _differs(values):
            yield DiffRow(BEHAVIOUR, behaviour.name, values,
                          _note(behaviour, measured, changed, machine if behaviour.machine else []))


def _note(behaviour: _Behaviour, measured: list[_Measured], changed: dict[str, tuple[str, ...]],
          machine: list[DiffRow]) -> str:
    """Why the behaviour differs, when a known setting explains it; then the settings (and machines) that differ
    with it: 'only fp16 scales the loss, …; with amp off / fp16'."""
    why = [w.text for w in WHYS if w.behaviour == behaviour.name and w.setting in changed
           and w.applies(changed[w.setting])]
    fell_back = _fell_back(measured) if behaviour.name == BACKEND_USED else ""
    if fell_back:
        why.append(f"{fell_back} fell back to eager when compiling failed")
    named = [f"{key} {' / '.join(changed[key])}" for key in behaviour.bears_on if key in changed]
    named += [f"{row.field} {' / '.join(row.values)}" for row in machine]
    with_text = "with " + ", ".join(named[:MAX_NAMED]) + (", …" if len(named) > MAX_NAMED else "") if named else ""
    if not why and not named and not changed and behaviour.variation:
        with_text = "no setting differs: the runs' own variation"
    return "; ".join([*why[:1], with_text] if with_text else why[:1])


def _fell_back(measured: list[_Measured]) -> str:
    """'#3' (or '#3, #5'): the runs that were set to compile but trained eagerly; "" when none did."""
    fell = [run_name(m.record.id) for m in measured
            if m.record.backend_used == "eager" and m.record.config.get("backend") not in (None, "eager")]
    return ", ".join(fell)
