"""The run history's query language (the Runs dock's search box, `workbench runs --where`): every operator, negation,
phrases, tags, aliases, what a malformed query says, and the search box's completions."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.errors import WorkbenchError
from workbench.core.history.query import FIELDS, QueryError, completions, parse_query
from workbench.core.history.runs import RunRecord


def _record(run_id: int, *, status: str = "finished", created: str = "2025-03-14T10:00:00+00:00",
            best: float | None = 0.9, rate: float | None = 1000.0, compile_s: float | None = 0.0,
            memory: float | None = 300.0, steps: int = 100, name: str = "", notes: str = "",
            tags: tuple[str, ...] = (), archived: bool = False, host: str = "lab", **settings) -> RunRecord:
    return RunRecord(id=run_id, created=created, status=status, config=TrainConfig(**settings).to_dict(),
                     environment={}, steps=steps, best_val_accuracy=best, samples_per_s=rate,
                     compile_seconds=compile_s, peak_memory_mib=memory, backend_used=settings.get("backend", "eager"),
                     failure=None, out_dir=None, checkpoint=None, host=host,
                     updated=(datetime.fromisoformat(created) + timedelta(seconds=100)).isoformat(),
                     name=name, notes=notes, tags=tags, archived=archived)


RUNS = [
    _record(1, lr=1e-3, best=0.91, rate=900.0, name="baseline", tags=("Baseline",), notes="first try"),
    _record(2, backend="inductor", amp="bf16", lr=4e-3, best=0.96, rate=2500.0, compile_s=12.5, tags=("fast",),
            notes="compiled, looks good\nsee #1"),
    _record(3, backend="inductor", mode="max-autotune", best=None, rate=None, status="failed", memory=None,
            created="2025-02-28T23:59:00+00:00", archived=True, fullgraph=True, notes="out of memory again"),
    _record(4, amp="fp16", lr=1e-2, max_steps=50, dynamic=False, best=0.5, steps=50, name="fp16 try", status="running",
            tags=("baseline", "amp"), host="gpu-box", created="2025-04-01T08:00:00+00:00"),
]


def ids(query: str) -> list[int]:
    parsed = parse_query(query)
    return [r.id for r in RUNS if parsed.matches(r)]


@pytest.mark.parametrize("query, expected", [
    ("backend=inductor", [2, 3]),
    ("backend!=inductor", [1, 4]),
    ("acc>0.91", [2]),
    ("acc>=0.91", [1, 2]),
    ("acc<0.91", [4]),  # a run without the figure (#3) is neither above nor below it
    ("acc<=0.91", [1, 4]),
    ("acc!=0.91", [2, 3, 4]),  # ... but it is not equal to it
    ("notes~LOOKS", [2]),
    ("lr<=1e-3", [1]),
    ("lr=0.004", [2, 3]),  # 4e-3 is the default
    ("batch_size=32 epochs>4", [1, 2, 3, 4]),
    ("steps<100", [4]),
    ("id>=3", [3, 4]),
    ("status=failed", [3]),
    ("status!=failed", [1, 2, 4]),
    ("status=RUNNING", [4]),
    ("host=GPU-BOX", [4]),
    ("mode~autotune", [3]),
])
def test_each_operator_compares_numbers_as_numbers_and_text_without_case(query, expected):
    assert ids(query) == expected


def test_every_term_must_hold():
    assert ids("backend=inductor acc>0.95") == [2]
    assert ids("backend=inductor acc>0.99") == []
    assert ids("") == [1, 2, 3, 4] and parse_query("  ").empty and not parse_query("acc>0").empty


def test_a_leading_minus_negates_any_term():
    assert ids("-backend=eager") == [2, 3]
    assert ids("-tag:baseline") == [2, 3]
    assert ids("-try") == [2, 3]
    assert ids('-"out of memory"') == [1, 2, 4]
    assert ids("-acc>0.9") == [3, 4]  # not (> 0.9): a run without the figure is among them


def test_bare_words_and_quoted_phrases_search_names_notes_and_the_run_number():
    assert ids("try") == [1, 4]  # "first try" in #1's notes, "fp16 try" as #4's name
    assert ids("TRY first") == [1]
    assert ids('"of memory"') == [3]
    assert ids('"memory of"') == []  # a phrase is found whole, not word by word
    assert ids("#3") == [3] and ids("4") == [4]
    assert ids('"#1"') == [1, 2]  # #2's notes mention #1
    assert ids('name="fp16 try"') == [4] and ids('notes~"looks good"') == [2]


def test_tags_match_whole_and_without_case():
    assert ids("tag:baseline") == [1, 4]
    assert ids("TAG:Amp") == [4]
    assert ids("tag:base") == []
    assert ids("tag:baseline tag:amp") == [4]


@pytest.mark.parametrize("alias", ["acc", "accuracy", "best_val_accuracy"])
def test_accuracy_has_its_aliases_and_takes_a_percentage(alias):
    assert ids(f"{alias}>0.9") == ids(f"{alias}>90%") == [1, 2]
    assert ids(f"{alias}<=1") == ids(f"{alias}<=100%") == [1, 2, 4]  # 1 is a fraction: all of it


def test_the_figures_short_names_and_the_date_prefix():
    assert ids("sps>1000") == ids("samples_per_s>1e3") == [2]
    assert ids("compile>10") == ids("compile_seconds>=12.5") == [2]
    assert ids("memory=none") == ids("peak_memory_mib=none") == [3]
    assert ids("duration=100") == [1, 2, 3] and ids("duration=none") == [4]  # #4 is still running
    assert ids("created=2025-03") == [1, 2]
    assert ids("created<2025-03") == [3]
    assert ids("created>2025-03-14") == [4]
    assert ids("created>=2025-03-14") == [1, 2, 4]
    assert ids('created>"2025-03-14 09"') == [1, 2, 4]


def test_switches_optional_settings_and_field_colon_value():
    assert ids("archived=true") == [3] and ids("archived=no") == [1, 2, 4]
    assert ids("fullgraph=on") == [3]
    assert ids("dynamic=auto") == [1, 2, 3] and ids("dynamic=false") == [4]
    assert ids("max_steps=none") == [1, 2, 3] and ids("max_steps!=none") == [4]
    assert ids("name=none") == [2, 3]  # no name given
    assert ids("backend:inductor amp:bf16") == [2]


def test_a_damaged_row_is_tested_like_any_other_and_never_raises():
    damaged = RunRecord(id=9, created="", status="damaged", config={"lr": "high"}, environment={}, steps=0,
                        best_val_accuracy=None, samples_per_s=None, compile_seconds=None, peak_memory_mib=None,
                        backend_used=None, failure=None, out_dir=None, checkpoint=None)
    for query in ("lr>0", "backend=eager", "created<2025", "fullgraph=false", "tag:x", "words", "lr!=1"):
        parse_query(query).matches(damaged)
    assert parse_query("lr!=1").matches(damaged) and not parse_query("lr>0").matches(damaged)


@pytest.mark.parametrize("query, says, term, position", [
    ("bakend=inductor", "unknown field 'bakend' in term 1 'bakend=inductor' at column 1 — did you mean backend?",
     "bakend=inductor", 0),
    ("backend=inductor acc>", "no value after '>' in term 2 'acc>' at column 18 — write one, e.g. acc>0.95",
     "acc>", 17),
    ("lr<=fast", "'fast' is not a number in term 1", "lr<=fast", 0),
    ("backend=inductr", "unknown backend 'inductr' in term 1 'backend=inductr' at column 1 — did you mean "
                        "backend=inductor?", "backend=inductr", 0),
    ('tag:a "out of', "a quote is not closed in term 2 '\"out of' at column 7", '"out of', 6),
    ("tag:", "no tag after 'tag:'", "tag:", 0),
    ("fullgraph=maybe", "'maybe' is not a switch's value in term 1 'fullgraph=maybe' at column 1 — use "
                        "fullgraph=true or fullgraph=false", "fullgraph=maybe", 0),
    ("acc>95", "acc is a fraction from 0 to 1, not 95 in term 1 'acc>95' at column 1 — write acc>0.95 or acc>95%",
     "acc>95", 0),
    ("x >0.9", "no field before '>' in term 2 '>0.9' at column 3", ">0.9", 2),
    ("backend>eager", "'>' compares numbers and dates, and backend is text", "backend>eager", 0),
    ("lr~1", "'~' finds text, and lr is a number", "lr~1", 0),
    ("created>march", "'>march' is not a date to compare with", "created>march", 0),
    ("-", "nothing after '-'", "-", 0),
    ("max_steps>none", "'>' cannot compare with none", "max_steps>none", 0),
    ("epochs=none", "'none' is not a number", "epochs=none", 0),  # every run has its epochs
])
def test_a_malformed_query_says_what_where_and_what_to_do(query, says, term, position):
    with pytest.raises(QueryError) as caught:
        parse_query(query)
    error = caught.value
    assert says in str(error)
    assert (error.term, error.position) == (term, position)
    assert isinstance(error, WorkbenchError) and "FIELD OP VALUE" in error.hint


def test_a_number_of_thousands_of_digits_is_words_or_not_a_number_never_a_crash():
    huge = "9" * 5000  # more digits than Python turns into an int (4,300)
    assert ids(huge) == [] and ids(f"#{huge}") == []  # words found in no name, note or run number
    with pytest.raises(QueryError) as caught:
        parse_query(f"seed={huge}")
    assert str(caught.value).startswith(f"'{'9' * 39}…' is not a number in term 1 'seed={'9' * 34}…' at column 1")


def test_the_hint_names_the_fields_nearest_to_an_unknown_one():
    with pytest.raises(QueryError) as caught:
        parse_query("batchsize=32")
    assert "did you mean batch_size?" in str(caught.value)
    assert caught.value.hint.index("batch_size") < caught.value.hint.index("backend")
    with pytest.raises(QueryError) as caught:
        parse_query("zzz=1")
    assert "put the term in quotes" in str(caught.value)


def test_completions_offer_fields_tags_and_values():
    assert "backend" in FIELDS and "acc" in FIELDS and "lr" in FIELDS and "seed" in FIELDS
    assert completions("ba") == ["backend", "backend_used", "batch_size"]
    assert completions("-ac") == ["-acc", "-accuracy"]
    assert completions("ta", RUNS) == ["tag:", "tag:amp", "tag:Baseline", "tag:fast"]
    assert completions("tag:b", RUNS) == ["tag:Baseline"]
    assert completions("backend=i") == ["backend=inductor"]
    assert completions("status=f") == ["status=finished", "status=failed"]
    assert completions("dynamic=") == ["dynamic=true", "dynamic=false", "dynamic=none"]
    assert completions("lr=") == [] and completions("zz") == []
    assert set(FIELDS) <= set(completions(""))
