"""torchrun, as Workbench starts it (`python -m workbench.core.kernel.torchrun …`, or the frozen app's
--workbench-torchrun): torch's own launcher, with two changes made before it runs.

- Every c10d store torchrun hosts listens only on the address in STORE_ADDRESS_ENV (127.0.0.1 on one machine, the
  --master-addr given on several): torch's TCPStore binds all interfaces (`::`) whatever host it is given, so a
  socket already bound to the address is handed to it instead (its `master_listen_fd`).
- torchrun's own temp files (a `torchelastic_*` folder per run) go to TORCHRUN_TEMP_ENV, a folder the parent
  removes; the ranks keep the usual temp folder (and the compile cache there).

Only torchrun's process imports this module; the window never does.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
import tempfile
from typing import Sequence

from ..run.process import STORE_ADDRESS_ENV, TORCHRUN_TEMP_ENV


def torchrun_main(argv: Sequence[str]) -> None:
    """torchrun, with every c10d store it hosts listening only on STORE_ADDRESS_ENV (when set). torch's TCPStore
    binds all interfaces (`::`) whatever host it is given; a socket already bound to the address is handed to it
    instead (its `master_listen_fd`)."""
    if os.environ.get(TORCHRUN_TEMP_ENV):  # torchrun's own files only: the ranks keep the usual temp folder (and
        tempfile.tempdir = os.environ[TORCHRUN_TEMP_ENV]  # with it the compile cache there)
    address = os.environ.get(STORE_ADDRESS_ENV)
    if address:
        _bind_stores_to(address)
    from torch.distributed.run import main

    main(list(argv))


def _bind_stores_to(address: str) -> None:
    import torch.distributed as dist
    from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend, static_tcp_rendezvous

    family = socket.AF_INET6 if ":" in address else socket.AF_INET

    class BoundTCPStore(dist.TCPStore):
        def __init__(self, host_name, port, world_size=None, is_master=False, *args, **kwargs):
            if is_master and len(args) < 4 and kwargs.get("master_listen_fd") is None:
                try:
                    listener = socket.create_server((address, int(port)), family=family)
                except OSError as exc:  # as torch words it: its own retry on a port in use reads this
                    raise dist.DistNetworkError(f"cannot listen on {address}:{port}: address already in use"
                                                if exc.errno == errno.EADDRINUSE else
                                                f"cannot listen on {address}:{port}: {exc}") from None
                port = listener.getsockname()[1]
                kwargs["master_listen_fd"] = listener.detach()
            super().__init__(host_name, port, world_size, is_master, *args, **kwargs)

    dist.TCPStore = BoundTCPStore
    c10d_rendezvous_backend.TCPStore = BoundTCPStore
    static_tcp_rendezvous.TCPStore = BoundTCPStore


if __name__ == "__main__":
    torchrun_main(sys.argv[1:])
