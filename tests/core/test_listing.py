"""`workbench runs` reads only the columns it prints (history/listing.py): what it lists is what the runs' full
records say, for every kind of row, and an older history without the model column is listed from its records."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from workbench.core.ground.config import TrainConfig
from workbench.core.history.listing import list_runs, listed
from workbench.core.history.query import parse_query
from workbench.core.history.runs import RunStore

V3 = Path(__file__).resolve().parent.parent / "data" / "previous-release" / "history-v3.sqlite"


def test_the_columns_list_what_the_records_say(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        plain = store.start_run(TrainConfig().to_dict())
        own = store.start_run({**TrainConfig(backend="inductor", mode="max-autotune", amp="bf16").to_dict(),
                               "model": "/home/me/nets/net.py:Net"}, host="gpu-box")
        store.append_events(plain, 0, [], {"status": "finished", "best_val_accuracy": 0.97, "samples_per_s": 1234.5})
        store.rename(own, "mine")
        store.set_tags(own, ["keep", "éclair"])
        store.set_archived([own], True)
        damaged = store.start_run(TrainConfig().to_dict())
        store.db.execute("UPDATE runs SET best_val_accuracy = 'abc' WHERE id = ?", (damaged,))
        broken = store.start_run(TrainConfig().to_dict())
        store.db.execute("UPDATE runs SET config = '{garbage' WHERE id = ?", (broken,))
        fast, total = list_runs(store, parse_query(""))
        full = [listed(r) for r in store.list()]
    assert total == 4
    by_id = {r.id: r for r in fast}
    for record in full:
        mine = by_id[record.id]
        assert (mine.id, mine.name, mine.created, mine.best_val_accuracy, mine.samples_per_s, mine.status,
                mine.elsewhere, mine.archived, mine.tags) == (
            record.id, record.name, record.created, record.best_val_accuracy, record.samples_per_s, record.status,
            record.elsewhere, record.archived, record.tags)
        if record.status != "damaged":
            assert mine == record
    assert by_id[own].model == "net.py:Net" and by_id[own].setup == "inductor · max-autotune · bf16"
    assert by_id[damaged].status == by_id[broken].status == "damaged"


def test_a_query_and_an_older_history_list_from_the_records(tmp_path):
    copy = tmp_path / "history.sqlite"
    shutil.copy(V3, copy)
    with RunStore(copy, reading=True) as store:  # schema 3, read as it is: no model column
        runs, total = list_runs(store, parse_query(""))
        assert total == 4 and [r.id for r in runs] == [1, 2, 3, 4]
        assert [r.model for r in runs] == ["Sandwich"] * 4
        matching, total = list_runs(store, parse_query("steps>1000"))
    assert total == 4 and [r.id for r in matching] == [4]


def test_an_upgraded_history_lists_its_models_from_the_new_column(tmp_path):
    copy = tmp_path / "history.sqlite"
    shutil.copy(V3, copy)
    with sqlite3.connect(copy) as raw:  # a run of the older release with a model of its own
        raw.execute("UPDATE runs SET config = json_set(config, '$.model', '/x/net.py:Net') WHERE id = 2")
    with RunStore(copy) as store:  # upgraded: the model is a column now
        assert "model" in store.run_columns
        fast, _total = list_runs(store, parse_query(""))
        assert fast == [listed(r) for r in store.list()]
    assert [r.model for r in fast] == ["Sandwich", "net.py:Net", "Sandwich", "Sandwich"]
