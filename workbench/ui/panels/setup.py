"""Setup dock: every setting of a run, turned into one validated TrainConfig.

The form is built from TrainConfig's declarations (`settings()`): a combo box for a setting with choices, a spin
box with the declared range for a number (the learning rate's reads 1e-5 as typed: rate_box.py), a check box for a
switch. Settings the form does not show keep the value of the config it was given. What this machine cannot run is
disabled with the core's reason as tooltip (e.g. the cudagraphs backend without CUDA); anything else the core's
validation rejects is explained right under the field it is about (`problem_text` for Train's tooltip and the
status bar), and Train stays disabled. The window names a setting by its label there ("Learning rate: 0 must be
greater than 0"): `form_text` turns the core's errors, which name it as the CLI and config files do (lr), into the
form's words.

A wheel turned over a combo or spin box scrolls the panel unless that box has focus: scrolling the form never
changes a setting unnoticed.

*New run from this…* puts a run's settings into the form with `set_derived`: a note above the form says so ("Derived
from #12 (edited: Learning rate, Epochs)"), naming the settings changed since, until the form gets its settings
from anywhere else (`set_config`) or the note is cleared (`clear_derived`).

Torch-free: the window never imports torch. What the machine can do arrives as `Capabilities` from the kernel
(`set_capabilities`); until then `Capabilities.unknown()` stands in.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout,
                               QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea, QSpinBox,
                               QVBoxLayout, QWidget)

from ...core.ground.capabilities import Capabilities
from ...core.ground.config import (GROUPS, ConfigError, Setting, TrainConfig, label_of, local_data_problem,
                                   setting_named, settings)
from ...core.ground.datasets import CATALOGUE
from ...core.ground.errors import WorkbenchError
from ...core.run.run_request import Launch, LaunchError, check_launch
from ..support import file_dialogs
from ..support.form_errors import form_text
from ..support.wheel_guard import guard_wheels
from .rate_box import RateBox

BUILTIN_MODEL = "sandwich"
EXAMPLE_MODEL_LABEL = "Planted graph break (example)"
OPEN_MODEL = "__open__"
MAX_PROCESSES = 64  # the spin box's upper end, or the number of GPUs where there are more
SPIN_INT_MAX = 2**31 - 1  # a QSpinBox holds a C int: a wider range (the seed's) gets a double spin box, 0 decimals
# objectNames (tests, style sheets) are "<name in camelCase><Combo|Spin|Check|Edit>", with these shorter names
SHORT_NAMES = {"hidden_dim": "hidden", "batch_size": "batch", "allow_eager_fallback": "fallback"}
# Choices the machine may be unable to run: their items are disabled with the core's reason
MACHINE_CHECKED = ("backend", "mode", "amp")
COMPILE_ONLY = ("fullgraph", "dynamic", "allow_eager_fallback", "compile_trace")  # meaningless with the eager backend
RATES = ("lr",)  # numbers that span decades: typed and shown as 1e-05, stepped by factors (rate_box.py)


def example_model_spec() -> str:
    from ...core.ground.resources import resource_path

    return f"{resource_path('examples', 'planted_break.py')}:PlantedBreakNet"


def object_name(declared: Setting, suffix: str) -> str:
    """The widget's objectName for a setting: hidden_dim → hiddenSpin, data_root → dataRootEdit."""
    first, *rest = SHORT_NAMES.get(declared.name, declared.name).split("_")
    return first + "".join(word.capitalize() for word in rest) + suffix


def _combo(name: str, items: list[tuple[object, str]]) -> QComboBox:
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


def _spin(declared: Setting) -> QSpinBox | QDoubleSpinBox:
    """A spin box over exactly the declared range (the core's validation explains a value it refuses, such as one
    at the open end of its range)."""
    if declared.kind is int and declared.high <= SPIN_INT_MAX:
        spin = QSpinBox()
    else:
        spin = QDoubleSpinBox()
        spin.setDecimals(0 if declared.kind is int else declared.decimals if declared.decimals is not None else 4)
    spin.setObjectName(object_name(declared, "Spin"))
    spin.setRange(declared.low, declared.high)
    spin.setSingleStep(declared.step or 1)
    spin.setAccelerated(True)
    return spin


def _widget(declared: Setting) -> QWidget:
    """The generic editor of one declared setting (the model, device and data folder have their own)."""
    if declared.choices:
        return _combo(object_name(declared, "Combo"), [(v, declared.choice_label(v)) for v in declared.choices])
    if declared.kind is bool and declared.optional:
        return _combo(object_name(declared, "Combo"), [(v, declared.choice_label(v)) for v in (None, True, False)])
    if declared.kind is bool:
        check = QCheckBox(declared.label)
        check.setObjectName(object_name(declared, "Check"))
        return check
    if declared.name in RATES:
        rate = RateBox(declared.high)
        rate.setObjectName(object_name(declared, "Spin"))
        return rate
    if declared.kind in (int, float):
        return _spin(declared)
    edit = QLineEdit()
    edit.setObjectName(object_name(declared, "Edit"))
    return edit


class SetupPanel(QWidget):
    changed = Signal()  # any setting changed (the config may now be valid or invalid)
    processesChanged = Signal(int)  # > 1: data-parallel processes under torchrun
    finderRequested = Signal(str)  # a Find… button: "lr" beside the learning rate, "batch" beside the batch size

    def __init__(self, parent: QWidget | None = None, capabilities: Capabilities | None = None):
        super().__init__(parent)
        self._caps = capabilities or Capabilities.unknown()
        # The data folder is checked on this computer while the kernels are here; on a host, the host checks it.
        self.local_files = True
        self._base = TrainConfig()
        self._loading = False
        self.shown: tuple[Setting, ...] = tuple(s for s in settings() if s.form)
        self.fields: dict[str, QWidget] = {}  # setting name → its editor
        rows: dict[str, list[tuple[str | None, QWidget | QHBoxLayout]]] = {group: [] for group in GROUPS}
        for declared in self.shown:
            editor, row = self._editor(declared)
            editor.setToolTip(declared.help)
            editor.setAccessibleName(declared.label)  # a row's label names its container when a button shares it
            self.fields[declared.name] = editor
            if hasattr(self, declared.name):
                raise TypeError(f"SetupPanel already has an attribute named {declared.name!r}")
            setattr(self, declared.name, editor)  # self.lr, self.backend, …
            rows[declared.group].append((None if isinstance(editor, QCheckBox) else declared.label, row))
            self._connect(editor)

        self.problem = QLabel()
        self.problem.setObjectName("configProblem")
        self.problem.setTextFormat(Qt.PlainText)  # it quotes values and file names: never rendered as rich text
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #b00020;")
        self.problem.setTextInteractionFlags(Qt.TextSelectableByMouse)

        self.processes_spin = QSpinBox()
        self.processes_spin.setObjectName("processesSpin")
        self.processes_spin.setRange(1, max(MAX_PROCESSES, self._caps.cuda_devices))
        self.processes_spin.setToolTip("1: one training process. More: that many data-parallel processes started "
                                       "by torchrun (DDP: gloo on the CPU, one GPU each with nccl); the batch size "
                                       "is the global batch, split between them")
        self.processes_spin.valueChanged.connect(self._processes_changed)

        self.derived_note = QLabel()
        self.derived_note.setObjectName("derivedNote")
        self.derived_note.setTextFormat(Qt.PlainText)  # a run's name is the user's text: never rich text
        self.derived_note.setWordWrap(True)
        self.derived_note.setStyleSheet("font-style: italic;")
        self.derived_note.hide()
        self._derived: tuple[TrainConfig, str] | None = None  # (the run's settings, its label) the form derives from

        self._layout = QVBoxLayout(self)
        self._layout.addWidget(self.derived_note)
        for group in GROUPS:
            if rows[group]:
                self._layout.addWidget(_group(group, rows[group]))
        self._layout.addWidget(_group("Process", [("Processes", self.processes_spin)]))
        self._layout.addWidget(self.problem)
        self._layout.addStretch(1)
        self._problem_field: QWidget | None = None  # the field the problem label sits under; None: under the form
        guard_wheels(self)
        self.set_config(self._base)

    def _editor(self, declared: Setting) -> tuple[QWidget, QWidget | QHBoxLayout]:
        """(the widget that holds the value, what goes into the form's row)."""
        if declared.name == "model":
            model = _combo(object_name(declared, "Combo"), [(BUILTIN_MODEL, "Sandwich network (built in)"),
                                                            (example_model_spec(), EXAMPLE_MODEL_LABEL),
                                                            (OPEN_MODEL, "Open model file…")])
            model.activated.connect(self._model_activated)
            return model, model
        if declared.name == "device":
            device = _combo(object_name(declared, "Combo"), self._caps.device_choices())
            return device, device
        editor = _widget(declared)
        if declared.name == "data_root":
            return editor, _with_button(editor, "…", "Choose the data folder", self._browse_data_root,
                                        spoken="Choose the data folder")
        if declared.name == "lr":
            return editor, _with_button(editor, "Find…", "The learning-rate range test: a short run that suggests "
                                        "a learning rate (Ctrl+L)", lambda: self.finderRequested.emit("lr"),
                                        "findLrButton", spoken="Find a learning rate")
        if declared.name == "batch_size":
            return editor, _with_button(editor, "Find…", "Samples/s for each batch size, and on CUDA the largest "
                                        "that fits (Ctrl+B)", lambda: self.finderRequested.emit("batch"),
                                        "findBatchButton", spoken="Find a batch size")
        return editor, editor

    def _connect(self, editor: QWidget) -> None:
        if isinstance(editor, QComboBox):
            editor.currentIndexChanged.connect(self._on_change)
        elif isinstance(editor, QCheckBox):
            editor.toggled.connect(self._on_change)
        elif isinstance(editor, QLineEdit):
            editor.textChanged.connect(self._on_change)
        else:
            editor.valueChanged.connect(self._on_change)

    # -- what this machine can run --------------------------------------------------------------------------------
    def set_capabilities(self, caps: Capabilities) -> None:
        """What the kernel measured: the devices to offer, and what to disable (with its reason)."""
        self._caps = caps
        self.processes_spin.setMaximum(max(MAX_PROCESSES, caps.cuda_devices))
        self._fill_devices(self.fields["device"].currentData() or self._base.device)
        self._on_change()

    def capabilities(self) -> Capabilities:
        return self._caps

    def _fill_devices(self, wanted: str) -> None:
        """The machine's devices; a wanted device it does not have (saved settings from another machine, or not
        yet measured) stays listed and selected, so that the form says why it cannot run instead of silently
        training elsewhere."""
        combo: QComboBox = self.fields["device"]
        combo.blockSignals(True)
        try:
            combo.clear()
            for value, label in self._caps.device_choices():
                combo.addItem(label, value)
            if combo.findData(wanted) < 0:
                combo.addItem(f"{wanted} (not found here)" if self._caps.known else wanted, wanted)
            _select(combo, wanted)
        finally:
            combo.blockSignals(False)

    # -- config in and out --------------------------------------------------------------------------------------
    def set_config(self, config: TrainConfig) -> None:
        """The form shows `config`; it no longer derives from a run (set_derived)."""
        self._load(config, None)

    def set_derived(self, config: TrainConfig, label: str) -> None:
        """A run's settings into the form (as set_config), which says above it that it derives from `label` ("#12")
        and which settings have been edited since."""
        self._load(config, label)

    def clear_derived(self) -> None:
        """The form keeps its settings but no longer says where they came from."""
        self._derived = None
        self._show_derived()

    @property
    def derived_from(self) -> str | None:
        """The label of the run the form derives from; None when it does not."""
        return self._derived[1] if self._derived is not None else None

    def edited_settings(self) -> list[str]:
        """The form's settings that differ from the run's it derives from, in the form's order ([] when it does
        not derive from one)."""
        if self._derived is None:
            return []
        origin = self._derived[0]
        return [declared.name for declared in self.shown if self._read(declared) != getattr(origin, declared.name)]

    def _show_derived(self) -> None:
        if self._derived is None:
            self.derived_note.setText("")
            self.derived_note.hide()
            return
        edited = ", ".join(label_of(name) for name in self.edited_settings())
        text = f"Derived from {self._derived[1]}" + (f" (edited: {edited})" if edited else "")
        self.derived_note.setText(text)
        self.derived_note.setAccessibleName(text)
        self.derived_note.show()

    def _load(self, config: TrainConfig, derived_from: str | None) -> None:
        self._derived = (config, derived_from) if derived_from is not None else None
        self._loading = True
        try:
            for declared in self.shown:
                self._write(declared, getattr(config, declared.name))
        finally:
            self._loading = False
        self._base = config  # keeps the settings the form does not show (dropout, weight decay, schedule, …)
        self._on_change()

    def config(self) -> TrainConfig:
        """The current settings as a TrainConfig; raises a WorkbenchError (ConfigError names the field) when
        they cannot run here, the number of processes included."""
        values = {declared.name: self._read(declared) for declared in self.shown}
        if values["backend"] != "inductor":
            values["mode"] = "default"  # the mode box is disabled then, whatever it shows
        config = self._base.replace(**values)
        problem = self._caps.config_problem(config) or (local_data_problem(config) if self.local_files else None)
        if problem is not None:
            raise problem
        devices = [value for value, _ in self._caps.device_choices()]
        if self._caps.known and config.device not in (*devices, "cuda"):  # cuda:3 on a machine with two
            raise ConfigError("device", f"'{config.device}' is not a device of this machine", ", ".join(devices))
        if self.processes() > 1:
            check_launch(Launch(nproc_per_node=self.processes()), config.batch_size, config.device,
                         self._caps.cuda_devices)
        return config

    def value(self, name: str):
        """What the form shows for one setting, valid or not (the Dataset preview reads the dataset choice)."""
        return self._read(setting_named(name))

    def set_value(self, name: str, value) -> None:
        """One setting, as if the user had chosen it (a fix offered elsewhere: the What-if's dynamic shapes)."""
        self._write(setting_named(name), value)

    def valid_config(self) -> TrainConfig | None:
        try:
            return self.config()
        except WorkbenchError:
            return None

    def processes(self) -> int:
        """How many data-parallel processes a run starts (1: a single process)."""
        return self.processes_spin.value()

    def set_processes(self, count: int) -> None:
        self.processes_spin.setValue(count)

    def _write(self, declared: Setting, value) -> None:
        editor = self.fields[declared.name]
        if declared.name == "model" and editor.findData(value) < 0:
            editor.insertItem(editor.count() - 1, value.rsplit("/", 1)[-1], value)
        if declared.name == "device":
            self._fill_devices(value)
        elif isinstance(editor, QComboBox):
            _select(editor, value)
        elif isinstance(editor, QCheckBox):
            editor.setChecked(value)
        elif isinstance(editor, QLineEdit):
            editor.setText(value or "")
        else:
            editor.setValue(value)

    def _read(self, declared: Setting):
        editor = self.fields[declared.name]
        if declared.name == "model":
            return editor.currentData() if editor.currentData() != OPEN_MODEL else BUILTIN_MODEL
        if isinstance(editor, QComboBox):
            return editor.currentData()
        if isinstance(editor, QCheckBox):
            return editor.isChecked()
        if isinstance(editor, QLineEdit):
            text = editor.text().strip()
            return text or None if declared.optional else text
        if isinstance(editor, RateBox):
            return editor.value()  # a number as typed, or text that TrainConfig refuses as none
        if declared.kind is int:
            return int(editor.value())
        return round(editor.value(), 8)

    # -- keeping the form honest --------------------------------------------------------------------------------
    def _processes_changed(self, count: int) -> None:
        self._on_change()
        self.processesChanged.emit(count)

    def _on_change(self, *_args) -> None:
        if self._loading:
            return
        self._update_availability()
        self._show_derived()
        try:
            self.config()
            self.problem.setText("")
            self.problem.hide()
        except WorkbenchError as exc:
            self._place_problem(self._field_of(exc))
            self.problem.setText(f"⚠ {form_text(exc)}")
            self.problem.show()
        self.changed.emit()

    def problem_text(self) -> str:
        """Why the settings cannot run ("" when they can): for Train's tooltip and the status bar."""
        return self.problem.text().removeprefix("⚠ ")

    def focus_problem(self) -> None:
        """Scroll the field the problem is about (or the problem itself) into view and give that field focus."""
        if self.problem.text():
            self._bring_into_view(self.problem, self._problem_field)

    def show_setting(self, name: str) -> bool:
        """Scroll a setting's field into view and give it focus (Qt gives none to the form a run keeps disabled:
        the field is shown): an alert's fix. False when the form does not show that setting."""
        field = self.fields.get(name)
        if field is not None:
            self._bring_into_view(field)
        return field is not None

    def _bring_into_view(self, *widgets: QWidget | None) -> None:
        """Scroll each of `widgets` into view in turn (the last wins where they do not fit together), and give the
        last the focus."""
        area = self._scroll_area()
        for widget in widgets:
            if area is not None and widget is not None:
                area.ensureWidgetVisible(widget)
        if widgets[-1] is not None:
            widgets[-1].setFocus(Qt.OtherFocusReason)

    def _scroll_area(self) -> QScrollArea | None:
        parent = self.parentWidget()
        while parent is not None and not isinstance(parent, QScrollArea):
            parent = parent.parentWidget()
        return parent

    def _field_of(self, exc: WorkbenchError) -> QWidget | None:
        """The editor a problem is about: the field a ConfigError names, the process count for a launch problem."""
        if isinstance(exc, LaunchError):
            return self.processes_spin
        return self.fields.get(getattr(exc, "field", None))

    def _place_problem(self, field: QWidget | None) -> None:
        """Move the one problem label into the row right under `field`, where the user is looking (under the
        whole form for a problem with no field of its own)."""
        if field is self._problem_field:
            return
        holder = self.problem.parentWidget().layout()
        if isinstance(holder, QFormLayout):
            holder.takeRow(self.problem)
        else:
            holder.removeWidget(self.problem)
        if field is None:
            self._layout.insertWidget(self._layout.count() - 1, self.problem)  # above the stretch
        else:
            form: QFormLayout = field.parentWidget().layout()
            form.insertRow(_row_of(form, field) + 1, self.problem)
        self._problem_field = field

    def _update_availability(self) -> None:
        """The core decides what this machine can run; the form only disables it and shows the core's reason."""
        device = self.fields["device"].currentData() or "auto"
        for name in MACHINE_CHECKED:
            combo: QComboBox = self.fields[name]
            for index in range(combo.count()):
                settings_ = {"device": device, name: combo.itemData(index)}
                if name == "mode":
                    settings_["backend"] = "inductor"
                # Until the kernel has answered, nothing is taken away from the user's choice: it is only marked.
                _enable_item(combo, index, self._problem(name, **settings_), step_off=self._caps.known)
        inductor = self.fields["backend"].currentData() == "inductor"
        mode = self.fields["mode"]
        mode.setEnabled(inductor)
        mode.setToolTip(setting_named("mode").help if inductor else "Modes apply to the inductor backend only")
        compiled = self.fields["backend"].currentData() != "eager"
        for name in COMPILE_ONLY:
            self.fields[name].setEnabled(compiled)
        info = CATALOGUE.get(self.fields["dataset"].currentData())
        self.fields["data_root"].setPlaceholderText(
            "required for this dataset" if info is not None and info.needs_root else
            "optional: an existing torchvision layout (offline)")

    def _problem(self, field: str, **values) -> str | None:
        """Why the core would refuse `field`'s value on this machine, in the core's own words (the setting called by
        its label); None if it would not (a problem with another setting is that setting's to show)."""
        try:
            problem = self._caps.config_problem(TrainConfig(**values))
        except ConfigError as exc:
            problem = exc
        return form_text(problem) if problem is not None and problem.field == field else None

    def _browse_data_root(self) -> None:
        edit: QLineEdit = self.fields["data_root"]
        folder = file_dialogs.choose_folder(self, "data", "Data folder", edit.text())
        if folder:
            edit.setText(folder)

    def _model_activated(self, index: int) -> None:
        model: QComboBox = self.fields["model"]
        if model.itemData(index) != OPEN_MODEL:
            return
        path = file_dialogs.open_file(self, "model", "Open model file", "Python files (*.py)")
        if not path:
            _select(model, self._base.model if model.findData(self._base.model) >= 0 else BUILTIN_MODEL)
            return
        from PySide6.QtWidgets import QInputDialog

        name, ok = QInputDialog.getText(self, "Model class", "Name of the nn.Module class in the file:")
        if ok and name.strip():
            spec = f"{path}:{name.strip()}"
            model.insertItem(model.count() - 1, f"{path.rsplit('/', 1)[-1]}:{name.strip()}", spec)
            _select(model, spec)
        else:
            _select(model, BUILTIN_MODEL)


def _with_button(editor: QWidget, text: str, tip: str, slot, name: str = "", *, spoken: str) -> QHBoxLayout:
    """A form row: the editor, and a button beside it that acts on it; `spoken`: the button's name for a screen
    reader (its text, "Find…" or "…", says what it does only beside its field)."""
    button = QPushButton(text)
    button.setToolTip(tip)
    button.setAccessibleName(spoken)
    button.setObjectName(name)
    button.clicked.connect(slot)
    row = QHBoxLayout()
    row.addWidget(editor)
    row.addWidget(button)
    return row


def _group(title: str, rows: list[tuple[str | None, QWidget | QHBoxLayout]]) -> QGroupBox:
    """A titled form; a row without a label spans the width (check boxes). A long label goes above its field when the
    dock is too narrow for both side by side ("Recompile storm (per 100 steps)"), so the form stays as narrow as its
    widest label or field, never their sum: the dock never has to slide sideways."""
    box = QGroupBox(title)
    form = QFormLayout(box)
    form.setRowWrapPolicy(QFormLayout.WrapLongRows)
    for label, field in rows:
        if label is None:
            form.addRow(field)
        else:
            form.addRow(label, field)
    return box


def _row_of(form: QFormLayout, field: QWidget) -> int:
    """The form row holding `field`, on its own or inside the row's layout (the data folder and its button)."""
    for row in range(form.rowCount()):
        for role in (QFormLayout.FieldRole, QFormLayout.SpanningRole):
            item = form.itemAt(row, role)
            if item is not None and (item.widget() is field or item.layout() is not None
                                     and item.layout().indexOf(field) >= 0):
                return row
    raise LookupError(f"{field.objectName()} is not in this form")


def _enable_item(combo: QComboBox, index: int, problem: str | None, step_off: bool = True) -> None:
    """Disable one entry with the reason as its tooltip; step off it if it was selected (`step_off`)."""
    if index < 0:
        return
    item = combo.model().item(index)
    item.setEnabled(problem is None)
    combo.setItemData(index, problem or "", Qt.ToolTipRole)
    if step_off and problem and combo.currentIndex() == index:
        for other in range(combo.count()):
            if combo.model().item(other).isEnabled():
                combo.setCurrentIndex(other)
                break
