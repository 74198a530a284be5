"""What the user says about runs in the Runs dock (a name, tags, a note, the archive flag), shown at once and written
to the history off the GUI thread (runs_writer.py). Tags the history would refuse are refused here, before anything
changes, with its message; a write the history refuses (a read-only file) is said so, and the runs listed again as
they are."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from ....core.ground.errors import WorkbenchError, with_hint
from ....core.history.naming import run_name
from ....core.history.runs import RunRecord, RunStore
from ....core.history.words import clean_tags
from ...support.tasks import Tasks
from .rows import LIST_SLOT, RunsTableModel, typed_tags
from .writer import RunsWriter


class RunEdits:
    def __init__(self, model: RunsTableModel, writer: RunsWriter, tasks: Tasks, *, say: Callable[[str], None],
                 shown: Callable[[], None], relist: Callable[[], None]):
        """`say`: a message in the dock; `shown`: a run changed on screen (the count and details follow);
        `relist`: read the history again."""
        self.model, self.writer, self.tasks = model, writer, tasks
        self.say, self.shown, self.relist = say, shown, relist

    def edited(self, run_id: int, title: str, text: str) -> bool:
        """A name or tags typed ("Name" or "Tags"); False when the tags are refused (said in the dock)."""
        record = self.model.record(run_id)
        if record is None:
            return True
        if title == "Tags":
            try:
                tags = clean_tags(typed_tags(text))
            except WorkbenchError as exc:
                self.say(f"Tags of {run_name(run_id)} not changed: {with_hint(exc)}")
                return False
            self._change([replace(record, tags=tags)], lambda store: store.set_tags(run_id, tags), "tags")
            # said, so that an earlier refusal's words never stand beside tags that were then saved
            self.say(f"Tags of {run_name(run_id)}: {', '.join(tags)}." if tags else
                     f"Tags of {run_name(run_id)} removed.")
        else:
            name = text.strip()
            self._change([replace(record, name=name)], lambda store: store.rename(run_id, name), "name")
        return True

    def noted(self, run_id: int, text: str) -> None:
        record = self.model.record(run_id)
        if record is not None:
            self._change([replace(record, notes=text.rstrip())], lambda store: store.set_notes(run_id, text), "note")

    def archive(self, records: Sequence[RunRecord]) -> None:
        """Archive the runs (hidden unless Show archived), or bring them back when all of them are archived."""
        archived = not all(r.archived for r in records)
        ids = [r.id for r in records]
        self._change([replace(r, archived=archived) for r in records],
                     lambda store: store.set_archived(ids, archived), "archive flag")
        names = ", ".join(map(run_name, ids))
        self.say(f"Archived {names}: Show archived lists them." if archived else f"Unarchived {names}.")

    def _change(self, records: list[RunRecord], write: Callable[[RunStore], object], what: str) -> None:
        """Show `records` as changed now, and `write` the change after those asked before it."""
        for record in records:
            self.model.update_record(record)
        self.shown()
        names = ", ".join(run_name(r.id) for r in records)

        def failed(error) -> None:
            self.say(f"Could not keep the {what} of {names}: {with_hint(error)}")
            self.relist()

        self.writer.submit(f"runs-{what}-{names}", write, lambda _result: self._written(), failed)

    def _written(self) -> None:
        """A change is in the history: a listing still reading may have read the run as it was: read again."""
        if self.tasks.busy(LIST_SLOT):
            self.relist()
