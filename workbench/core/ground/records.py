"""Frozen dataclasses as plain data and back, checked field by field: what crosses a process (a job's request, its
answer) is typed on both sides and never read by string key.

`Record` gives a frozen dataclass `to_dict()` and `from_dict()`. The fields' annotations say what each holds:
`int`, `float`, `str`, `bool`, `None`, unions of them, `tuple[X, ...]` (a JSON list), `dict[str, X]`, a plain `dict`
(any JSON object, kept as it is), another Record, a TrainConfig. `from_dict` refuses, with a ValueError that says
where, anything else: a missing field without a default, a field it does not know, a value of the wrong type (a
bool is not a number, though JSON would let it pass). So data from another process, version or machine is never
trusted half-way.

A Record whose plain form is a layout of its own (ground/results.py: a run's flat "metrics", kept as every version
wrote it) overrides `to_dict` and `read`; the Records that hold it read it through its `read`."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar, Union

R = TypeVar("R", bound="Record")
_NONE = type(None)


class Record:
    """Mixed into frozen dataclasses: `to_dict()` / `from_dict()` as described in the module's docstring."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[R], data: Any) -> R:
        return cls.read(data, cls.__name__)

    @classmethod
    def read(cls: type[R], data: Any, where: str) -> R:
        """from_dict, its errors saying `where` (a field's path, when this Record is inside another)."""
        return _read(cls, data, where)


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if hasattr(value, "to_dict") and dataclasses.is_dataclass(value):  # TrainConfig and its kin
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _read(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{where} is {type(data).__name__}, not an object")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where} has fields this version does not know: {', '.join(unknown)}")
    hints = _hints(cls)
    values = {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where}.{name} is missing")
            continue
        values[name] = _value(hints[name], data[name], f"{where}.{name}")
    return cls(**values)


def _value(kind: Any, value: Any, where: str) -> Any:
    """`value` as the annotation `kind` declares it, or a ValueError naming `where`."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (Union, types.UnionType):
        options = [option for option in args if option is not _NONE]
        if value is None and len(options) < len(args):
            return None
        if len(options) == 1:  # X | None, and not None: X's own reading says what is wrong with it
            return _value(options[0], value, where)
        for option in args:  # the first option that reads it: None, then the plain kinds, then the rest
            try:
                return _value(option, value, where)
            except ValueError:
                continue
        raise ValueError(f"{where} is {type(value).__name__} {value!r:.40}, not {_name(kind)}")
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{where} is {type(value).__name__}, not a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], item, f"{where}[{i}]") for i, item in enumerate(value))
        if len(args) != len(value):
            raise ValueError(f"{where} has {len(value)} items, not {len(args)}")
        return tuple(_value(a, item, f"{where}[{i}]") for i, (a, item) in enumerate(zip(args, value)))
    if origin is dict:
        if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
            raise ValueError(f"{where} is {type(value).__name__}, not an object")
        return {key: _value(args[1], item, f"{where}.{key}") for key, item in value.items()}
    if kind is Any:
        return value
    if kind is _NONE or kind is None:
        if value is not None:
            raise ValueError(f"{where} is {type(value).__name__}, not null")
        return None
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where} is {type(value).__name__} {value!r:.40}, not a bool")
        return value
    if kind in (int, float):
        accepted = (int,) if kind is int else (int, float)
        if isinstance(value, bool) or not isinstance(value, accepted):
            raise ValueError(f"{where} is {type(value).__name__} {value!r:.40}, not {kind.__name__}")
        return kind(value)
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(f"{where} is {type(value).__name__} {value!r:.40}, not text")
        return value
    if kind is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{where} is {type(value).__name__}, not an object")
        return value
    if isinstance(kind, type) and issubclass(kind, Record):
        return kind.read(value, where)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind) and hasattr(kind, "from_dict"):
        if not isinstance(value, dict):
            raise ValueError(f"{where} is {type(value).__name__}, not an object")
        try:
            return kind.from_dict(value)  # TrainConfig: checked by its own rules
        except Exception as exc:  # noqa: BLE001 - its own error, said where
            raise ValueError(f"{where}: {exc}") from None
    raise TypeError(f"{where}: a Record field cannot be declared as {_name(kind)}")


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind)
