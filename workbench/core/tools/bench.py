"""`workbench bench`: every backend, mode and precision side by side, against three reference rows.

Method (printed under the table):
- every row trains the same network (same seed) on the same device-resident data, at the same batch size;
- `warmup` steps first (the first one compiles: its time is reported apart as compile seconds), then `windows`
  timed windows of `window_steps` steps; a window's samples/s is its steps × batch / its wall time, with the
  device synchronised at the window's end (CUDA); the table shows the median and the spread over windows;
- step p50/p99 are per step: host clocks on the CPU (its ops are synchronous), CUDA events on a GPU;
- engine rows are real `Trainer.run` calls with every event emitted and consumed (what the GUI and CLI see);
- reference rows: a minimal hand-written loop over the same tensors (the floor for the engine's overhead), the
  article's per-sample Dataset + DataLoader recipe (both with AdamW, fused on CUDA), and the training step's GEMMs
  alone (an upper bound; on CUDA once in true fp32 and once with TF32, the precisions that differ there);
- every row runs with the chosen device current and the fp32 matmul precision stated in the header (both set for
  the row and restored after it);
- speed-ups are against the engine's eager fp32 row measured in the same process, same run;
- break-even: the engine's own payback for a compiled row (what a run in the app or the CLI reports): after the
  row's steps, compiled and eager steps (force_eager) alternate on the same batches in the same process, and the
  step at which the row's compile seconds (every phase: first step, first validation, CUDA-graph recording) come
  back is computed from their medians ("never" when compiled steps are not faster, "no gain" within 2 %);
- the target ratios (engine vs plain loop, vs article recipe) are medians over rounds that measure each pair
  back to back, so that drift on a shared machine hits both sides of a ratio alike.
"""

from __future__ import annotations

import contextlib
import functools
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ..domain import devices
from ..ground.config import EVAL_BATCH, TrainConfig, setup_label
from ..domain.data import DeviceBatches, Split, load_splits
from ..engine import Trainer
from ..ground.errors import WorkbenchError
from ..ground.events import CompileFinished, EpochEnd, RunFailed, Step
from ..domain.model import PIXEL_MEAN, PIXEL_STD, SandwichNet

ARTICLE_WORKERS = 4  # what the article's recipe asks for (capped to the machine)


@dataclass
class BenchSettings:
    device: str = "auto"
    dataset: str = "mnist-sample"
    batch_size: int = 256
    hidden_dim: int = 128
    warmup: int = 20
    windows: int = 5
    window_steps: int = 50
    eval_batches: int = 20
    pairs: int = 3  # rounds of engine-vs-reference pairs behind the ratios
    matmul_precision: str | None = None  # torch.set_float32_matmul_precision for the whole run; None: as it is


@dataclass
class Row:
    name: str
    kind: str  # "engine" | "reference"
    samples_per_s: float = 0.0  # median over windows
    spread: tuple[float, float] = (0.0, 0.0)  # min, max over windows
    step_p50_ms: float = 0.0
    step_p99_ms: float = 0.0
    compile_seconds: float | None = None
    break_even: str = ""  # the run's payback: "1,240 steps", "never (0.73×)"; empty for an uncompiled row
    peak_memory_mib: float | None = None
    eval_samples_per_s: float | None = None
    speedup: float | None = None
    note: str = ""
    windows: list[float] = field(default_factory=list)


# -- timing ---------------------------------------------------------------------------------------------------
class StepClock:
    """Per-step times and per-window throughput; CUDA events on a GPU, host clocks on the CPU."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self.step_ms: list[float] = []

    def time_window(self, steps: int, step: Callable[[], bool | None], samples_per_step: int,
                    between: Callable[[], None] | None = None) -> float:
        """samples/s of `steps` calls of `step`. When a step returns True (an epoch ended), `between` runs
        (validation) and its time is left out, as the engine leaves its validation out of throughput."""
        untimed = 0.0
        if self.cuda:  # the bench's device, named: the events and syncs must not land on whichever GPU is current
            torch.cuda.synchronize(self.device)
            stream = torch.cuda.current_stream(self.device)
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
            start = time.perf_counter()
            for i in range(steps):
                starts[i].record(stream)
                epoch_ended = step()
                ends[i].record(stream)
                if epoch_ended and between is not None:
                    torch.cuda.synchronize(self.device)  # the queued training steps are part of the window
                    paused = time.perf_counter()
                    between()
                    untimed += time.perf_counter() - paused
            torch.cuda.synchronize(self.device)
            seconds = time.perf_counter() - start - untimed
            self.step_ms += [a.elapsed_time(b) for a, b in zip(starts, ends)]
        else:
            seconds = 0.0
            for _ in range(steps):
                began = time.perf_counter()
                epoch_ended = step()
                took = time.perf_counter() - began
                seconds += took
                self.step_ms.append(took * 1000)
                if epoch_ended and between is not None:
                    between()
        return steps * samples_per_step / seconds


def _percentiles(step_ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(step_ms, 50)), float(np.percentile(step_ms, 99))


def _row_from_windows(name: str, kind: str, windows: list[float], step_ms: list[float], **extra) -> Row:
    p50, p99 = _percentiles(step_ms) if step_ms else (0.0, 0.0)
    return Row(name=name, kind=kind, samples_per_s=statistics.median(windows), spread=(min(windows), max(windows)),
               step_p50_ms=p50, step_p99_ms=p99, windows=windows, **extra)


def _peak_memory(device: torch.device) -> float | None:
    return devices.memory_mib(device).peak_mib


@contextlib.contextmanager
def on_device(device: torch.device, matmul_precision: str):
    """What every row runs inside: its device current (CUDA: `synchronize`, events, pinned memory and the
    allocator's statistics all default to the current device, GPU 0 unless set) and the fp32 matmul precision;
    both restored afterwards."""
    previous_precision = torch.get_float32_matmul_precision()
    previous_device = torch.cuda.current_device() if device.type == "cuda" else None
    torch.set_float32_matmul_precision(matmul_precision)
    if previous_device is not None:
        torch.cuda.set_device(device)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous_precision)
        if previous_device is not None:
            torch.cuda.set_device(previous_device)


def _measured(measure: Callable[[], Row], device: torch.device, matmul_precision: str) -> Row:
    """One row, on its device and at its precision, with the allocator's peak reset first."""
    with on_device(device, matmul_precision):
        _reset_peak(device)
        return measure()


def _reference_optimizer(model: nn.Module, device: torch.device) -> torch.optim.Optimizer:
    """The reference loops' AdamW: fused on CUDA (one kernel for every parameter, as a tuned loop would use),
    never on the CPU."""
    return torch.optim.AdamW(model.parameters(), lr=1e-3, **({"fused": True} if device.type == "cuda" else {}))




def matmul_precisions(device: torch.device, precision: str) -> list[str]:
    """The precisions the GEMM bound is measured at: on CUDA true fp32 ("highest") and TF32 ("high"; "medium"
    also means TF32 for fp32 matmuls there), the two that differ, whatever the bench's own precision; on the CPU
    the bench's precision alone."""
    return ["highest", "high"] if device.type == "cuda" else [precision]


# -- reference rows ---------------------------------------------------------------------------------------------
def _fresh_model(settings: BenchSettings, device: torch.device) -> SandwichNet:
    torch.manual_seed(0)
    return SandwichNet(hidden_dim=settings.hidden_dim).to(device)


def plain_loop(settings: BenchSettings, train: Split, val: Split, device: torch.device) -> Row:
    """The minimal loop: index into device tensors, forward, loss, backward, step; and, like the engine, a
    validation pass after each epoch, left out of the timing (it still cools the caches, as it does for the
    engine: measured ~5% on the CPU with a 15-step epoch)."""
    model = _fresh_model(settings, device)
    optimizer = _reference_optimizer(model, device)
    batches = DeviceBatches(train, settings.batch_size, device, seed=0)
    val_batches = DeviceBatches(val, EVAL_BATCH, device, shuffle=False, drop_last=False)
    stream = _endless(batches)
    position = [0]

    def step() -> bool:
        x, y = next(stream)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        position[0] += 1
        return position[0] % len(batches) == 0  # the epoch has ended

    def validate() -> None:
        _validation_pass(model, val_batches, device)
        model.train()

    row = _time_steps("plain loop (reference)", step, settings, device, between=validate)
    row.eval_samples_per_s = _eval_throughput(model, val, settings, device)
    return row


def article_recipe(settings: BenchSettings, train: Split, val: Split, device: torch.device) -> Row:
    """The article's pipeline: a per-sample Dataset (ToTensor + Normalize in __getitem__) behind a DataLoader
    with worker processes, pin_memory on CUDA, persistent workers, prefetch_factor 2."""
    from torch.utils.data import DataLoader

    workers = min(ARTICLE_WORKERS, os.cpu_count() or 1)
    loader = DataLoader(_PerSampleDataset(train), batch_size=settings.batch_size, shuffle=True, drop_last=True,
                        num_workers=workers, pin_memory=device.type == "cuda", persistent_workers=workers > 0,
                        prefetch_factor=2 if workers else None)
    model = _fresh_model(settings, device)
    optimizer = _reference_optimizer(model, device)
    stream = _endless(loader)

    def step() -> None:
        x, y = next(stream)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        # The Dataset normalised already (the article's way); the model's InputAdapter would do it a second time.
        loss = F.cross_entropy(model.core_block(x.flatten(1)), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    row = _time_steps("article recipe (reference)", step, settings, device)
    row.note = f"DataLoader, {workers} workers"
    return row


class _PerSampleDataset(torch.utils.data.Dataset):
    def __init__(self, split: Split):
        self.images, self.labels = split.images, split.labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        image = self.images[index].float().div(255).unsqueeze(0)  # ToTensor
        return (image - PIXEL_MEAN) / PIXEL_STD, int(self.labels[index])  # Normalize


def matmul_bound(settings: BenchSettings, device: torch.device, precision: str = "highest") -> Row:
    """The five GEMMs of one training step (fc1/fc2 forward, their weight gradients, fc2's input gradient) timed
    alone: no activation, loss, optimizer or data. No training step of this model can beat it. `precision` names
    the fp32 matmul precision the caller runs it at (see `on_device`)."""
    b, h = settings.batch_size, settings.hidden_dim
    g = torch.Generator(device="cpu").manual_seed(0)
    x, w1 = torch.randn(b, 784, generator=g).to(device), torch.randn(h, 784, generator=g).to(device)
    w2, grad = torch.randn(10, h, generator=g).to(device), torch.randn(b, 10, generator=g).to(device)

    def step() -> None:
        hidden = x @ w1.T
        _ = hidden @ w2.T
        _ = grad.T @ hidden  # dW2
        d_hidden = grad @ w2
        _ = d_hidden.T @ x  # dW1

    return _time_steps(matmul_bound_name(precision, device), step, settings, device)


def matmul_bound_name(precision: str, device: torch.device) -> str:
    """E.g. "matmul bound · highest/fp32 (reference)", "… high/TF32 …" on CUDA; the bare precision on the CPU."""
    kind = ("/fp32" if precision == "highest" else "/TF32") if device.type == "cuda" else ""
    return f"matmul bound · {precision}{kind} (reference)"


def _time_steps(name: str, step: Callable[[], bool | None], settings: BenchSettings, device: torch.device,
                between: Callable[[], None] | None = None) -> Row:
    for _ in range(settings.warmup):
        if step() and between is not None:
            between()
    clock = StepClock(device)
    windows = [clock.time_window(settings.window_steps, step, settings.batch_size, between)
               for _ in range(settings.windows)]
    return _row_from_windows(name, "reference", windows, clock.step_ms, peak_memory_mib=_peak_memory(device))


def _eval_throughput(model: nn.Module, val: Split, settings: BenchSettings, device: torch.device) -> float:
    """A hand-written validation pass doing the engine's work (loss and accuracy over the split, one sync),
    repeated; the median pass gives samples/s. Compares with the engine rows' validation timing."""
    batches = DeviceBatches(val, EVAL_BATCH, device, shuffle=False, drop_last=False)
    _validation_pass(model, batches, device)
    times = []
    for _ in range(settings.eval_batches):
        start = time.perf_counter()
        _validation_pass(model, batches, device)
        times.append(time.perf_counter() - start)
    model.train()
    return len(val) / statistics.median(times)


def _validation_pass(model: nn.Module, batches: DeviceBatches, device: torch.device) -> None:
    """Hand-written validation doing the engine's work: loss and accuracy over the split, one sync at the end."""
    model.eval()
    with torch.no_grad():
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.long)
        for x, y in batches.epoch(0):
            logits = model(x)
            loss_sum += F.cross_entropy(logits, y, reduction="sum")
            correct += (logits.argmax(dim=-1) == y).sum()
        loss_sum.item(), correct.item()  # noqa: B018 — the sync that ends a pass


def _endless(iterable):
    """Batches forever, epoch after epoch (each epoch a new permutation where the source shuffles)."""
    epoch = 0
    while True:
        epoch += 1
        for batch in (iterable.epoch(epoch) if isinstance(iterable, DeviceBatches) else iterable):
            yield batch


# -- engine rows ------------------------------------------------------------------------------------------------
def engine_row(config: TrainConfig, settings: BenchSettings, device: torch.device) -> Row:
    """A real Trainer.run, every event consumed; windows are cut from its Step events after the warm-up (off the
    CPU, from its first read-back block after the warm-up: see _TimedSteps)."""
    name = engine_name(config)
    on_cpu = device.type == "cpu"
    wanted = settings.windows * settings.window_steps
    timing = _TimedSteps(settings.warmup, wanted, exact=on_cpu)
    cap = settings.warmup + wanted * (1 if on_cpu else BLOCK_ALLOWANCE)
    # The run ends at its step cap, never stopped: a stopped run measures no payback.
    result = Trainer().run(config.replace(epochs=10_000, max_steps=cap), timing)
    if isinstance(result, RunFailed):
        return Row(name=name, kind="engine", note=f"failed: {result.kind}: {result.message}"[:160])
    events = timing.events
    timed = timing.timed()
    windows, step_ms = [], []
    for w in range(settings.windows):
        chunk = timed[w * settings.window_steps:(w + 1) * settings.window_steps]
        seconds = sum(s.step_seconds for s in chunk)
        if chunk and seconds > 0:
            windows.append(len(chunk) * config.batch_size / seconds)
        step_ms += [s.step_seconds * 1000 for s in chunk]
    compile_event = next((e for e in events if isinstance(e, CompileFinished)), None)
    eval_rates = _eval_rates(events)
    row = _row_from_windows(name, "engine", windows or [0.0], step_ms,
                            compile_seconds=compile_event.seconds if compile_event else None,
                            peak_memory_mib=result.results.peak_memory_mib,
                            eval_samples_per_s=statistics.median(eval_rates) if eval_rates else None)
    if result.results.payback is not None:
        row.break_even = result.results.payback.short()
    notes = []
    if result.results.backend_used != config.backend:
        notes.append(f"fell back to {result.results.backend_used}")
    if not on_cpu:
        notes.append("step times are averages between syncs")
    if timing.first is None:
        notes.append("too few steps to keep the warm-up's read-back block out of the timing")
    row.note = "; ".join(notes)
    return row


BLOCK_ALLOWANCE = 4  # an engine row may run this many times its timed steps while it waits for a block to start


class _TimedSteps:
    """The event sink of an engine row: keeps every event and finds the `wanted` steps to time.

    The engine reads losses back in blocks (every engine.FLUSH_SECONDS). On the CPU each Step has its own time;
    elsewhere every step of a block gets the block's average, so a block that straddles the end of the warm-up
    spreads warm-up time (a cudagraph recording, autotuning) over timed steps. Timing therefore starts with the
    first block that begins after the warm-up; a block's steps share their samples_per_s (and epoch). Kept O(1)
    per event: this runs inside the timed loop."""

    def __init__(self, warmup: int, wanted: int, *, exact: bool):
        self.warmup, self.wanted, self.exact = warmup, wanted, exact
        self.events: list = []
        self.first: int | None = None  # the first timed step
        self._block: tuple | None = None

    def __call__(self, event) -> None:
        self.events.append(event)
        if type(event) is not Step:
            return
        block, self._block = self._block, (event.epoch, event.samples_per_s)
        if self.first is None and event.step > self.warmup and (self.exact or block != self._block):
            self.first = event.step

    def timed(self) -> list[Step]:
        """The timed steps; without a block that began after the warm-up, every step after it (noted)."""
        first = self.warmup + 1 if self.first is None else self.first
        return [e for e in self.events if type(e) is Step and first <= e.step < first + self.wanted]


def _eval_rates(events: list) -> list[float]:
    """Validation throughput per epoch after the first (which may compile the eval graph)."""
    ends = [e for e in events if isinstance(e, EpochEnd)]
    return [e.val_samples / e.val_seconds for e in ends[1:] if e.val_seconds > 0]


def engine_name(config: TrainConfig) -> str:
    return f"engine · {setup_label(config.to_dict())}"


def engine_configs(settings: BenchSettings, backends: list[str], modes: list[str], amps: list[str],
                   cuda: bool) -> tuple[list[TrainConfig], list[str]]:
    """Every runnable combination, and a note for each one skipped (with the reason)."""
    base = TrainConfig(dataset=settings.dataset, device=settings.device, batch_size=settings.batch_size,
                       hidden_dim=settings.hidden_dim, lr_schedule="constant", lr=1e-3,
                       matmul_precision=settings.matmul_precision or torch.get_float32_matmul_precision())
    configs, skipped = [], []
    for backend in backends:
        for mode in (modes if backend == "inductor" else ["default"]):
            for amp in amps:
                try:
                    config = base.replace(backend=backend, mode=mode, amp=amp)
                    config.check_runnable(cuda)
                except WorkbenchError as exc:
                    skipped.append(f"{backend} · {mode} · {amp}: {exc}")
                    continue
                configs.append(config)
    return configs, skipped


# -- the whole benchmark ----------------------------------------------------------------------------------------
@dataclass
class BenchResult:
    settings: BenchSettings
    device_name: str
    versions: dict
    rows: list[Row]
    skipped: list[str]
    ratios: dict[str, float]
    matmul_precision: str = "highest"  # the fp32 matmul precision the rows ran with (the GEMM bound's own aside)

    def to_dict(self) -> dict:
        return {"settings": asdict(self.settings), "device_name": self.device_name, "versions": self.versions,
                "matmul_precision": self.matmul_precision, "rows": [asdict(r) for r in self.rows],
                "skipped": self.skipped, "ratios": self.ratios, "method": METHOD}


METHOD = __doc__.split("Method (printed under the table):\n", 1)[1].strip()


def run_bench(settings: BenchSettings, backends: list[str], modes: list[str], amps: list[str],
              progress: Callable[[str], None] = lambda text: None) -> BenchResult:
    device = devices.resolve_device(settings.device)
    cuda = device.type == "cuda"
    precision = settings.matmul_precision or torch.get_float32_matmul_precision()
    train, val = load_splits(settings.dataset)
    configs, skipped = engine_configs(settings, backends, modes, amps, cuda)
    rows: list[Row] = []
    plan = [("plain loop", lambda: plain_loop(settings, train, val, device), precision),
            ("article recipe", lambda: article_recipe(settings, train, val, device), precision)]
    plan += [(f"matmul bound ({p})", functools.partial(matmul_bound, settings, device, p), p)
             for p in matmul_precisions(device, precision)]
    plan += [(engine_name(c), functools.partial(engine_row, c, settings, device), precision) for c in configs]
    for name, measure, row_precision in plan:
        progress(f"measuring {name}…")
        rows.append(_measured(measure, device, row_precision))
    baseline = next((r for r in rows if r.name == "engine · eager · off" and r.samples_per_s), None)
    for row in rows:
        if baseline is not None and row.samples_per_s:
            row.speedup = row.samples_per_s / baseline.samples_per_s
    ratios = {}
    eager = next((c for c in configs if c.backend == "eager" and c.amp == "off"), None)
    if eager is not None:
        progress(f"pairing the engine with the plain loop and the article recipe ({settings.pairs} rounds)…")
        ratios = paired_ratios(settings, eager, train, val, device, precision)
    return BenchResult(settings=settings, device_name=devices.device_name(device), versions=devices.versions(),
                       rows=rows, skipped=skipped, ratios=ratios, matmul_precision=precision)


def paired_ratios(settings: BenchSettings, eager: TrainConfig, train: Split, val: Split,
                  device: torch.device, precision: str = "highest") -> dict[str, float]:
    """The targets are ratios, and a shared machine drifts between rows: measure each reference right next to
    the engine, `pairs` times, and keep the median of the per-round ratios."""
    plain, article = [], []

    def rate(measure: Callable[[], Row]) -> float:
        return _measured(measure, device, precision).samples_per_s

    for _ in range(settings.pairs):
        engine_rate = rate(lambda: engine_row(eager, settings, device))
        plain.append(engine_rate / rate(lambda: plain_loop(settings, train, val, device)))
        article.append(engine_rate / rate(lambda: article_recipe(settings, train, val, device)))
    return {"engine eager / plain loop": statistics.median(plain),
            "engine eager / article recipe": statistics.median(article)}


def recording_overhead(config: TrainConfig, rounds: int, folder: Path,
                       progress: Callable[[str], None] = lambda text: None) -> dict:
    """Training samples/s with the run history recorded (SQLite, batched commits) against without, in back-to-back
    pairs; the median of the per-pair ratios. Both write the run's files; only the database differs. The pairs
    alternate which run goes first, so that whatever favours the first or the second of two runs (warm caches,
    drift) does not lean the ratio one way."""
    on, off, ratios = [], [], []
    for i in range(rounds):
        progress(f"recording overhead: pair {i + 1}/{rounds}…")
        order = (False, True) if i % 2 == 0 else (True, False)
        rates = {recorded: _recorded_rate(config, folder, recorded, i) for recorded in order}
        off.append(rates[False])
        on.append(rates[True])
        ratios.append(rates[True] / rates[False])
    return {"config": config.to_dict(), "recorded": on, "not_recorded": off, "ratios": ratios,
            "median_ratio": statistics.median(ratios)}


def _recorded_rate(config: TrainConfig, folder: Path, recorded: bool, pair: int) -> float:
    """The steady samples/s of one run, with or without the run history; a run that measured none is an error."""
    from ..kernel.launch import start_run
    from ..run.run_request import Launch, RunRequest

    out = folder / f"{'on' if recorded else 'off'}-{pair}"
    request = RunRequest(config=config, out_dir=str(out.resolve()), db=str(folder / "runs.sqlite"), record=recorded,
                         launch=Launch(where="here"))
    result = start_run(request, lambda event: None)
    if isinstance(result, RunFailed):
        raise WorkbenchError(f"a recording-overhead run failed ({result.kind}): {result.message}", result.hint)
    if not result.results.samples_per_s:
        raise WorkbenchError("a recording-overhead run measured no steady-state steps",
                             "train for more steps (more epochs or a smaller batch)")
    return result.results.samples_per_s


def _reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def format_table(result: BenchResult) -> str:
    s = result.settings
    lines = [f"{result.device_name} · torch {result.versions.get('torch')} · batch {s.batch_size} · hidden "
             f"{s.hidden_dim} · {s.dataset} · fp32 matmul precision {result.matmul_precision}",
             f"{'row':<44} {'samples/s':>11} {'(min–max)':>17} {'vs eager':>8} {'compile s':>9} "
             f"{'step p50 ms':>11} {'p99 ms':>8} {'peak MiB':>9} {'eval samples/s':>14} {'break-even':>15}"]
    for r in result.rows:
        if not r.samples_per_s:
            lines.append(f"{r.name:<44} {'—':>11}  {r.note}")
            continue
        spread = f"{r.spread[0]:,.0f}–{r.spread[1]:,.0f}"
        lines.append(
            f"{r.name:<44} {r.samples_per_s:>11,.0f} {spread:>17} "
            f"{(f'{r.speedup:.2f}×' if r.speedup else '—'):>8} "
            f"{(f'{r.compile_seconds:.2f}' if r.compile_seconds is not None else '—'):>9} "
            f"{r.step_p50_ms:>11.3f} {r.step_p99_ms:>8.3f} "
            f"{(f'{r.peak_memory_mib:,.0f}' if r.peak_memory_mib else '—'):>9} "
            f"{(f'{r.eval_samples_per_s:,.0f}' if r.eval_samples_per_s else '—'):>14} "
            f"{(r.break_even or '—'):>15}"
            + (f"  ({r.note})" if r.note else ""))
    lines += [f"ratio {k}: {v:.2f}×" for k, v in result.ratios.items()]
    lines += [f"skipped {s}" for s in result.skipped]
    lines += ["", "method: " + METHOD.replace("\n", "\n        ")]
    lines.append(f"        warm-up {s.warmup} steps, {s.windows} windows × {s.window_steps} steps; peak memory is "
                 f"{'the CUDA allocator peak' if 'CPU' not in result.device_name else 'the process RSS'}")
    return "\n".join(lines)
