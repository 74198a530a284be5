"""What this machine can run, as plain data: the kernel measures it (it has torch), the window only reads it.

The window never imports torch, so it cannot ask CUDA how many devices there are or whether Inductor finds a C++
compiler. The kernel answers the `capabilities` request with a `Capabilities`; the setup form disables what cannot
run here and shows the kernel's reason. Until the kernel has answered, `Capabilities.unknown()` stands in: the CPU
only, nothing refused, and `known` False so that a front end can say it is still waiting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .codec import Record
from .config import BACKENDS, ConfigError, TrainConfig


@dataclass(frozen=True)
class DeviceInfo(Record):
    """One device a run can use: the setting's value ("cpu", "cuda:0"), a label, and what a user sizes a run by."""

    value: str
    label: str
    memory_mib: float | None = None  # total memory of a GPU; None on the CPU
    compute_capability: str | None = None  # "9.0" on an H100/H200


@dataclass(frozen=True)
class Capabilities(Record):
    known: bool = False  # False until the kernel has answered
    torch_version: str = ""
    cuda_version: str | None = None
    devices: tuple[DeviceInfo, ...] = (DeviceInfo("cpu", "CPU"),)
    # Why each backend cannot run, per device kind ("cpu", "cuda"); None where it can.
    backend_problems: dict[str, dict[str, str | None]] = field(default_factory=dict)

    @classmethod
    def unknown(cls) -> "Capabilities":
        return cls()

    @property
    def cuda_devices(self) -> int:
        return sum(1 for d in self.devices if d.value.startswith("cuda"))

    @property
    def cuda_available(self) -> bool:
        return self.cuda_devices > 0

    def device_kind(self, setting: str) -> str:
        """The kind of device a device setting ("auto", "cpu", "cuda", "cuda:N") trains on here."""
        return "cuda" if setting != "cpu" and self.cuda_available else "cpu"

    def device_label(self, setting: str = "auto") -> str:
        """What a device setting resolves to here, as a user reads it."""
        kind = self.device_kind(setting)
        wanted = setting if setting.startswith("cuda:") else ("cuda:0" if kind == "cuda" else "cpu")
        return next((d.label for d in self.devices if d.value == wanted), wanted)

    def device_choices(self) -> list[tuple[str, str]]:
        """(value, label) pairs for a device picker: auto, each CUDA device, the CPU."""
        gpus = [(d.value, f"{d.value} · {d.label}") for d in self.devices if d.value.startswith("cuda")]
        return [("auto", "Auto"), *gpus, ("cpu", "CPU")]

    def backend_problem(self, backend: str, device_setting: str = "auto") -> str | None:
        return self.backend_problems.get(self.device_kind(device_setting), {}).get(backend)

    def config_problem(self, config: TrainConfig) -> ConfigError | None:
        """Why `config` cannot run on this machine (the core's own words), or None."""
        try:
            config.check_runnable(self.cuda_available)
        except ConfigError as exc:
            return exc
        problem = self.backend_problem(config.backend, config.device)
        if problem:
            allowed = [b for b in BACKENDS if not self.backend_problem(b, config.device)]
            return ConfigError("backend", problem, ", ".join(allowed))
        return None
