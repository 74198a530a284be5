"""A real OpenSSH server on 127.0.0.1 for the remote-kernel tests, with throw-away keys.

The "remote host" is this machine reached through sshd: the remote Python is a small script that runs this
checkout's interpreter, on this checkout's code, with folders of its own (the host's data folder is not the
window's), so a test sees what a user on a laptop talking to a GPU box sees — two histories, two sets of run files,
one SSH session between them.
`make test` installs `openssh-server` when it can (root and apt); without sshd these tests are skipped.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# The code under test is this checkout's, on both ends: the host's Python imports it first, whatever workbench the
# interpreter has installed (a test run from another checkout or virtual environment must not reach that one).
CHECKOUT = Path(__file__).resolve().parents[2]  # tests/support/sshd.py → the checkout
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)


@dataclass
class SshServer:
    """A running sshd: the `WORKBENCH_SSH` command that reaches it (key, known_hosts), its address for a Remote,
    and a remote Python whose Workbench keeps its files in `host_data`."""

    process: subprocess.Popen
    port: int
    folder: Path
    ssh_command: str
    remote_python: str
    host_data: Path
    ip: str = "127.0.0.1"

    @property
    def address(self) -> str:
        return f"{getpass.getuser()}@{self.ip}:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _free_port(ip: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((ip, 0))
        return probe.getsockname()[1]


def start_sshd(folder: Path, ip: str = "127.0.0.1", keys: Path | None = None,
               python_path: Path | None = None) -> SshServer:
    """An sshd on `ip` (any of 127.0.0.0/8: several "hosts" on this machine); `keys`: the folder of another server
    whose user key logs in here too and whose known_hosts learns this one (one ssh command reaches them all);
    `python_path`: a folder the host's Python finds packages in first (a planted version)."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    keys = keys or folder
    for name in ("host_key", "user_key") if keys == folder else ("host_key",):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    (folder / "authorized_keys").write_text((keys / "user_key.pub").read_text())
    port = _free_port(ip)
    host_key = (folder / "host_key.pub").read_text().split()
    with open(keys / "known_hosts", "a") as known:
        known.write(f"[{ip}]:{port} {host_key[0]} {host_key[1]}\n")
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation's empty folder
    config = folder / "sshd_config"
    config.write_text("\n".join([
        f"ListenAddress {ip}:{port}", f"HostKey {folder / 'host_key'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", f"PidFile {folder / 'sshd.pid'}",
        "LogLevel ERROR", ""]))
    process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=open(folder / "sshd.log", "wb"))
    deadline = time.monotonic() + 30
    while True:  # until it accepts connections (or has died)
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(folder / 'sshd.log').read_text()}")
        try:
            socket.create_connection((ip, port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    host_data = folder / "host-data"
    remote_python = folder / "remote-python"
    path = f"{python_path}:{CHECKOUT}" if python_path else str(CHECKOUT)
    remote_python.write_text(f"#!/bin/sh\nexport WORKBENCH_DATA_DIR={host_data} "
                             f"WORKBENCH_CACHE_DIR={folder / 'host-cache'} OMP_NUM_THREADS=1 PYTHONPATH={path}\n"
                             f"cd {folder}\nexec {sys.executable} \"$@\"\n")
    remote_python.chmod(0o755)
    ssh = (f"ssh -F /dev/null -i {keys / 'user_key'} -o IdentitiesOnly=yes "
           f"-o UserKnownHostsFile={keys / 'known_hosts'} -o LogLevel=ERROR")
    return SshServer(process, port, folder, ssh, str(remote_python), host_data, ip)
