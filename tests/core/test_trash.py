"""Deleting runs: folders to the desktop's trash (freedesktop.org Trash spec) or Workbench's, never another run's
folder or anything around it, a running run refused, and Undo putting rows and folders back exactly."""

from __future__ import annotations

import contextlib
import re
import sqlite3
import urllib.parse
from pathlib import Path

import pytest

from workbench.core.ground import paths
from workbench.core.ground.errors import WorkbenchError
from workbench.core.history import trash
from workbench.core.history.removal import Planned, delete_runs, plan_removal, undo_delete
from workbench.core.history.runs import RunStore, RunStoreError
from workbench.core.history.trash import Trashed, folder_bytes, move_to_trash, restore

from ..helpers import SMALL
from ..support.history_events import started, step


@pytest.fixture(autouse=True)
def home_trash(tmp_path, monkeypatch) -> Path:
    """This test's own desktop trash (never the user's)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "Trash"


def run_folder(path: Path, size: int = 1000) -> Path:
    """A folder as a run leaves it: its checkpoint (`size` bytes), its event log, a profile."""
    (path / "profile").mkdir(parents=True)
    (path / "checkpoint.pt").write_bytes(b"c" * size)
    (path / "events.jsonl").write_text("{}\n")
    (path / "profile" / "trace.json").write_text("[]")
    return path


def folder_size(size: int = 1000) -> int:
    return size + len("{}\n") + len("[]")


def contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the trash ----------------------------------------------------------------------------------------------------
def test_a_folder_goes_to_the_home_trash_as_the_spec_says_and_comes_back(tmp_path, home_trash):
    folder = run_folder(tmp_path / "runs" / "run é 1")
    before = contents(folder)
    item = move_to_trash(folder)
    assert not folder.exists()
    assert item == Trashed(original=str(folder), trashed=str(home_trash / "files" / "run é 1"),
                           info=str(home_trash / "info" / "run é 1.trashinfo"), bytes=folder_size())
    assert contents(Path(item.trashed)) == before
    lines = Path(item.info).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[Trash Info]"
    assert lines[1] == "Path=" + str(folder).replace(" ", "%20").replace("é", "%C3%A9")
    assert urllib.parse.unquote(lines[1][5:]) == str(folder)
    assert re.fullmatch(r"DeletionDate=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", lines[2])
    restore(item)
    assert contents(folder) == before
    assert list((home_trash / "files").iterdir()) == [] and list((home_trash / "info").iterdir()) == []


def test_a_name_the_trash_holds_gets_a_number(tmp_path, home_trash):
    items = [move_to_trash(run_folder(tmp_path / parent / "run")) for parent in ("a", "b", "c")]
    assert [Path(i.trashed).name for i in items] == ["run", "run.2", "run.3"]
    assert sorted(p.name for p in (home_trash / "info").iterdir()) == [
        "run.2.trashinfo", "run.3.trashinfo", "run.trashinfo"]
    restore(items[1])
    assert (tmp_path / "b" / "run" / "checkpoint.pt").is_file() and Path(items[0].trashed).is_dir()


def test_putting_back_where_something_else_now_is_is_refused(tmp_path):
    folder = run_folder(tmp_path / "run")
    item = move_to_trash(folder)
    folder.mkdir()
    (folder / "new.txt").write_text("mine")
    with pytest.raises(WorkbenchError, match="cannot put .*run back from the trash: something else is there now"):
        restore(item)
    assert [p.name for p in folder.iterdir()] == ["new.txt"] and Path(item.trashed).is_dir()
    Path(item.trashed).rename(tmp_path / "elsewhere")  # the trash was emptied
    folder.rename(tmp_path / "aside")
    with pytest.raises(WorkbenchError, match="is no longer in the trash"):
        restore(item)


def test_a_folder_on_another_device_goes_to_the_workbench_trash(tmp_path, home_trash, monkeypatch):
    folder = run_folder(tmp_path / "disk" / "run")
    real = trash._device
    monkeypatch.setattr(trash, "_device", lambda path: -7 if path == home_trash else real(path))
    item = move_to_trash(folder)
    ours = paths.data_dir() / "trash"
    assert Path(item.trashed) == ours / "files" / "run" and Path(item.info) == ours / "info" / "run.trashinfo"
    assert not home_trash.exists() and not folder.exists()
    assert f"Path={folder}" in Path(item.info).read_text(encoding="utf-8")
    restore(item)
    assert (folder / "checkpoint.pt").is_file()


def test_folder_bytes_counts_every_level_but_not_what_links_point_to(tmp_path):
    folder = run_folder(tmp_path / "run")
    big = tmp_path / "dataset.bin"
    big.write_bytes(b"d" * 100_000)
    (folder / "data").symlink_to(big)
    (folder / "datasets").symlink_to(tmp_path, target_is_directory=True)
    links = sum((folder / name).lstat().st_size for name in ("data", "datasets"))
    assert folder_bytes(folder) == folder_size() + links
    assert folder_bytes(tmp_path / "missing") == 0


def test_sizes_read_as_people_read_them():
    assert [trash.size_text(n) for n in (512, 12_345, 1_234_567, 987_654_321, 12_300_000_000)] == [
        "512 bytes", "12 kB", "1.2 MB", "988 MB", "12 GB"]


# -- deleting runs ------------------------------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "history" / "runs.sqlite") as store:
        yield store


def add_run(store: RunStore, out_dir: Path | None = None, *, status: str = "finished", host: str | None = None,
            **user) -> int:
    """A run written straight into the history: its row, three events, its status."""
    run_id = store.start_run(SMALL.to_dict(), str(out_dir) if out_dir else None, host)
    store.append_events(run_id, 0, [started(), step(1), step(2)], {"status": status})
    if user:
        store.rename(run_id, user["name"])
        store.set_tags(run_id, user["tags"])
    return run_id


def raw_rows(store: RunStore) -> tuple[list, list]:
    with contextlib.closing(sqlite3.connect(store.path)) as raw:
        return (raw.execute("SELECT * FROM runs ORDER BY id").fetchall(),
                raw.execute("SELECT * FROM events ORDER BY run_id, seq").fetchall())


def test_deleting_a_run_moves_its_folder_and_undo_puts_everything_back_exactly(store, tmp_path, home_trash):
    kept_id = add_run(store, run_folder(tmp_path / "a"))
    gone_id = add_run(store, run_folder(tmp_path / "b", size=5000), name="warm-up", tags=["baseline"])
    before, folder = raw_rows(store), contents(tmp_path / "b")
    removal = delete_runs(store, [gone_id])
    assert removal.removed == (gone_id,) and removal.skipped == () and removal.kept == ()
    assert removal.bytes_freed == folder_size(5000) == removal.trashed[0].bytes
    assert [r.id for r in store.list()] == [kept_id] and not (tmp_path / "b").exists()
    assert contents(home_trash / "files" / "b") == folder and (tmp_path / "a" / "checkpoint.pt").is_file()
    undo_delete(store, removal)
    assert raw_rows(store) == before and contents(tmp_path / "b") == folder
    assert store.get(gone_id, with_events=True).events == [started(), step(1), step(2)]
    assert list((home_trash / "files").iterdir()) == []


def test_a_running_run_is_not_deleted(store, tmp_path):
    running = add_run(store, run_folder(tmp_path / "live"), status="running")
    done = add_run(store, run_folder(tmp_path / "done"))
    removal = delete_runs(store, [running, done])
    assert removal.removed == (done,)
    assert removal.skipped == ((running, "it is still running: stop it first"),)
    assert store.get(running).status == "running" and (tmp_path / "live" / "checkpoint.pt").is_file()


def test_a_folder_another_run_uses_is_never_touched(store, tmp_path):
    """The same folder (a run trained into an earlier one's), one around another's, one inside another's."""
    runs = tmp_path / "runs"
    shared = add_run(store, run_folder(runs / "shared"))
    later = add_run(store, runs / "shared")
    outer = add_run(store, run_folder(runs / "outer"))
    add_run(store, run_folder(runs / "outer" / "inner"))
    around = add_run(store, run_folder(runs / "around"))
    inner = add_run(store, run_folder(runs / "around" / "inner"))
    everything = contents(runs)
    removal = delete_runs(store, [shared, outer, inner])
    assert removal.trashed == () and removal.bytes_freed == 0 and contents(runs) == everything
    assert removal.removed == (shared, outer, inner) and removal.kept == (
        (shared, f"run #{later} uses the same folder {runs / 'shared'}"),
        (outer, f"its folder {runs / 'outer'} holds run #{outer + 1}'s folder"),
        (inner, f"its folder {runs / 'around' / 'inner'} lies in run #{around}'s folder"))


def test_folders_of_runs_deleted_together_go_once(store, tmp_path, home_trash):
    outer = add_run(store, run_folder(tmp_path / "outer"))
    inner = add_run(store, run_folder(tmp_path / "outer" / "inner", size=10))
    same = add_run(store, tmp_path / "outer")
    plans = plan_removal(store, [inner, same, outer])
    assert plans == (Planned(inner, along=outer), Planned(same, along=outer),
                     Planned(outer, folder=str(tmp_path / "outer"), bytes=folder_size() + folder_size(10)))
    removal = delete_runs(store, [inner, same, outer])
    assert removal.removed == (inner, same, outer) and removal.skipped == ()
    assert [Path(t.trashed).name for t in removal.trashed] == ["outer"]
    assert (home_trash / "files" / "outer" / "inner" / "checkpoint.pt").is_file()
    undo_delete(store, removal)
    assert (tmp_path / "outer" / "inner" / "checkpoint.pt").is_file() and len(store.list()) == 3


def test_a_folder_with_what_a_run_does_not_write_stays(store, tmp_path):
    folder = run_folder(tmp_path / "Desktop")  # --out ~/Desktop: the user's own files are there too
    for name in ("thesis.pdf", "photos", "todo.txt", "z.md"):
        (folder / name).write_text("mine")
    run_id = add_run(store, folder)
    removal = delete_runs(store, [run_id])
    assert removal.removed == (run_id,) and removal.trashed == ()
    assert removal.kept == ((run_id, f"its folder {folder} holds files that are not this run's "
                                     "(photos, thesis.pdf, todo.txt and 1 more)"),)
    assert (folder / "checkpoint.pt").is_file() and (folder / "thesis.pdf").is_file()


def test_a_folder_holding_the_history_or_workbenchs_data_stays(tmp_path):
    folder = run_folder(tmp_path / "project")
    with RunStore(folder / "runs.sqlite") as store:  # `--out . --db ./runs.sqlite`
        run_id = add_run(store, folder)
        assert plan_removal(store, [run_id])[0].kept == f"its folder {folder} holds the run history's database"
    with RunStore(tmp_path / "h.sqlite") as store:
        home = add_run(store, Path.home())
        data = add_run(store, paths.data_dir().parent)
        assert [p.kept.rsplit(" holds ", 1)[-1] for p in plan_removal(store, [home, data])] == [
            "your home folder", "Workbench's data folder"]


def test_a_run_without_a_folder_here_loses_only_its_row(store, tmp_path):
    twin = run_folder(tmp_path / "remote-path")  # the same path as the host's folder: this one is not the run's
    remote = add_run(store, twin, host="gpu-box")
    nowhere = add_run(store, None)
    vanished = add_run(store, tmp_path / "vanished")
    removal = delete_runs(store, [remote, nowhere, vanished])
    assert removal.removed == (remote, nowhere, vanished) and removal.trashed == ()
    assert removal.kept == ((remote, "its files are on gpu-box: they stay there"),
                            (vanished, f"its folder {tmp_path / 'vanished'} is no longer there"))
    assert (twin / "checkpoint.pt").is_file() and store.list() == []


def test_a_row_that_cannot_be_deleted_keeps_its_folder(store, tmp_path, monkeypatch):
    run_id = add_run(store, run_folder(tmp_path / "run"))
    before = contents(tmp_path / "run")

    def locked(run_id):
        raise RunStoreError("the run database is locked by another process")

    monkeypatch.setattr(store, "forget", locked)
    removal = delete_runs(store, [run_id])
    assert removal.removed == () and removal.skipped == ((run_id, "the run database is locked by another process"),)
    assert contents(tmp_path / "run") == before and store.get(run_id).status == "finished"


def test_undo_puts_back_every_row_and_names_a_folder_whose_place_is_taken(store, tmp_path):
    first, second = add_run(store, run_folder(tmp_path / "a")), add_run(store, run_folder(tmp_path / "b"))
    removal = delete_runs(store, [first, second])
    (tmp_path / "a").mkdir()
    with pytest.raises(WorkbenchError, match=f"cannot put {tmp_path / 'a'} back") as info:
        undo_delete(store, removal)
    assert "the runs are back in the history" in info.value.hint
    assert [r.id for r in store.list()] == [first, second] and (tmp_path / "b" / "checkpoint.pt").is_file()


def test_a_read_only_history_deletes_nothing(store, tmp_path, monkeypatch):
    run_id = add_run(store, run_folder(tmp_path / "run"))
    monkeypatch.setattr(store, "read_only", True)
    with pytest.raises(RunStoreError, match="is read-only"):
        delete_runs(store, [run_id])
    assert (tmp_path / "run" / "checkpoint.pt").is_file()


def test_a_folder_around_a_removed_runs_folder_that_must_stay_stays_too(store, tmp_path):
    outer = add_run(store, run_folder(tmp_path / "outer"))
    inner = add_run(store, run_folder(tmp_path / "outer" / "inner"))
    (tmp_path / "outer" / "inner" / "thesis.pdf").write_text("mine")
    removal = delete_runs(store, [outer, inner])
    assert removal.trashed == () and (tmp_path / "outer" / "inner" / "thesis.pdf").is_file()
    assert removal.kept == ((outer, f"its folder {tmp_path / 'outer'} holds files that are not this run's (inner)"),
                            (inner, f"its folder {tmp_path / 'outer' / 'inner'} holds files that are not this "
                                    "run's (thesis.pdf)"))


@pytest.mark.parametrize("spelling", ["dotdot", "alias"])
def test_a_folder_recorded_under_another_name_of_another_runs_folder_is_never_moved(store, tmp_path, spelling):
    """`runs/x/../a` and `alias/a` (alias → runs) are run a's folder: removing the run recorded so keeps it."""
    runs = tmp_path / "runs"
    owner = add_run(store, run_folder(runs / "a"))
    (runs / "x").mkdir()
    (tmp_path / "alias").symlink_to(runs)
    spelled = {"dotdot": f"{runs}/x/../a", "alias": f"{tmp_path}/alias/a"}[spelling]
    other = add_run(store, Path(spelled))
    before = contents(runs / "a")
    removal = delete_runs(store, [other])
    assert removal.removed == (other,) and removal.trashed == ()
    assert removal.kept == ((other, f"run #{owner} uses the same folder {spelled} ({runs / 'a'})"),)
    assert contents(runs / "a") == before and store.get(owner).folder is not None


def test_a_folder_reached_through_a_link_and_dotdot_is_the_one_moved(store, tmp_path, home_trash):
    """`runs/link/../b` with runs/link → deep/inner is deep/b, not runs/b: a lexical `..` would move another run's."""
    runs, deep = tmp_path / "runs", tmp_path / "deep"
    neighbour = add_run(store, run_folder(runs / "b"))
    run_folder(deep / "b")
    (deep / "inner").mkdir()
    (runs / "link").symlink_to(deep / "inner")
    gone = add_run(store, Path(f"{runs}/link/../b"))
    neighbours = contents(runs / "b")
    removal = delete_runs(store, [gone])
    assert [t.original for t in removal.trashed] == [str(deep / "b")] and not (deep / "b").exists()
    assert contents(runs / "b") == neighbours and store.get(neighbour).folder is not None


@pytest.mark.parametrize("entry", [".git", ".venv", ".env", ".notes.tmp", ".checkpoint.ptx.tmp"])
def test_a_hidden_entry_the_run_did_not_write_keeps_the_folder(store, tmp_path, entry):
    folder = run_folder(tmp_path / "project")
    (folder / entry).mkdir() if entry in (".git", ".venv") else (folder / entry).write_text("mine")
    (folder / ".checkpoint.pt.k2j4h1.tmp").write_bytes(b"half")  # the run's own atomic write: not foreign
    run_id = add_run(store, folder)
    removal = delete_runs(store, [run_id])
    assert removal.trashed == () and (folder / entry).exists()
    assert removal.kept == ((run_id, f"its folder {folder} holds files that are not this run's ({entry})"),)


def test_a_folder_with_only_the_runs_own_temp_files_goes(store, tmp_path, home_trash):
    folder = run_folder(tmp_path / "run")
    for half in (".checkpoint.pt.k2j4h1.tmp", ".metrics.json.a8d.tmp", ".export-onnx.x1.tmp"):
        (folder / half).write_bytes(b"half")
    run_id = add_run(store, folder)
    assert [t.original for t in delete_runs(store, [run_id]).trashed] == [str(folder)]


def test_a_relative_xdg_data_home_is_ignored_as_the_base_directory_spec_says(monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", "relative/share")
    assert trash.home_trash() == Path.home() / ".local" / "share" / "Trash"


def test_a_name_left_in_the_trash_without_its_info_file_is_not_taken(tmp_path, home_trash):
    orphan = home_trash / "files" / "run"  # emptied by hand, half: the folder stayed, its .trashinfo went
    orphan.mkdir(parents=True)
    (orphan / "theirs.txt").write_text("kept")
    item = move_to_trash(run_folder(tmp_path / "a" / "run"))
    assert Path(item.trashed).name == "run.2" and (orphan / "theirs.txt").read_text() == "kept"


def test_a_copy_to_another_devices_trash_cut_short_leaves_the_original_whole_and_no_half_copy(tmp_path, monkeypatch):
    import errno
    import os
    import shutil

    folder = run_folder(tmp_path / "disk" / "run")
    before = contents(folder)
    monkeypatch.setattr(trash, "_device", lambda path: -7 if "xdg" in str(path) else 1)  # the home trash is elsewhere

    def cross_device(source, target):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    def cut_short(source, target):
        Path(target).mkdir()
        (Path(target) / "checkpoint.pt").write_bytes(b"c" * 10)
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "rename", cross_device)
        patch.setattr(shutil, "move", cut_short)
        with pytest.raises(WorkbenchError, match="No space left on device"):
            move_to_trash(folder)
    assert contents(folder) == before
    workbench_trash = paths.data_dir() / "trash"
    assert list((workbench_trash / "files").iterdir()) == [] and list((workbench_trash / "info").iterdir()) == []


def test_a_link_to_a_folder_is_trashed_as_the_link_its_size_the_links_own(tmp_path, home_trash):
    target = run_folder(tmp_path / "elsewhere", size=50_000)
    link = tmp_path / "runs" / "link"
    link.parent.mkdir()
    link.symlink_to(target, target_is_directory=True)
    item = move_to_trash(link)
    assert item.bytes == Path(item.trashed).lstat().st_size < 1000 and Path(item.trashed).is_symlink()
    assert (target / "checkpoint.pt").stat().st_size == 50_000  # what it pointed to is left as it is


def test_a_run_on_another_host_at_the_same_path_does_not_keep_this_computers_folder(store, tmp_path, home_trash):
    folder = run_folder(tmp_path / "runs" / "1")
    local = add_run(store, folder)
    add_run(store, folder, host="gpu-box")  # its files are at that path on gpu-box, not here
    removal = delete_runs(store, [local])
    assert [t.original for t in removal.trashed] == [str(folder)] and removal.kept == ()
