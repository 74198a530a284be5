"""The ground floor: what every other layer, both processes and the window may import — the settings (TrainConfig),
the events, the job requests and answers, a run's results, errors, paths and the codec they all go through. No
torch and no Qt, so the window, `workbench runs` and the CLI's argument checks read these types without loading
PyTorch.

Why "ground" (and not "types" or "common"): it is the layer everything stands on, and the only one with no layer
below it; it holds behaviour too (the alert rules, the forecast, the figures' one definition), not only types. The
name is the layers contract's (pyproject.toml), where the order says it: ground is the bottom.
"""
