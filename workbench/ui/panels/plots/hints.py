"""What the empty loss plot says, by the moment: before any run, while one starts, before its first step, and when
it failed before that step (then the banner has the why)."""

EMPTY_HINT = "Press Train (Ctrl+R)"
STARTING_HINT = "Starting the run…"
WAITING_HINT = "Waiting for the first step…"
FAILED_HINT = "The run failed before its first step: the banner says why"
