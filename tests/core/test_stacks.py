"""Every rank's stack, side by side (ground/stacks.py, run/stacks.py, ground/hang.py): faulthandler's text read as
frames, the ranks compared (the reference is what most do; the first rank that leaves it is named, with where they
part and, from the Flight Recorder, which one has not reached the others' collective); real processes asked through
their FIFOs, one of them gone; and the silence that counts as a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from workbench.core.ground.events import EpochEnd, MemorySample, Notice, Step
from workbench.core.ground.hang import StepWatch
from workbench.core.ground.stacks import Collective, RankStack, StacksView, frame_text, side_by_side
from workbench.core.run import stacks as rank_stacks


def _dump(*main: tuple[str, int, str], helper: bool = True) -> str:
    """faulthandler's layout: a helper thread first (started by threading), then the main thread, the most
    recent frame first."""
    lines = []
    if helper:
        lines += ["Current thread 0x00007f01 (most recent call first):",
                  '  File "/lib/stacks.py", line 60 in _answer_each',
                  '  File "/usr/lib/python3.11/threading.py", line 975 in run',
                  '  File "/usr/lib/python3.11/threading.py", line 995 in _bootstrap', ""]
    lines.append("Thread 0x00007f00 (most recent call first):")
    lines += [f'  File "{file}", line {line} in {function}' for file, line, function in reversed(main)]
    return "\n".join(lines) + "\n"


OUTER = (("<frozen runpy>", 198, "_run_module_as_main"), ("/w/trainer.py", 274, "_train_epoch"))
IN_BACKWARD = _dump(*OUTER, ("/w/steps.py", 112, "train_step"), ("/t/graph.py", 1072, "_engine_run_backward"))
STUCK = _dump(*OUTER, ("/w/steps.py", 108, "train_step"), ("/m/model.py", 10, "forward"), ("/m/model.py", 15,
                                                                                             "wait_for_release"))


def _stack(rank: int, dump: str, seq: int = 0, host: str = "a") -> RankStack:
    collectives = (Collective(seq, "gloo:all_reduce", "scheduled", "12730"),) if seq else ()
    return RankStack(rank=rank, host=host, pid=100 + rank, dump=dump, collectives=collectives)


def test_the_main_threads_frames_are_read_outermost_first_and_the_helper_thread_left_out():
    frames = _stack(0, STUCK).frames
    assert [frame.function for frame in frames] == ["_run_module_as_main", "_train_epoch", "train_step", "forward",
                                                    "wait_for_release"]
    assert frame_text(frames[-1]) == "wait_for_release (model.py:15)"
    assert RankStack.from_dict(_stack(1, STUCK, 31).to_dict()) == _stack(1, STUCK, 31)  # crosses processes typed


def test_the_first_rank_that_leaves_what_most_ranks_do_is_named_with_where_they_part_and_who_is_behind():
    view = StacksView.of([_stack(2, STUCK, 31, "c"), _stack(0, IN_BACKWARD, 32), _stack(1, IN_BACKWARD, 32, "b")])
    assert (view.reference, view.first_differing, view.divergence) == (0, 2, 3)
    summary = view.summary()
    assert summary.startswith("rank 2 on c is the first that differs: it is in wait_for_release (model.py:15); "
                              "ranks 0 and 1 are in _engine_run_backward (graph.py:1072)")
    assert "they part in train_step (steps.py, line 108 against 112)" in summary
    assert "rank 2's last collective is #31 (gloo:all_reduce), rank 0 is at #32: rank 2 has not reached it" in summary
    lines = side_by_side(view, width=40)
    assert lines[0].split("│")[2].strip() == "rank 2@c"
    [marked] = [line for line in lines if line.startswith("→")]
    assert "_engine_run_backward" in marked and "forward (model.py:10)" in marked  # the row where they part
    assert "   last collectives (Flight Recorder), oldest first:" in lines


def test_a_tie_takes_rank_0_as_the_reference_and_ranks_alike_differ_in_nothing():
    tie = StacksView.of([_stack(1, STUCK), _stack(0, IN_BACKWARD)])
    assert (tie.reference, tie.first_differing) == (0, 1)
    alike = StacksView.of([_stack(0, IN_BACKWARD), _stack(1, IN_BACKWARD)])
    assert alike.first_differing is None
    assert alike.summary() == ("every rank that answered is at the same place: _engine_run_backward "
                               "(graph.py:1072)")


def test_a_rank_that_could_not_answer_is_said_and_left_out_of_the_comparison():
    gone = RankStack(rank=1, host="b", pid=0, error="its process has ended")
    view = StacksView.of([_stack(0, IN_BACKWARD), gone, _stack(2, IN_BACKWARD)])
    assert view.first_differing is None
    assert view.summary().endswith("(no stack from rank 1 on b: its process has ended)")
    assert view.columns()[1][1][0] == "its process has ended"
    assert StacksView.of([gone]).summary() == "no rank answered (no stack from rank 1 on b: its process has ended)"


def test_ranks_armed_in_real_processes_answer_from_their_own_thread_however_stuck_and_an_ended_one_is_said(
        tmp_path):
    folder = tmp_path / "stacks"
    stuck = textwrap.dedent("""
        import sys, threading
        from workbench.core.kernel import stacks_answer
        stacks_answer.arm()
        def stuck_here():
            print("armed", flush=True)
            threading.Event().wait()  # never set: as a rank waiting for a peer that never comes
        stuck_here()
    """)
    ranks = [subprocess.Popen([sys.executable, "-c", stuck], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, rank_stacks.STACKS_DIR_ENV: str(folder), "RANK": str(rank)})
             for rank in (0, 1)]
    try:
        assert all(rank.stdout.readline().strip() == "armed" for rank in ranks)
        ranks[1].kill()
        ranks[1].wait()
        answers = rank_stacks.collect(folder, host="here")
    finally:
        for rank in ranks:
            rank.kill()
            rank.wait()
    assert [stack.rank for stack in answers] == [0, 1]
    assert answers[0].pid == ranks[0].pid and answers[0].host == "here" and not answers[0].error
    assert [frame.function for frame in answers[0].frames][-3:] == ["stuck_here", "wait", "wait"]  # Event, Condition
    assert answers[1].error == "its process has ended"
    assert oct(folder.stat().st_mode & 0o777) == "0o700"  # only the run's user can ask


def test_no_step_for_the_bound_once_steps_have_come_is_a_hang_said_once_until_steps_come_again():
    now = [0.0]
    watch = StepWatch(after_s=10, clock=lambda: now[0])
    now[0] = 100
    assert watch.hung() is None  # starting, compiling: nothing stepped yet
    watch.saw(Step(step=1, epoch=1, loss=1.0, samples_per_s=10.0, step_seconds=0.1, memory=MemorySample(rss=1.0)))
    watch.saw(Notice("info", "a notice is not progress"))
    now[0] = 109.9
    assert watch.hung() is None
    now[0] = 110.5
    assert watch.hung() == 10.5
    now[0] = 130
    assert watch.hung() is None  # said once for this silence
    watch.saw(EpochEnd(epoch=1, train_loss=1.0, val_loss=1.0, val_accuracy=0.5, seconds=1.0))
    now[0] = 141
    assert watch.hung() == 11
    assert StepWatch(after_s=0, clock=lambda: now[0]).hung() is None  # 0: never


def test_a_kernel_whose_parent_has_gone_stops_its_job_and_exits_if_it_is_still_there_after_the_grace(monkeypatch):
    """A rank stuck before a collective never ends its step: after the parent went away (the window killed), the
    kernel would outlive everyone. Its inbox sees the EOF, asks the job to stop, and after the grace, exits."""
    import threading

    from workbench.core.kernel import main

    abandoned = threading.Event()
    monkeypatch.setattr(main, "ORPHAN_EXIT_S", 0.01)
    monkeypatch.setattr(main, "_abandon", abandoned.set)

    class Gone:
        def read(self, timeout=None):
            started.wait()
            raise EOFError

    started = threading.Event()
    inbox = main._Inbox(Gone())
    stop = inbox.begin(7)
    started.set()
    assert abandoned.wait(10) and stop.is_set()
    assert inbox.next_job() is None
