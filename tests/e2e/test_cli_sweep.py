"""`workbench sweep`: a line per trial with the ETA, the best against the defaults, the Pareto front, the report;
--list and --show read stored sweeps back; mistakes are one clear error line. (The trials' runs are made up here:
tests/core/test_sweep.py trains real ones.)"""

from __future__ import annotations

from workbench.core.run import sweep

from ..helpers import assert_one_error_line, call
from ..support.fake_sweep import fake_start_run


def test_sweep_prints_each_trial_the_best_and_the_front_and_writes_its_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep, "start_run", fake_start_run([[0.90], [0.95], [0.80]], []))
    db = tmp_path / "runs.sqlite"
    code, stdout, err = call(capsys, "sweep", "demo", "--trials", "3", "--sampler", "random", "--search", "lr",
                             "--epochs", "1", "--db", db, "--report", tmp_path / "sweep.html")
    assert code == 0, err
    lines = stdout.splitlines()
    assert lines[0].startswith("trial 0 complete lr 0.004") and "val accuracy  90.00%  (1/3, about" in lines[0]
    assert lines[2].startswith("trial 2 ") and lines[2].endswith("(3/3)")
    assert any(line.startswith("best: trial 1, 95.00% with lr ") and line.endswith(
        "(trial 0, the base settings: 90.00%)") for line in lines)
    assert sum(line.startswith("pareto: trial") for line in lines) == 1  # equal speed and memory: the best wins
    assert (tmp_path / "sweep.html").is_file() and f"wrote {tmp_path / 'sweep.html'}" in stdout
    code, stdout, _ = call(capsys, "sweep", "--list", "--db", db)
    assert code == 0 and stdout.strip() == "demo: 3 trials, best 95.00% (trial 1)"
    code, stdout, _ = call(capsys, "sweep", "demo", "--show", "--db", db)  # trains nothing: no run is left
    assert code == 0 and stdout.startswith("best: trial 1, 95.00%")


def test_sweep_mistakes_are_one_clear_error_line(tmp_path, capsys):
    code, _, err = call(capsys, "sweep", "--db", tmp_path / "runs.sqlite")
    assert code == 2 and "name the sweep" in assert_one_error_line(err)
    code, _, err = call(capsys, "sweep", "nope", "--show", "--db", tmp_path / "runs.sqlite")
    assert code == 2 and "no sweep named 'nope'" in assert_one_error_line(err)
    code, _, err = call(capsys, "sweep", "x", "--search", "colour", "--db", tmp_path / "runs.sqlite")
    assert code == 2 and "cannot search colour" in assert_one_error_line(err)
