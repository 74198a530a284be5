"""The child side of a run: what runs in a kernel process and imports PyTorch (the kernel's main loop and its job
handlers, a run's files and record, the finders, reports, torchrun and the fork server's program).

The window's process never imports this package (an import-linter contract forbids it whole); the CLI and the
benchmarks do, to train in their own process (`launch.start_run` with `where="here"`). The parent side — starting
kernels, talking to them, hosts over SSH — is `core/run`, and imports nothing of this.
"""
