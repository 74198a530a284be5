"""Bad input on the command line ends in one error line, never a traceback: text that is not UTF-8 (a Latin-1
terminal or file), a command line with an unbalanced quote (WORKBENCH_SSH, --remote-python), a query of thousands of
digits, and a reader that closed the pipe (`runs show N | head -1`)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from workbench.core.history.runs import RunStore

from ..helpers import SMALL, assert_one_error_line, call

LATIN1 = "café".encode("latin-1")  # b"caf\xe9": not UTF-8
ARGV_LATIN1 = LATIN1.decode("utf-8", "surrogateescape")  # what Python makes of such an argument


@pytest.fixture
def history(tmp_path):
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        store.start_run(SMALL.to_dict(), out_dir=str(tmp_path / "run"))
    return db


@pytest.mark.parametrize("command, what", [
    (("runs", "note", "1"), "a run's note"), (("runs", "rename", "1"), "a run's name"),
    (("runs", "tag", "1"), "a tag")])
def test_a_name_note_or_tag_that_is_not_utf8_is_refused_by_its_byte(command, what, history, capsys):
    code, _, err = call(capsys, *command, ARGV_LATIN1, "--db", history)
    line = assert_one_error_line(err)
    assert code == 2 and f"{what} is not UTF-8 text (byte 0xe9 at character 4)" in line
    with RunStore(history) as store:
        record = store.get(1)
    assert (record.name, record.notes, record.tags) == ("", "", ())  # nothing half-written


def test_a_latin1_note_on_standard_input_is_refused_by_its_byte(history, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"first line\n" + LATIN1)))
    code, _, err = call(capsys, "runs", "note", "1", "-", "--db", history)
    assert code == 2 and "the note on standard input is not UTF-8 text (byte 0xe9 at byte 15)" in \
        assert_one_error_line(err)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("une note é\n".encode())))
    assert call(capsys, "runs", "note", "1", "-", "--db", history)[0] == 0
    with RunStore(history) as store:
        assert store.get(1).notes == "une note é"


@pytest.mark.parametrize("where", ["ssh", "python"])
def test_an_unbalanced_quote_in_the_ssh_command_or_remote_python_is_one_line(where, history, capsys, monkeypatch):
    flags = ["--remote-python", '"/opt/my env/bin/python'] if where == "python" else []
    if where == "ssh":
        monkeypatch.setenv("WORKBENCH_SSH", 'ssh -i "/keys/my key')
    code, _, err = call(capsys, "train", "--host", "gpu-box", *flags, "--db", history)
    line = assert_one_error_line(err)
    named = "WORKBENCH_SSH" if where == "ssh" else "the remote Python"
    assert code == 2 and f"{named} (" in line and "cannot be read as a command: no closing quotation" in line


def test_a_query_of_thousands_of_digits_is_answered(history, capsys):
    code, out, err = call(capsys, "runs", "--where", "9" * 5000, "--db", history)
    assert code == 0 and not err and out.lower().startswith("no run matches")
    code, _, err = call(capsys, "runs", "--where", "seed>" + "9" * 5000, "--db", history)
    assert code == 2 and "is not a number" in assert_one_error_line(err)


def test_a_reader_that_closed_the_pipe_ends_the_command_quietly(history, tmp_path):
    """As `runs show 1 | head -1` once the head has its line: the first write meets a closed pipe."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "workbench", "runs", "show", "1", "--db", str(history)],
                              stdout=write, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr.decode() == ""
