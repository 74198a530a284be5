"""Another machine, reached over the system's OpenSSH client: the connection and how its failures are explained
(ssh), the host's end of a session (host, run there as `python -m workbench.core.run.remote.host`), what the host
answers (wire), kernels, runs and files there seen from this computer (kernels), and the service jobs done there
(service). Torch-free on this side; nothing listens on any network interface on either side."""
