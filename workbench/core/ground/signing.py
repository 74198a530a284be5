"""Proof that a file was written by this Workbench, for this user: an HMAC-SHA256 under a secret key of its own.

Why: some of what a run leaves in its folder is loaded later by code that unpickles — a compile cache goes to
`torch.compiler.load_cache_artifacts`, which runs whatever a crafted file holds. A run folder can be written by
others (a folder copied from elsewhere, a shared disk, `--out` pointing anywhere), and a later run warm-starts from
it by itself. So such a file is loaded only when it carries a signature that only this user's Workbench can make:
the key is random, made on first use in the data folder, readable by the user alone, and never leaves it (a host
signs with its own key; a folder copied from another machine or user carries a signature this key does not make).

A signature binds the bytes to what they are for (`purpose`, and any context the caller adds): bytes signed as
one run's compile cache for one key cannot be passed off as another purpose's.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from . import paths

KEY_NAME = "signing.key"  # in the data folder
KEY_BYTES = 32


def key_path() -> Path:
    return paths.data_dir() / KEY_NAME


def _key() -> bytes:
    """The user's signing key, made on first use. Two processes making it at once agree on one: each writes its own
    candidate privately, and the first one linked into place is the key for both (a link never replaces)."""
    path = key_path()
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    candidate = path.with_name(f".{KEY_NAME}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(KEY_BYTES))
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(candidate, path)
        except FileExistsError:
            pass  # another process made it first: theirs is the key
    finally:
        candidate.unlink(missing_ok=True)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    data = path.read_bytes()
    if len(data) != KEY_BYTES:
        raise OSError(f"{path} is not a signing key ({len(data)} bytes, not {KEY_BYTES})")
    return data


def sign(data: bytes, purpose: str) -> str:
    """The signature of `data` for `purpose` (hex). Raises OSError when the key cannot be read or made."""
    return hmac.new(_key(), purpose.encode("utf-8") + b"\0" + data, hashlib.sha256).hexdigest()


def verify(data: bytes, purpose: str, signature: str) -> bool:
    """Whether `signature` is this user's signature of `data` for `purpose` (False, never an error, for anything
    else: no signature, a malformed one, no key yet — then nothing was signed here)."""
    if not isinstance(signature, str) or not signature or not key_path().is_file():
        return False
    try:
        expected = sign(data, purpose)
    except OSError:
        return False
    return hmac.compare_digest(expected, signature)
