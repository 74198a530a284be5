"""Frozen dataclasses as plain data and back, checked field by field: what crosses a process (a job's request, its
answer) is typed on both sides and never read by string key.

`Record` gives a frozen dataclass `to_dict()` and `from_dict()`. The fields' annotations say what each holds:
`int`, `float`, `str`, `bool`, `None`, unions of them, `tuple[X, ...]` (a JSON list), `dict[str, X]`, a plain `dict`
(any JSON object, kept as it is), another Record. `from_dict` refuses, with a ValueError that says
where, anything else: a missing field without a default, a field it does not know, a value of the wrong type (a
bool is not a number, though JSON would let it pass). So data from another process, version or machine is never
trusted half-way.

A Record whose plain form is a layout of its own (ground/results.py: a run's flat "metrics", kept as every version
wrote it; payback.py: derived figures beside the measured ones) or rules of its own (config.py: TrainConfig's
errors name the setting) overrides `to_dict` and `read`; the Records that hold it read it through its `read`.
Events, job requests and answers, run results, the settings, capabilities and payback: one codec."""

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
        return {name: _plain(getattr(self, name)) for name in _field_names(type(self))}

    @classmethod
    def from_dict(cls: type[R], data: Any) -> R:
        return cls.read(data, cls.__name__)

    @classmethod
    def read(cls: type[R], data: Any, where: str) -> R:
        """from_dict, its errors saying `where` (a field's path, when this Record is inside another)."""
        return _read(cls, data, where)


def _plain(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def _plan(cls: type) -> tuple[dict[str, tuple[Reader, bool]], frozenset[str]]:
    """How `cls` is read, worked out once per class: each field's reader and whether it must be given. (Reading a
    long run's events goes through here for every Step: the annotations are not looked at again.)"""
    hints = typing.get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        fields[f.name] = (_reader(hints[f.name]), required)
    return fields, frozenset(fields)


def _read(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{where} is {type(data).__name__}, not an object")
    fields, names = _plan(cls)
    if not names.issuperset(data):
        unknown = sorted(set(data) - names)
        raise ValueError(f"{where} has fields this version does not know: {', '.join(unknown)}")
    values = {}
    for name, (reader, required) in fields.items():
        if name not in data:
            if required:
                raise ValueError(f"{where}.{name} is missing")
            continue
        values[name] = reader(data[name], where, name)
    return cls(**values)


Reader = typing.Callable[[Any, str, str], Any]  # (value, where, field) → the value as its declaration says


@functools.cache
def _reader(kind: Any) -> Reader:
    """The function that reads a value declared as `kind` (or raises a ValueError naming where it is)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    name = _name(kind)
    if origin in (Union, types.UnionType):
        options = [option for option in args if option is not _NONE]
        nullable = len(options) < len(args)
        if len(options) == 1:  # X | None, and not None: X's own reading says what is wrong with it
            inner = _reader(options[0])
            return lambda value, where, field: None if value is None and nullable else inner(value, where, field)
        readers = [_reader(option) for option in args]  # None first, then the plain kinds, then the rest

        def union(value: Any, where: str, field: str) -> Any:
            if value is None and nullable:
                return None
            for read in readers:
                try:
                    return read(value, where, field)
                except ValueError:
                    continue
            raise ValueError(f"{_at(where, field)} is {type(value).__name__} {value!r:.40}, not {name}")

        return union
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _reader(args[0])

            def many(value: Any, where: str, field: str) -> tuple:
                if not isinstance(value, (list, tuple)):
                    raise ValueError(f"{_at(where, field)} is {type(value).__name__}, not a list")
                return tuple(item(v, f"{_at(where, field)}", f"[{i}]") for i, v in enumerate(value))

            return many
        items = [_reader(a) for a in args]

        def fixed(value: Any, where: str, field: str) -> tuple:
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"{_at(where, field)} is {type(value).__name__}, not a list")
            if len(items) != len(value):
                raise ValueError(f"{_at(where, field)} has {len(value)} items, not {len(items)}")
            return tuple(read(v, f"{_at(where, field)}", f"[{i}]") for i, (read, v) in enumerate(zip(items, value)))

        return fixed
    if origin is dict:
        item = _reader(args[1])

        def mapping(value: Any, where: str, field: str) -> dict:
            if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
                raise ValueError(f"{_at(where, field)} is {type(value).__name__}, not an object")
            return {key: item(v, f"{_at(where, field)}", key) for key, v in value.items()}

        return mapping
    if kind is Any:
        return lambda value, where, field: value
    if kind is _NONE or kind is None:
        def null(value: Any, where: str, field: str) -> None:
            if value is not None:
                raise ValueError(f"{_at(where, field)} is {type(value).__name__}, not null")

        return null
    if kind is bool:
        def switch(value: Any, where: str, field: str) -> bool:
            if value is not True and value is not False:
                raise ValueError(f"{_at(where, field)} is {type(value).__name__} {value!r:.40}, not a bool")
            return value

        return switch
    if kind in (int, float):
        accepted = (int,) if kind is int else (int, float)

        def number(value: Any, where: str, field: str) -> int | float:
            if value.__class__ is kind:  # the common case, at once
                return value
            if isinstance(value, bool) or not isinstance(value, accepted):
                raise ValueError(f"{_at(where, field)} is {type(value).__name__} {value!r:.40}, not {kind.__name__}")
            return kind(value)

        return number
    if kind is str:
        def text(value: Any, where: str, field: str) -> str:
            if value.__class__ is not str and not isinstance(value, str):
                raise ValueError(f"{_at(where, field)} is {type(value).__name__} {value!r:.40}, not text")
            return value

        return text
    if kind is dict:
        def plain(value: Any, where: str, field: str) -> dict:
            if not isinstance(value, dict):
                raise ValueError(f"{_at(where, field)} is {type(value).__name__}, not an object")
            return value

        return plain
    if isinstance(kind, type) and issubclass(kind, Record):
        return lambda value, where, field: kind.read(value, f"{_at(where, field)}")
    raise TypeError(f"a Record field cannot be declared as {name}")


def _at(where: str, field: str) -> str:
    """Where a value is, as an error says it: `Run.steps`, `Run.losses[3]`."""
    return where + field if field.startswith("[") else f"{where}.{field}"


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind)
