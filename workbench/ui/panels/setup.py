"""Setup dock: every setting of a run, turned into one validated TrainConfig.

What this machine cannot run is disabled with the reason as tooltip (e.g. fp16 or CUDA graphs without CUDA);
anything else the core's validation rejects is shown inline under the form, and Train stays disabled.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGroupBox,
                               QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget)

import torch

from ...core import devices
from ...core.config import AMP_CHOICES, BACKENDS, MODES, OPTIMIZERS, ConfigError, TrainConfig
from ...core.data import CATALOGUE
from ...core.distributed import Launch, check_launch
from ...core.errors import WorkbenchError

BUILTIN_MODEL = "sandwich"
EXAMPLE_MODEL_LABEL = "Planted graph break (example)"
OPEN_MODEL = "__open__"


def example_model_spec() -> str:
    from ...core.data import resource_path

    return f"{resource_path('examples', 'planted_break.py')}:PlantedBreakNet"


def _combo(name: str, items: list[tuple[str, str]]) -> QComboBox:
    combo = QComboBox()
    combo.setObjectName(name)
    combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)  # long titles may elide
    combo.setMinimumContentsLength(10)
    for value, label in items:
        combo.addItem(label, value)
    return combo


def _select(combo: QComboBox, value) -> None:
    index = combo.findData(value)
    if index >= 0:
        combo.setCurrentIndex(index)


def _group(title: str, rows: list[tuple[str | None, QWidget | QHBoxLayout]]) -> QGroupBox:
    """A titled form; a row without a label spans the width (check boxes)."""
    box = QGroupBox(title)
    form = QFormLayout(box)
    for label, field in rows:
        if label is None:
            form.addRow(field)
        else:
            form.addRow(label, field)
    return box


def _spin(name: str, low: int, high: int, step: int = 1) -> QSpinBox:
    spin = QSpinBox()
    spin.setObjectName(name)
    spin.setRange(low, high)
    spin.setSingleStep(step)
    spin.setAccelerated(True)
    return spin


class SetupPanel(QWidget):
    changed = Signal()  # any setting changed (the config may now be valid or invalid)
    runnerChanged = Signal(bool)  # True: train in this process (a worker thread); False: in a child process
    processesChanged = Signal(int)  # > 1: data-parallel processes under torchrun

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.dataset = _combo("datasetCombo", [(info.name, info.title) for info in CATALOGUE.values()])
        self.data_root = QLineEdit()
        self.data_root.setObjectName("dataRootEdit")
        self.data_root.setPlaceholderText("folder (only for idx / imagefolder, or offline torchvision data)")
        browse = QPushButton("…")
        browse.setToolTip("Choose the data folder")
        browse.clicked.connect(self._browse_data_root)
        root_row = QHBoxLayout()
        root_row.addWidget(self.data_root)
        root_row.addWidget(browse)

        self.model = _combo("modelCombo", [(BUILTIN_MODEL, "Sandwich network (built in)"),
                                           (example_model_spec(), EXAMPLE_MODEL_LABEL),
                                           (OPEN_MODEL, "Open model file…")])
        self.model.activated.connect(self._model_activated)
        self.device = _combo("deviceCombo", devices.device_choices())
        self.hidden = _spin("hiddenSpin", 1, 8192, 16)
        self.epochs = _spin("epochsSpin", 1, 10_000)
        self.batch = _spin("batchSpin", 1, 65_536, 16)
        self.lr = QDoubleSpinBox()
        self.lr.setObjectName("lrSpin")
        self.lr.setDecimals(5)
        self.lr.setRange(0.0, 100.0)  # 0 is reachable on purpose: the core's validation explains why it is wrong
        self.lr.setSingleStep(0.0005)
        self.optimizer = _combo("optimizerCombo", [(o, o.upper() if o == "sgd" else "AdamW") for o in OPTIMIZERS])
        self.seed = _spin("seedSpin", 0, 2**31 - 1)

        self.backend = _combo("backendCombo", [(b, b) for b in BACKENDS])
        self.mode = _combo("modeCombo", [(m, m) for m in MODES])
        self.fullgraph = QCheckBox("fullgraph (fail on any graph break)")
        self.fullgraph.setObjectName("fullgraphCheck")
        self.dynamic = _combo("dynamicCombo", [(None, "automatic"), (True, "on"), (False, "off")])
        self.fallback = QCheckBox("fall back to eager if compiling fails")
        self.fallback.setObjectName("fallbackCheck")
        self.amp = _combo("ampCombo", [(a, {"off": "off (fp32)", "bf16": "bf16", "fp16": "fp16"}[a])
                                       for a in AMP_CHOICES])

        self.problem = QLabel()
        self.problem.setObjectName("configProblem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #b00020;")
        self.problem.setTextInteractionFlags(Qt.TextSelectableByMouse)

        self.runner = _combo("runnerCombo", [(False, "separate process (recommended)"),
                                             (True, "this process (for debugging)")])
        self.runner.setToolTip("A separate process keeps the window smooth and training at full speed; this "
                               "process lets a debugger step into your model")
        self.runner.currentIndexChanged.connect(lambda _i: self.runnerChanged.emit(self.in_process()))
        self.processes = _spin("processesSpin", 1, max(64, torch.cuda.device_count()))
        self.processes.setToolTip("1: one training process. More: that many data-parallel processes started by "
                                  "torchrun (DDP: gloo on the CPU, one GPU each with nccl); the batch size is the "
                                  "global batch, split between them")
        self.processes.valueChanged.connect(self._processes_changed)
        boxes = (
            _group("Data and model", [("Dataset", self.dataset), ("Data folder", root_row), ("Model", self.model),
                                      ("Device", self.device), ("Hidden size", self.hidden)]),
            _group("Training", [("Epochs", self.epochs), ("Batch size", self.batch), ("Learning rate", self.lr),
                                ("Optimizer", self.optimizer), ("Seed", self.seed)]),
            _group("Compile", [("Backend", self.backend), ("Mode", self.mode), ("Dynamic shapes", self.dynamic),
                               (None, self.fullgraph), (None, self.fallback)]),
            _group("Precision", [("AMP", self.amp)]),
            _group("Process", [("Train in", self.runner), ("Processes", self.processes)]),
        )

        layout = QVBoxLayout(self)
        for box in boxes:
            layout.addWidget(box)
        layout.addWidget(self.problem)
        layout.addStretch(1)

        self._base = TrainConfig()
        for combo in (self.dataset, self.device, self.optimizer, self.backend, self.mode, self.dynamic, self.amp,
                      self.model):
            combo.currentIndexChanged.connect(self._on_change)
        for spin in (self.hidden, self.epochs, self.batch, self.lr, self.seed):
            spin.valueChanged.connect(self._on_change)
        for check in (self.fullgraph, self.fallback):
            check.toggled.connect(self._on_change)
        self.data_root.textChanged.connect(self._on_change)
        self.set_config(self._base)

    # -- config in and out --------------------------------------------------------------------------------------
    def set_config(self, config: TrainConfig) -> None:
        _select(self.dataset, config.dataset)
        self.data_root.setText(config.data_root or "")
        if self.model.findData(config.model) < 0:
            self.model.insertItem(self.model.count() - 1, config.model.rsplit("/", 1)[-1], config.model)
        _select(self.model, config.model)
        _select(self.device, config.device)
        self.hidden.setValue(config.hidden_dim)
        self.epochs.setValue(config.epochs)
        self.batch.setValue(config.batch_size)
        self.lr.setValue(config.lr)
        _select(self.optimizer, config.optimizer)
        self.seed.setValue(config.seed)
        _select(self.backend, config.backend)
        _select(self.mode, config.mode)
        _select(self.dynamic, config.dynamic)
        self.fullgraph.setChecked(config.fullgraph)
        self.fallback.setChecked(config.allow_eager_fallback)
        _select(self.amp, config.amp)
        self._base = config  # keeps settings the form does not show (dropout, weight decay, schedule)
        self._on_change()

    def config(self) -> TrainConfig:
        """The current settings as a TrainConfig; raises a WorkbenchError (ConfigError names the field) when
        they cannot run here, the number of processes included."""
        config = self._base.replace(
            dataset=self.dataset.currentData(),
            data_root=self.data_root.text().strip() or None,
            model=self.model.currentData() if self.model.currentData() != OPEN_MODEL else BUILTIN_MODEL,
            device=self.device.currentData(),
            hidden_dim=self.hidden.value(),
            epochs=self.epochs.value(),
            batch_size=self.batch.value(),
            lr=round(self.lr.value(), 8),
            optimizer=self.optimizer.currentData(),
            seed=self.seed.value(),
            backend=self.backend.currentData(),
            mode=self.mode.currentData() if self.backend.currentData() == "inductor" else "default",
            dynamic=self.dynamic.currentData(),
            fullgraph=self.fullgraph.isChecked(),
            allow_eager_fallback=self.fallback.isChecked(),
            amp=self.amp.currentData(),
        )
        config.check_runnable(devices.cuda_available())
        if self.processes.value() > 1:
            check_launch(Launch(nproc_per_node=self.processes.value()), config.batch_size, config.device)
        return config

    def in_process(self) -> bool:
        return bool(self.runner.currentData())

    def _processes_changed(self, count: int) -> None:
        self.runner.setEnabled(count == 1)  # several processes always run under torchrun, never in this one
        self.runner.setToolTip("" if count == 1 else "Several processes always run under torchrun")
        self._on_change()
        self.processesChanged.emit(count)

    def set_in_process(self, in_process: bool) -> None:
        _select(self.runner, in_process)

    def valid_config(self) -> TrainConfig | None:
        try:
            return self.config()
        except WorkbenchError:
            return None

    # -- keeping the form honest --------------------------------------------------------------------------------
    def _on_change(self, *_args) -> None:
        self._update_availability()
        try:
            self.config()
            self.problem.setText("")
            self.problem.hide()
        except WorkbenchError as exc:
            self.problem.setText(f"⚠ {exc}" + (f" — {exc.hint}" if exc.hint else ""))
            self.problem.show()
        self.changed.emit()

    def _update_availability(self) -> None:
        """The core decides what this machine can run; the form only disables it and shows the core's reason."""
        name = self.device.currentData() or "auto"
        kind = torch.device("cuda" if devices.uses_cuda(name) else "cpu")  # the type is all it needs: no CUDA init
        for backend, problem in devices.backend_availability(kind).items():
            _enable_item(self.backend, self.backend.findData(backend), problem)
        inductor = self.backend.currentData() == "inductor"
        self.mode.setEnabled(inductor)
        self.mode.setToolTip("" if inductor else "Modes apply to the inductor backend only")
        for mode in MODES:
            _enable_item(self.mode, self.mode.findData(mode), _problem(device=name, backend="inductor", mode=mode))
        for amp in AMP_CHOICES:
            _enable_item(self.amp, self.amp.findData(amp), _problem(device=name, amp=amp))
        compiled = self.backend.currentData() != "eager"
        for widget in (self.fullgraph, self.dynamic, self.fallback):
            widget.setEnabled(compiled)
        needs_root = CATALOGUE[self.dataset.currentData()].needs_root
        self.data_root.setPlaceholderText("required for this dataset" if needs_root else
                                          "optional: an existing torchvision layout (offline)")

    def _browse_data_root(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Data folder", self.data_root.text())
        if folder:
            self.data_root.setText(folder)

    def _model_activated(self, index: int) -> None:
        if self.model.itemData(index) != OPEN_MODEL:
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open model file", "", "Python files (*.py)")
        if not path:
            _select(self.model, self._base.model if self.model.findData(self._base.model) >= 0 else BUILTIN_MODEL)
            return
        from PySide6.QtWidgets import QInputDialog

        name, ok = QInputDialog.getText(self, "Model class", "Name of the nn.Module class in the file:")
        if ok and name.strip():
            spec = f"{path}:{name.strip()}"
            self.model.insertItem(self.model.count() - 1, f"{path.rsplit('/', 1)[-1]}:{name.strip()}", spec)
            _select(self.model, spec)
        else:
            _select(self.model, BUILTIN_MODEL)


def _problem(**settings) -> str | None:
    """Why the core would refuse these settings on this machine, in the core's own words; None if it would not."""
    try:
        TrainConfig(**settings).check_runnable(devices.cuda_available())
    except ConfigError as exc:
        return str(exc)
    return None


def _enable_item(combo: QComboBox, index: int, problem: str | None) -> None:
    """Disable one entry with the reason as its tooltip; step off it if it was selected."""
    if index < 0:
        return
    item = combo.model().item(index)
    item.setEnabled(problem is None)
    combo.setItemData(index, problem or "", Qt.ToolTipRole)
    if problem and combo.currentIndex() == index:
        for other in range(combo.count()):
            if combo.model().item(other).isEnabled():
                combo.setCurrentIndex(other)
                break
