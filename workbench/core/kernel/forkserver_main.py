"""The fork server's own program: import PyTorch once, then fork a kernel per request (see forkserver.py for why,
and for the messages). Run by forkserver.ForkServer as `python -m workbench.core.kernel.forkserver_main FD`."""

from __future__ import annotations

import atexit
import gc
import json
import os
import selectors
import socket
import sys
import traceback

from ..run.forkserver import MAX_MESSAGE


def preload() -> None:
    """Import what every kernel imports, and nothing that starts a thread, touches CUDA or runs a tensor op."""
    from . import job_handlers  # noqa: F401 - torch, Dynamo, the engine, the domain


def preload_when_idle() -> None:
    """What a run imports later: imported once the server has nothing to fork, so that the first kernels (the
    window's service kernel and spare, waiting at launch) are not held up for it, and later ones start with it."""
    import safetensors.torch  # noqa: F401 - a run's checkpoint
    import torch._inductor.compile_fx  # noqa: F401 - a compiled run's compiler (~1.4 s of import)
    import torchvision.datasets  # noqa: F401 - the datasets (the bundled sample is read through it)


def serve(sock: socket.socket) -> int:
    """Fork a child per spawn request until the parent closes the socket; report each child's exit."""
    preload()
    gc.freeze()  # imported objects are never collected: children neither walk nor copy them (copy-on-write)
    sock.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    idle_work = [preload_when_idle]
    caught_up = False  # the parent has sent what waited for "ready": idle work may start once none is left
    children: dict[int, int] = {}  # pidfd → pid
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    while True:
        ready = selector.select(timeout=0 if idle_work and caught_up else None)
        if not ready:
            idle_work.pop(0)()
            gc.freeze()
            continue
        for key, _ in ready:
            if key.fileobj is not sock:
                pid = children.pop(key.fd)
                selector.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                _reply(sock, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})
                continue
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 2)
            except OSError:
                data, fds = b"", []
            if not data:
                return 0  # the parent has gone; the children live on, each with its own parent connection
            request = json.loads(data)
            if request.get("caught_up"):
                caught_up = True
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _become_kernel(request, fds, [sock.fileno(), *children], selector)  # never returns
            for fd in fds:
                os.close(fd)
            pidfd = os.pidfd_open(pid)
            children[pidfd] = pid
            selector.register(pidfd, selectors.EVENT_READ)
            _reply(sock, {"forked": request["spawn"], "pid": pid})


def _reply(sock: socket.socket, message: dict) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        pass  # the parent has gone: the next read says so


def _become_kernel(request: dict, fds: list[int], server_fds: list[int], selector: selectors.BaseSelector) -> None:
    """In the forked child: take the request's environment, folder and stdio, run the kernel, exit. Never
    returns: the server's loop must not go on in a child."""
    code = 1
    try:
        os.setsid()  # its own process group: a stop ends it and whatever it starts, nothing else
        selector.close()
        for fd in server_fds:
            os.close(fd)
        stdout, stderr = fds
        devnull = os.open(os.devnull, os.O_RDONLY)
        for source, target in ((devnull, 0), (stdout, 1), (stderr, 2)):
            os.dup2(source, target)
            os.close(source)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _fresh_process_state()
        from .main import kernel_main

        code = kernel_main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - as an interpreter would: the traceback on stderr, exit code 1
        traceback.print_exc()
        code = 1
    finally:
        try:
            atexit._run_exitfuncs()  # what interpreter teardown would run (torch's compile workers shut down)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _fresh_process_state() -> None:
    """What a new interpreter would have had differently from a fork: its thread count, numpy's seed."""
    import numpy
    import torch

    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))
    numpy.random.seed()  # a new interpreter seeds numpy's global generator from the OS; a fork copies it


def server_main(argv: list[str]) -> int:
    return serve(socket.socket(fileno=int(argv[0])))


if __name__ == "__main__":
    raise SystemExit(server_main(sys.argv[1:]))
