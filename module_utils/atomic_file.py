"""Write a file whole or not at all: a temporary file beside it, flushed and fsynced, then renamed
over it, so a reader (or a crash) never sees half of it."""

from __future__ import annotations

import os


def atomic_write(path: str, text: str | bytes, mode: int = 0o666) -> None:
    """Replace path with text (str, written as UTF-8, or bytes). mode goes through the umask as with open() (0o666, open()'s own, is
    usually 0644 on disk; 0o600 keeps it to the owner from the first byte)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        os.unlink(tmp)  # a leftover of a crashed writer with this pid would keep its old mode
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
