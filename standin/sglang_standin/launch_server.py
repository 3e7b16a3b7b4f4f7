"""`python -m sglang_standin.launch_server <sglang.launch_server flags>`"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Sequence

from . import config, dist, logs
from .server import StandinServer


async def _serve(server: StandinServer) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    start = loop.create_task(server.start())
    waiter = loop.create_task(stop.wait())
    await asyncio.wait({start, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if start.done() and start.exception() is not None:
        raise start.exception()
    await stop.wait()
    start.cancel()
    logs.uvicorn_log.info("Shutting down")
    await server.http.close()
    logs.uvicorn_log.info("Finished server process")


def _group_unknown(unknown: Sequence[str]) -> list:
    """['--foo', 'bar', '--baz'] -> ['--foo bar', '--baz']: a flag with its values."""
    grouped: list = []
    for item in unknown:
        if item.startswith("-") or not grouped:
            grouped.append(item)
        else:
            grouped[-1] += " " + item
    return grouped


def main(argv: Sequence[str] | None = None) -> int:
    args, unknown = config.parse_args(argv)
    logs.configure(args.log_level)
    for flag in _group_unknown(unknown):
        logs.main_log.warning("sglang-standin: ignoring unknown argument %s", flag)
    try:
        dist.check_args(args)
        server = StandinServer(args)
    except ValueError as exc:
        logs.main_log.error("%s", exc)
        return 2
    asyncio.run(_serve(server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
