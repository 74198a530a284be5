"""Workbench's Python API: the run history, read from a notebook or a script (see core/history/api.py).

    from workbench.api import open_history
"""

from .core.history.api import STEP_COLUMNS, History, HistoryRun, open_history
from .core.history.query import QueryError
from .core.history.runs import RunStoreError

__all__ = ["STEP_COLUMNS", "History", "HistoryRun", "QueryError", "RunStoreError", "open_history"]
