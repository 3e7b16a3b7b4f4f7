"""SGLang's log format: `[2026-01-01 12:00:00 TP0] message`, uvicorn's lines as
`[2026-01-01 12:00:00] INFO:     message`, all on stderr."""

from __future__ import annotations

import logging
import sys

DATEFMT = "%Y-%m-%d %H:%M:%S"

#: SGLang's main process, its scheduler (rank TP0) and uvicorn.
main_log = logging.getLogger("sglang.srt.entrypoints.http_server")
scheduler_log = logging.getLogger("sglang.srt.managers.scheduler")
uvicorn_log = logging.getLogger("uvicorn.error")


class _SGLangFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        if record.name.startswith("uvicorn"):
            # uvicorn's "%(levelprefix)s %(message)s", as SGLang configures it.
            levelprefix = record.levelname + ":" + " " * (8 - len(record.levelname))
            record.prefix = ""
            record.body = f"{levelprefix} {record.getMessage()}"
        else:
            record.prefix = " TP0" if record.name == scheduler_log.name else ""
            record.body = record.getMessage()
        return super().format(record)


def configure(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_SGLangFormatter("[%(asctime)s%(prefix)s] %(body)s", DATEFMT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.INFO))


def flush() -> None:
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
