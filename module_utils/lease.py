"""A lease the controller renews on a host, and that the host enforces itself: a process the
controller started there (the benchmark client, the GPU telemetry sampler) stops once the lease
has gone unrenewed for its time to live.

A controller that is gone (Ctrl-C, kill -9, a lost connection) renews nothing, whatever the
connection: over SSH with ControlPersist the master connection outlives the controller and the
host's processes see no hang-up, so only a deadline the host keeps itself stops them in time.
The lease is a file whose mtime is the last renewal, by the host's clock on both sides."""

from __future__ import annotations

import os
import time


def renew(path: str) -> None:
    """Renew (or take) the lease at path: a 0600 file whose mtime is now."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.utime(fd)
    finally:
        os.close(fd)


def age(path: str, now=time.time) -> float | None:
    """Seconds since the lease at path was last renewed; None when there is none."""
    try:
        return max(0.0, now() - os.stat(path).st_mtime)
    except OSError:
        return None


def expired(path: str, ttl: float, now=time.time) -> bool:
    """True once the lease at path is missing or older than ttl seconds."""
    seconds = age(path, now)
    return seconds is None or seconds > ttl
