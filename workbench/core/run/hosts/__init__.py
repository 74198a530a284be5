"""Several SSH hosts as one run's machines: naming them (host_set.py) and checking them before anything starts
(preflight.py). Torch-free: the window and the CLI use it."""
