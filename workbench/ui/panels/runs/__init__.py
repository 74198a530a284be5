"""The Runs dock: the history as a table (runs, rows, table) with its query box (query), the selected run's details
(details), what can be done to runs (actions, edits, removal, writer: off the GUI thread), what is read back for the
other docks (loading), and the Diff of runs (diff)."""
