"""Reaching another machine through the system's OpenSSH client. Torch-free.

Why the system's `ssh` and not a Python SSH library: the user's `~/.ssh/config`, agent, keys, jump hosts and
known_hosts then just work, as they do for git. `WORKBENCH_SSH` names another ssh command with its options, as git's
`GIT_SSH_COMMAND` does. Every session carries its protocol on the session's stdin/stdout (one end of a socketpair
here), so nothing listens on any interface on either machine and no secret is ever on a command line.

The options Workbench adds, and why: `BatchMode=yes` (a password or passphrase prompt would block with no terminal
to answer it: use the agent), `StrictHostKeyChecking=yes` (an unknown or changed host key is refused, never
silently accepted), `ConnectTimeout` (an unreachable host fails within a bound), `ServerAlive*` (a dropped
connection is noticed within ~15 s, even when nothing is being sent).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import tempfile
from dataclasses import dataclass

from ...ground.errors import WorkbenchError
from ..protocol import PROTOCOL_VERSION, Lines, send
from .wire import Hello

SSH_ENV = "WORKBENCH_SSH"
CONNECT_TIMEOUT_S = 10  # ssh's own bound on reaching the host (TCP and the key exchange)
HELLO_TIMEOUT_S = 30.0  # the first contact as a whole: connect, log in, start Python, answer
REMOTE_MODULE = "workbench.core.run.remote.host"
INSTALL_HINT = "install it there with `{python} -m pip install workbench` (the same version as this computer's)"
_HOST = re.compile(r"^(?:(?P<user>[^@\s:/]+)@)?(?P<name>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:]+\])(?::(?P<port>\d+))?$")


class RemoteError(WorkbenchError):
    """A remote host could not be used; `step` says which step of the connection failed (address, name
    resolution, connection, host key, authentication, remote start, version, session, protocol: the host sent
    what is not Workbench's protocol — reconnecting would only meet it again)."""

    kind = "remote"

    def __init__(self, step: str, message: str, hint: str = ""):
        super().__init__(message, hint)
        self.step = step


@dataclass(frozen=True)
class Remote:
    """A host as the user names it (`[user@]host[:port]`, or an alias of their ~/.ssh/config) and the Python there
    that has Workbench installed (a command: `python3`, `/opt/venv/bin/python`, `conda run -n ml python`)."""

    user: str | None
    name: str
    port: int | None = None
    python: str = "python3"

    @classmethod
    def parse(cls, text: str, python: str = "python3") -> "Remote":
        match = _HOST.match(text.strip())
        if not match or match["name"].startswith("-"):
            raise RemoteError("address", f"'{text}' is not a host", "write it as host, user@host or user@host:port")
        port = int(match["port"]) if match["port"] else None
        if port is not None and not 1 <= port <= 65535:
            raise RemoteError("address", f"port {port} in '{text}' is not a TCP port (1…65535)")
        if not python.strip():
            raise RemoteError("address", "no remote Python was given", "the default is python3")
        _words(python, "the remote Python", "quote it as a shell would, e.g. '/opt/my env/bin/python'")
        return cls(match["user"], match["name"].strip("[]"), port, python.strip())

    def __str__(self) -> str:
        name = f"[{self.name}]" if ":" in self.name else self.name
        return (f"{self.user}@" if self.user else "") + name + (f":{self.port}" if self.port else "")

    def terminal_command(self, *words: str) -> str:
        """How the user reaches it with ssh in a terminal (ssh takes no `host:port`: the port is its -p), with
        `words` before the host (options) — e.g. `ssh -o BatchMode=yes -p 2222 me@gpu-box`."""
        return " ".join(["ssh", *words, *(["-p", str(self.port)] if self.port else []),
                         (f"{self.user}@" if self.user else "") + self.name])

    @property
    def known_hosts_name(self) -> str:
        """Its name in known_hosts (and for `ssh-keygen -R`): `[name]:port` when the port is not 22."""
        return f"[{self.name}]:{self.port}" if self.port and self.port != 22 else self.name

    # -- the command ------------------------------------------------------------------------------------------
    def ssh_command(self, *args: str) -> list[str]:
        """ssh running `remote.host ARGS…` with the remote Python; every word quoted for the remote shell."""
        base = ssh_program()
        options = ["-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o",
                   f"ConnectTimeout={CONNECT_TIMEOUT_S}", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]
        if self.port:
            options += ["-p", str(self.port)]
        if self.user:
            options += ["-l", self.user]
        remote = [*shlex.split(self.python), "-m", REMOTE_MODULE, *args]
        return [*base, *options, self.name, " ".join(shlex.quote(word) for word in remote)]

    # -- sessions ---------------------------------------------------------------------------------------------
    def open(self, *args: str, first_line: str | None = None) -> "Session":
        """An SSH session running `remote.host ARGS…`, its stdin/stdout one end of a socketpair (the other is
        `session.conn`); `first_line` is sent before anything else (a request: on stdin, never on a command line)."""
        return Session(self, args, first_line)

    def hello(self, timeout: float = HELLO_TIMEOUT_S) -> Hello:
        """The first contact: the host answers which Workbench, protocol and Python it runs; a RemoteError says
        which step failed and what to do (within `timeout` seconds, whatever the network does)."""
        session = self.open("hello")
        try:
            message = session.read(timeout, "during first contact")
            if message is None:
                raise RemoteError("connection", f"{self} did not answer within {timeout:.0f} s",
                                  "check the host name and that it is up (`ssh HOST` in a terminal)")
        finally:
            session.close()
        try:
            hello = Hello.from_dict(message)
        except ValueError:
            raise RemoteError("version", f"{self} answered in a way this Workbench cannot read ({message!r:.200})",
                              INSTALL_HINT.format(python=self.python)) from None
        if hello.protocol != PROTOCOL_VERSION:
            newer = hello.protocol > PROTOCOL_VERSION
            raise RemoteError("version", f"{self} runs workbench {hello.workbench} (protocol {hello.protocol}), "
                                         f"this window needs protocol {PROTOCOL_VERSION}",
                              f"the host's Workbench is {'newer' if newer else 'older'}: "
                              + ("update this computer's to its version, or " if newer else "")
                              + INSTALL_HINT.format(python=self.python))
        return hello


def ssh_program() -> list[str]:
    """The ssh command and its own options: WORKBENCH_SSH's words, else `ssh`."""
    return _words(os.environ.get(SSH_ENV) or "ssh", SSH_ENV, "quote it as a shell would, as for GIT_SSH_COMMAND")


def _words(text: str, what: str, hint: str) -> list[str]:
    """A command line split as a shell splits it; a RemoteError (not a traceback) for one no shell could run."""
    try:
        words = shlex.split(text)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise RemoteError("address", f"{what} ({text!r}) cannot be read as a command: {str(exc).lower()}",
                          hint) from None
    if not words:
        raise RemoteError("address", f"{what} is empty", hint)
    return words


class Session:
    """One running `ssh HOST … remote.host …`: `conn` carries the messages, `stderr` keeps what ssh (and the remote
    program) said on the way, for explaining a failure."""

    def __init__(self, remote: Remote, args: tuple[str, ...], first_line: str | None):
        self.remote = remote
        self.stderr = tempfile.TemporaryFile()
        ours, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen(remote.ssh_command(*args), stdin=theirs, stdout=theirs,
                                            stderr=self.stderr, start_new_session=True)
        except OSError as exc:
            ours.close()
            self.stderr.close()
            command = ssh_program()[0]
            raise RemoteError("connection", f"cannot run {command}: {exc.strerror or exc}",
                              "install OpenSSH's client, or name yours in WORKBENCH_SSH") from None
        finally:
            theirs.close()
        self.conn = ours
        self.lines = Lines(ours)
        self.received = 0  # messages read: a line that is not the protocol before the first is the login's
        if first_line is not None:
            try:
                ours.sendall(first_line.encode() + b"\n")
            except OSError:
                pass  # ssh ended already: the first read says why

    def read(self, timeout: float | None, when: str) -> dict | None:
        """The next message; None on timeout; a RemoteError (explained from ssh's words) when the session ended,
        or (step "protocol") when the host sent what is not a message of Workbench's protocol."""
        try:
            message = self.lines.read(timeout)
        except (EOFError, OSError):  # OSError: the session was ended from another thread (`hang_up`)
            raise self.failure(when) from None
        except ValueError as exc:  # not JSON (its text is the error's doc), or a line over the limit
            raise self.garbled(getattr(exc, "doc", None) or str(exc), when) from None
        if message is not None and not isinstance(message, dict):
            raise self.garbled(json.dumps(message), when)
        if message is not None:
            self.received += 1
        return message

    def garbled(self, line: str, when: str) -> RemoteError:
        """The host sent `line`, which is no message of the protocol: before any message, its login printed it
        (a banner, an `echo` in ~/.bashrc, which ssh runs for every session); later, the host's program is not
        this Workbench's. Either way, connecting again would only meet it again."""
        shown = line.strip()[:120] + ("…" if len(line.strip()) > 120 else "")
        if not self.received:
            return RemoteError("protocol", f"{self.remote} printed {shown!r} before Workbench started {when}: its "
                                           "login prints to the session's output, which carries Workbench's messages",
                               "make the host's shell startup print only in interactive sessions (e.g. "
                               "`[[ $- == *i* ]] || return` at the top of ~/.bashrc) or to stderr: "
                               f"`{self.remote.terminal_command()} true` must print nothing")
        return RemoteError("protocol", f"{self.remote} sent a line that is not Workbench's protocol {when}: "
                                       f"{shown!r}",
                           f"something on the host writes to the session's output beside Workbench (a wrapper "
                           f"around {self.remote.python}?): give the Python that has Workbench installed itself")

    def send(self, message: dict) -> bool:
        try:
            send(self.conn, message)
            return True
        except OSError:
            return False

    def failure(self, when: str) -> RemoteError:
        """Why the session ended, in words: ssh's exit and its last words, explained."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return explain(self.remote, code, self.said(), when)

    def said(self) -> str:
        if self.stderr.closed:
            return ""
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def hang_up(self) -> None:
        """End the session from another thread: its reader wakes up at once and hears that it ended (the socket
        is shut down, not closed under it: a closed descriptor may be reused while the reader still waits on it)."""
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # ended already

    def close(self) -> None:
        """End the session (the remote side sees EOF: a service kernel exits, a detached run trains on)."""
        self.conn.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr.close()


def explain(remote: Remote, code: int | None, said: str, when: str) -> RemoteError:
    """A failed session as the step that failed and what to do, from ssh's exit code and what it printed."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    text = said.lower()
    if "could not resolve hostname" in text or "name or service not known" in text:
        return RemoteError("name resolution", f"the name {remote.name} cannot be resolved ({last})",
                           "check its spelling, or add it to ~/.ssh/config")
    if "remote host identification has changed" in text:
        return RemoteError("host key", f"{remote.name}'s host key has changed since you last connected: refused "
                                       "(someone may be intercepting the connection, or the machine was reinstalled)",
                           f"if you know why it changed, remove the old key with "
                           f"`ssh-keygen -R '{remote.known_hosts_name}'` and connect once with "
                           f"`{remote.terminal_command()}` in a terminal to check the new one")
    if "host key verification failed" in text or "no matching host key" in text:
        return RemoteError("host key", f"{remote.name}'s host key is not known on this computer: refused",
                           f"connect once with `{remote.terminal_command()}` in a terminal, check the fingerprint it "
                           "shows and answer yes; Workbench never accepts an unknown key by itself")
    if "permission denied" in text or "too many authentication failures" in text:
        return RemoteError("authentication", f"SSH could not log in to {remote}: {last}",
                           "Workbench never asks for a password: add your key to the agent (`ssh-add`) or name it "
                           "in ~/.ssh/config (IdentityFile), and check that "
                           f"`{remote.terminal_command('-o', 'BatchMode=yes')} true` works")
    for symptom in ("connection refused", "timed out", "no route to host", "network is unreachable",
                    "connection closed by", "connection reset"):
        if symptom in text and code == 255:
            return RemoteError("connection", f"cannot reach {remote} {when}: {last}",
                               "check the host and port, and that its SSH server is up")
    if f"no module named {REMOTE_MODULE}" in text or f"no module named '{REMOTE_MODULE}" in text:
        return RemoteError("version", f"the Workbench on {remote.name} ({remote.python}) is another version: it has no "
                                      f"{REMOTE_MODULE}", INSTALL_HINT.format(python=remote.python))
    if "no module named workbench" in text or "no module named 'workbench" in text:
        return RemoteError("remote start", f"workbench is not installed on {remote.name} ({remote.python})",
                           INSTALL_HINT.format(python=remote.python))
    if code == 127 or "command not found" in text or "no such file or directory" in text:
        return RemoteError("remote start", f"{remote.python} was not found on {remote.name} ({last})",
                           "name the remote Python that has Workbench installed (--remote-python, or the field "
                           "in Connect to…)")
    if code == 255:
        return RemoteError("connection", f"the SSH connection to {remote} failed {when}: {last or 'no message'}",
                           f"try `{remote.terminal_command('-o', 'BatchMode=yes')} true` in a terminal")
    how = "was cut" if code is None or code < 0 else f"ended (code {code})"
    return RemoteError("session", f"the session on {remote} {how} {when}" + (f": {last}" if last else ""),
                       "connect again; a run on the host trains on there and can be attached again")

