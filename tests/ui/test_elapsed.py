"""Every wait over two seconds says how long it has lasted: the status line for any status that ends in "…" (a
wait, in the app's wording), the Compare numerics dialog while the kernel compiles. A status that is not a wait
("Run #3 (finished)") is never counted."""

from workbench.ui.support.elapsed import Elapsed


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_wait_says_its_seconds_from_two_on(qtbot):
    shown, clock = [], Clock()
    elapsed = Elapsed(shown.append, clock=clock)
    elapsed.start("Explaining…")
    clock.now += 1.2
    elapsed.timer.timeout.emit()
    assert shown == ["Explaining…"]  # one second is not worth a number
    clock.now += 2.0
    elapsed.timer.timeout.emit()
    assert shown[-1] == "Explaining… 3 s"
    elapsed.stop()
    assert not elapsed.timer.isActive()


def test_the_status_line_counts_waits_and_not_other_statuses(waiting_window):
    feedback = waiting_window.feedback
    feedback.busy("Comparing numerics…")
    assert feedback.waiting.timer.isActive()
    feedback.waiting.since -= 5
    feedback.waiting.tick()
    assert waiting_window.state_label.text() == "Comparing numerics… 5 s"
    feedback.busy("Run #3 (finished)")  # a state, not a wait
    assert not feedback.waiting.timer.isActive() and waiting_window.state_label.text() == "Run #3 (finished)"
    feedback.busy("Explaining…")
    feedback.settled()
    assert not feedback.waiting.timer.isActive()


def test_compare_numerics_counts_the_seconds_of_its_compile(waiting_window):
    from workbench.ui.dialogs.numerics import NumericsDialog

    dialog = NumericsDialog(waiting_window)
    dialog.show_running("inductor · fp32")
    dialog.waiting.since -= 7
    dialog.waiting.tick()
    assert dialog.verdict.text().endswith("… 7 s") and "inductor · fp32" in dialog.verdict.text()
    dialog.show_error("the kernel stopped")
    assert not dialog.waiting.timer.isActive() and dialog.verdict.text().startswith("Not compared")
