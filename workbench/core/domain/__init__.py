"""The work done on models and data with PyTorch, one piece a module: build a model, load data, explain and compile,
checkpoints, evaluate, predict, export, numerics, the profiler's and AMP's readings. No loop and no process: the
engine (the training loop) and the kernel (a process's jobs) call these.

Why "domain" (and not "torch" or "ops"): these are the things a user of the app asks about — a model, a dataset, a
checkpoint — each done once, here; the layers above only decide when and where. Unlike `ground` below it, this
layer imports torch, so the window's process never imports it (an import-linter contract).
"""
