"""One query language for the run history: the Runs dock's search box and `workbench runs --where` read the same
text the same way.

    backend=inductor acc>0.95 tag:baseline lr<=1e-3 status!=failed "some words"

Terms are separated by spaces and must all hold. A term is
- `FIELD OP VALUE`, OP one of = != > >= < <= ~ (~: contains, case-insensitive); `FIELD:VALUE` is `FIELD=VALUE`;
- `tag:NAME`: the run has that tag (case-insensitive);
- a bare word or a "quoted phrase": found in the run's name or notes (`#12` or `12` also finds run 12);
and a leading `-` negates any of them (`-tag:old`, `-backend=eager`).

Fields are every TrainConfig setting by its name and the run's own figures by short names (acc, sps, compile,
memory, steps, duration, id, status, host, name, notes, archived, created, backend_used). Numbers compare as numbers
(`lr<=1e-3`; an accuracy takes `0.95` or `95%`), text and choices case-insensitively, `created` by its date prefix
(`created>=2025-03` is March onwards, `created=2025-03-14` that day); `none` is the value of what a run does not have
(`max_steps=none`, `acc=none`). A query is read once into one test per term, so filtering thousands of runs as the
user types re-reads nothing.

A query that cannot be read is a QueryError that says what is wrong, in which term (and at which column, for the
search box to point at), and what to write instead.
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from ..ground.config import BACKENDS, settings
from ..ground.errors import WorkbenchError
from .runs import RunRecord

OPERATORS = ("!=", ">=", "<=", "=", ">", "<", "~")  # longest first: ">=" is not ">" followed by "="
STATUSES = ("running", "finished", "stopped", "failed", "interrupted", "damaged")
NONE = "none"  # the value of what a run does not have

NUMBER, TEXT, SWITCH, DATE = "number", "text", "switch", "date"
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_AUTOMATIC = (NONE, "null", "auto", "automatic")  # an optional switch's third value (dynamic shapes: automatic)
_DATE_PREFIX = re.compile(r"\d{4}(-\d{2}(-\d{2}(T\d{2}(:\d{2}(:\d{2})?)?)?)?)?")
_FIELD_TERM = re.compile(r"([A-Za-z_]\w*)(!=|>=|<=|=|>|<|~)(.*)", re.DOTALL)
_COLON_TERM = re.compile(r"([A-Za-z_]\w*):(.*)", re.DOTALL)
_LEADING_OPERATOR = re.compile(r"(!=|>=|<=|=|>|<|~)")
_RUN_ID = re.compile(r"#?(\d{1,19})")  # no longer: no run id (SQLite's are 64-bit) has more digits
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
# Named in an error's hint (with the nearest fields to what was typed): the ones people filter by most.
_FEATURED = ("backend", "amp", "lr", "batch_size", "seed", "acc", "sps", "compile", "memory", "status", "created")


class QueryError(WorkbenchError):
    """A query that cannot be read. `term` is the term as typed and `position` its 0-based offset in the query, so
    the search box can select it."""

    def __init__(self, message: str, hint: str = "", *, term: str = "", position: int = 0):
        super().__init__(message, hint)
        self.term = term
        self.position = position


@dataclass(frozen=True)
class _Field:
    """A field a term can name: how to read it from a run, and what its values are."""

    name: str
    kind: str  # NUMBER | TEXT | SWITCH | DATE
    read: Callable[[RunRecord], Any]
    choices: tuple[str, ...] = ()  # the only values it takes (a wrong one is refused, with the nearest)
    optional: bool = False  # `none` is one of its values
    fraction: bool = False  # 0..1, shown as a percentage: `95%` reads as 0.95


def _config_fields() -> list[tuple[tuple[str, ...], _Field]]:
    kinds = {bool: SWITCH, int: NUMBER, float: NUMBER, str: TEXT}
    return [((s.name,), _Field(s.name, kinds[s.kind], lambda r, key=s.name: r.config.get(key),
                               tuple(str(c) for c in s.choices), optional=s.optional)) for s in settings()]


def _record_fields() -> list[tuple[tuple[str, ...], _Field]]:
    def column(name: str, kind: str, **meta) -> _Field:
        return _Field(name, kind, operator.attrgetter(name), **meta)

    return [
        (("acc", "accuracy", "best_val_accuracy"), column("best_val_accuracy", NUMBER, optional=True, fraction=True)),
        (("sps", "samples_per_s"), column("samples_per_s", NUMBER, optional=True)),
        (("compile", "compile_seconds"), column("compile_seconds", NUMBER, optional=True)),
        (("memory", "peak_memory_mib"), column("peak_memory_mib", NUMBER, optional=True)),
        (("steps",), column("steps", NUMBER)),
        (("duration",), _Field("duration", NUMBER, operator.attrgetter("duration_s"), optional=True)),
        (("id",), column("id", NUMBER)),
        (("status",), column("status", TEXT, choices=STATUSES)),
        (("host",), column("host", TEXT, optional=True)),
        (("name",), column("name", TEXT, optional=True)),
        (("notes",), column("notes", TEXT, optional=True)),
        (("archived",), column("archived", SWITCH)),
        (("created",), column("created", DATE)),
        (("backend_used",), column("backend_used", TEXT, choices=BACKENDS, optional=True)),
    ]


_BY_NAME: dict[str, _Field] = {alias: f for aliases, f in _config_fields() + _record_fields() for alias in aliases}
FIELDS: tuple[str, ...] = tuple(sorted(_BY_NAME))  # every name a term may use, aliases too


@dataclass(frozen=True)
class Term:
    """One term as typed, and its test of a run (negation included)."""

    raw: str
    position: int
    test: Callable[[RunRecord], bool] = field(compare=False, repr=False)


@dataclass(frozen=True)
class Query:
    """A parsed query: every term must hold. The empty query matches every run."""

    text: str = ""
    terms: tuple[Term, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, record: RunRecord) -> bool:
        for term in self.terms:  # a loop, not all(…): no generator per run, as the box filters on each key
            if not term.test(record):
                return False
        return True


def parse_query(text: str) -> Query:
    """The query `text` as tests of a run; QueryError for a term it cannot read."""
    return Query(text, tuple(_term(raw, position, index) for index, (raw, position) in enumerate(_split(text), 1)))


def completions(prefix: str, records: Iterable[RunRecord] = ()) -> list[str]:
    """What the term being typed (`prefix`: the last word of the box) may become: field names, `tag:` and the tags
    the `records` carry, and after `FIELD=` the values of a field with a fixed set (choices, status, switches)."""
    sign, body = ("-", prefix[1:]) if prefix.startswith("-") else ("", prefix)
    lowered = body.lower()
    if (match := _FIELD_TERM.fullmatch(body)) and match.group(1).lower() in _BY_NAME:
        name, op, typed = match.groups()
        found = [f"{name}{op}{value}" for value in _values(_BY_NAME[name.lower()])
                 if value.lower().startswith(typed.lower())]
    else:
        tags: dict[str, str] = {}  # one spelling per tag, as tags match without case: the first met
        for record in records:
            for tag in record.tags:
                tags.setdefault(tag.lower(), f"tag:{tag}")
        found = [name for name in (*FIELDS, "tag:", *sorted(tags.values(), key=str.lower))
                 if name.lower().startswith(lowered)]
    return [sign + item for item in found]


def _values(f: _Field) -> tuple[str, ...]:
    if f.kind == SWITCH:
        return ("true", "false", NONE) if f.optional else ("true", "false")
    return f.choices


# -- reading the text ---------------------------------------------------------------------------------------------
def _split(text: str) -> list[tuple[str, int]]:
    """The terms as typed (quotes kept) with their offsets: spaces separate terms except inside double quotes."""
    terms: list[tuple[str, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start, quoted = i, False
        while i < n and (quoted or not text[i].isspace()):
            quoted ^= text[i] == '"'
            i += 1
        if quoted:
            raise QueryError(f"a quote is not closed in term {len(terms) + 1} '{text[start:i]}' at column "
                             f"{start + 1} — close it with \"", _HINT, term=text[start:i], position=start)
        terms.append((text[start:i], start))
    return terms


def _term(raw: str, position: int, index: int) -> Term:
    def error(problem: str, todo: str = "", near: str = "") -> QueryError:
        where = f"{problem} in term {index} '{_clip(raw)}' at column {position + 1}"
        return QueryError(where + (f" — {todo}" if todo else ""), _hint(near), term=raw, position=position)

    negate = raw.startswith("-")
    body = raw[1:] if negate else raw
    test = _test(body, error)
    return Term(raw, position, (lambda r: not test(r)) if negate else test)


def _test(body: str, error) -> Callable[[RunRecord], bool]:
    if not body:
        raise error("nothing after '-'", "write the term to leave out, e.g. -tag:old or -backend=eager")
    if body.startswith('"'):
        return _words(_unquote(body), error)
    if body.lower().startswith("tag:"):
        tag = _unquote(body[4:]).lower()
        if not tag:
            raise error("no tag after 'tag:'", "write the tag, e.g. tag:baseline")
        return lambda r: any(t.lower() == tag for t in r.tags)
    if (leading := _LEADING_OPERATOR.match(body)) is not None:
        raise error(f"no field before '{leading.group(1)}'",
                    f"write a field first, e.g. acc{body}, or put it in quotes to search names and notes")
    if (match := _FIELD_TERM.fullmatch(body)) is not None:
        name, op, value = match.groups()
        known = _BY_NAME.get(name.lower())
        if known is None:
            close = difflib.get_close_matches(name.lower(), FIELDS, n=1)
            raise error(f"unknown field '{name}'", f"did you mean {close[0]}?" if close else
                        "put the term in quotes to search names and notes for it", near=name)
        return _field_test(replace(known, name=name.lower()), op, _unquote(value), error)
    if (match := _COLON_TERM.fullmatch(body)) is not None and match.group(1).lower() in _BY_NAME:
        name = match.group(1).lower()
        return _field_test(replace(_BY_NAME[name], name=name), "=", _unquote(match.group(2)), error)
    return _words(_unquote(body), error)


def _clip(text: str, most: int = 40) -> str:
    """A user's text as an error message quotes it: a term of thousands of characters is not worth repeating."""
    return text if len(text) <= most else text[:most - 1] + "…"


def _unquote(text: str) -> str:
    return text.replace('"', "")


def _words(words: str, error) -> Callable[[RunRecord], bool]:
    """Text found in the run's name or notes; a run's number (`#12`, `12`) also finds that run."""
    needle = words.lower()
    if not needle:
        raise error("empty quotes", "write the words to find between them")
    run_id = int(found.group(1)) if (found := _RUN_ID.fullmatch(needle)) else None
    return lambda r: r.id == run_id or needle in r.name.lower() or needle in r.notes.lower()


def _field_test(f: _Field, op: str, value: str, error) -> Callable[[RunRecord], bool]:
    """The test of one `FIELD OP VALUE` term; `f` is named as the term names it (`acc`, not best_val_accuracy)."""
    read = f.read
    if not value:
        raise error(f"no value after '{op}'", f"write one, e.g. {_example(f, op)}")
    wanted = value.lower()
    if wanted in (NONE, "null") and f.optional:
        if op not in ("=", "!="):
            raise error(f"'{op}' cannot compare with none", f"use {f.name}=none or {f.name}!=none")
        if f.kind == TEXT:
            return (lambda r: read(r) in (None, "")) if op == "=" else (lambda r: read(r) not in (None, ""))
        return (lambda r: read(r) is None) if op == "=" else (lambda r: read(r) is not None)
    if f.kind == NUMBER:
        return _number_test(f, op, value, error)
    if f.kind == SWITCH:
        return _switch_test(f, op, wanted, error)
    if f.kind == DATE:
        return _date_test(f, op, value, error)
    return _text_test(f, op, value, error)


def _number_test(f: _Field, op: str, value: str, error) -> Callable[[RunRecord], bool]:
    if op == "~":
        raise error(f"'~' finds text, and {f.name} is a number", f"compare it: {_example(f, '>=')}")
    percent = f.fraction and value.endswith("%")
    try:
        number = float(value[:-1] if percent else value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise error(f"'{_clip(value)}' is not a number", f"{f.name} is a number: {_example(f, op)}")
    if percent:
        number /= 100
    elif f.fraction and number > 1:
        raise error(f"{f.name} is a fraction from 0 to 1, not {value}",
                    f"write {f.name}{op}{number / 100:g} or {f.name}{op}{value}%")

    def read(r: RunRecord) -> float | None:
        got = f.read(r)
        return None if isinstance(got, bool) or not isinstance(got, (int, float)) else got

    if op in ("=", "!="):
        equal = op == "="
        return lambda r: ((got := read(r)) is not None and math.isclose(got, number, rel_tol=1e-9)) == equal
    compare = _COMPARE[op]
    return lambda r: (got := read(r)) is not None and compare(got, number)


def _switch_test(f: _Field, op: str, wanted: str, error) -> Callable[[RunRecord], bool]:
    if op not in ("=", "!="):
        raise error(f"'{op}' cannot compare a switch", f"use {f.name}=true or {f.name}=false")
    if wanted in _TRUE:
        state: bool | None = True
    elif wanted in _FALSE:
        state = False
    elif wanted in _AUTOMATIC and f.optional:
        state = None
    else:
        raise error(f"'{wanted}' is not a switch's value", "use " + " or ".join(f"{f.name}{op}{v}" for v in _values(f)))
    read, equal = f.read, op == "="
    return lambda r: ((got := read(r)) is state or (got == state and isinstance(got, bool))) == equal


def _date_test(f: _Field, op: str, value: str, error) -> Callable[[RunRecord], bool]:
    prefix = value.replace(" ", "T")
    if op == "~" or not _DATE_PREFIX.fullmatch(prefix):
        raise error(f"'{op}{value}' is not a date to compare with",
                    f"write the start of a date, e.g. {f.name}>=2025-03 or {f.name}=2025-03-14")
    read, width = f.read, len(prefix)
    if op in ("=", "!="):
        equal = op == "="
        return lambda r: (read(r)[:width] == prefix) == equal
    compare = _COMPARE[op]
    return lambda r: bool(created := read(r)) and compare(created[:width], prefix)


def _text_test(f: _Field, op: str, value: str, error) -> Callable[[RunRecord], bool]:
    if op in _COMPARE:
        raise error(f"'{op}' compares numbers and dates, and {f.name} is text", f"use =, != or ~ ({f.name}~…)")
    wanted = value.lower()
    if op != "~" and f.choices and wanted not in (c.lower() for c in f.choices):
        close = difflib.get_close_matches(wanted, f.choices, n=1, cutoff=0.5)
        raise error(f"unknown {f.name} '{value}'",
                    (f"did you mean {f.name}{op}{close[0]}? " if close else "")
                    + f"{f.name} is one of {', '.join(f.choices)}")
    read = f.read
    if op == "~":
        return lambda r: (got := read(r)) is not None and wanted in str(got).lower()
    equal = op == "="
    return lambda r: ((got := read(r)) is not None and str(got).lower() == wanted) == equal


def _example(f: _Field, op: str) -> str:
    if f.kind == NUMBER:
        return f"{f.name}{op}0.95" if f.fraction else f"{f.name}{op}{'1e-3' if f.name == 'lr' else '10'}"
    return f"{f.name}{op}{_values(f)[0] if _values(f) else 'text'}"


_HINT = ("a term is FIELD OP VALUE (OP: = != > >= < <= ~ for contains), tag:NAME, or words to find in names and "
         "notes; a leading - leaves matching runs out")


def _hint(near: str = "") -> str:
    """The grammar, and a few fields: the nearest to what was typed, then those people filter by most."""
    nearest = difflib.get_close_matches(near.lower(), FIELDS, n=4, cutoff=0.6) if near else []
    shown = list(dict.fromkeys([*nearest, *_FEATURED]))[:10]
    return f"{_HINT}. Fields include {', '.join(shown)}, … ({len(FIELDS)} in all)"
