"""A model's own prints reach the run's events (the window's Log) from a kernel, and cannot flood them."""

from __future__ import annotations

import io

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import Notice
from workbench.core.ground.resources import resource_path
from workbench.core.kernel.model_prints import MAX_LINES, PREFIX, PrintedLines
from workbench.core.kernel.run_files import run_recorded
from workbench.core.run.run_request import RunRequest


def test_complete_lines_become_notices_and_still_reach_the_terminal():
    terminal, notices = io.StringIO(), []
    stream = PrintedLines(notices.append, terminal)
    stream.write("loss is ")
    stream.write("0.5\nsecond line\nunfinished")
    assert terminal.getvalue() == "loss is 0.5\nsecond line\nunfinished"
    assert [n.message for n in notices] == [PREFIX + "loss is 0.5", PREFIX + "second line"]


def test_a_model_that_prints_every_step_is_cut_off_with_one_warning():
    notices = []
    stream = PrintedLines(notices.append, io.StringIO(), limit=3)
    for i in range(10):
        print(f"step {i}", file=stream)
    assert [n.message for n in notices[:3]] == [PREFIX + f"step {i}" for i in range(3)]
    assert len(notices) == 4 and notices[3].level == "warning" and "more than 3 lines" in notices[3].message


def test_prints_of_a_models_forward_are_in_the_runs_events(tmp_path, capsys):
    model = f"{resource_path('examples', 'planted_break.py')}:PlantedBreakNet"  # prints in forward
    config = TrainConfig(model=model, backend="eager", epochs=1, max_steps=5)
    events = []
    run_recorded(RunRequest(config=config, out_dir=str(tmp_path / "out"), record=False), sinks=(events.append,),
                 capture_prints=True)
    printed = [e.message for e in events if isinstance(e, Notice) and e.message.startswith(PREFIX)]
    assert printed and all(m.startswith(PREFIX + "mean input:") for m in printed)
    assert len(printed) <= MAX_LINES
    assert "mean input:" in capsys.readouterr().out  # written through to the terminal as well


def test_without_capture_prints_stay_on_the_terminal_only(tmp_path):
    model = f"{resource_path('examples', 'planted_break.py')}:PlantedBreakNet"
    config = TrainConfig(model=model, backend="eager", epochs=1, max_steps=2)
    events = []
    run_recorded(RunRequest(config=config, out_dir=str(tmp_path / "out"), record=False), sinks=(events.append,))
    assert not [e for e in events if isinstance(e, Notice) and e.message.startswith(PREFIX)]
