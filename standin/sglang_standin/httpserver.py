"""A small HTTP/1.1 server on asyncio: keep-alive, Content-Length and chunked bodies,
and streamed (chunked) responses for server-sent events. Enough for SGLang's API."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

access_log = logging.getLogger("uvicorn.access")
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list]
    version: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    client: str

    def json(self):
        return json.loads(self.body or b"null")


@dataclass
class Response:
    status: int = 200
    body: bytes | str | dict | list | None = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    #: Set for streamed responses: yields chunks, sent with chunked encoding.
    stream: AsyncIterator[bytes] | None = None
    on_close: Callable[[], None] | None = None


def json_response(data, status: int = 200) -> Response:
    return Response(status, json.dumps(data).encode())


Handler = Callable[[Request], Awaitable[Response]]


class BadRequest(Exception):
    pass


class HTTPServer:
    def __init__(self, handler: Handler):
        self.handler = handler
        self.server: asyncio.base_events.Server | None = None
        self.connections: set = set()

    async def start(self, host: str, port: int) -> None:
        self.server = await asyncio.start_server(
            self._serve_connection, host, port, backlog=4096, limit=MAX_HEADER_BYTES
        )

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for writer in list(self.connections):
            writer.close()

    async def _serve_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        client = f"{peer[0]}:{peer[1]}"
        self.connections.add(writer)
        try:
            while True:
                try:
                    request = await self._read_request(reader, client)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except (BadRequest, asyncio.LimitOverrunError, ValueError) as exc:
                    await self._send(writer, Response(400, {"error": str(exc)}), "HTTP/1.1", False)
                    return
                if request is None:
                    return
                keep_alive = self._keep_alive(request)
                try:
                    response = await self.handler(request)
                except Exception:  # a handler bug must not kill the connection loop
                    logging.getLogger(__name__).exception("Exception in ASGI application")
                    response = Response(500, b"Internal Server Error", "text/plain")
                access_log.info('%s - "%s %s %s" %d %s', client, request.method, request.path,
                                request.version, response.status, _reason(response.status))
                ok = await self._send(writer, response, request.version, keep_alive)
                if not ok or not keep_alive:
                    return
        finally:
            self.connections.discard(writer)
            writer.close()

    @staticmethod
    def _keep_alive(request: Request) -> bool:
        conn = request.headers.get("connection", "").lower()
        if request.version == "HTTP/1.0":
            return conn == "keep-alive"
        return conn != "close"

    async def _read_request(self, reader: asyncio.StreamReader, client: str) -> Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial.strip():
                return None
            raise
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
        except ValueError:
            raise BadRequest("malformed request line") from None
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if not line:
                continue
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = b""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = await self._read_chunked(reader)
        elif "content-length" in headers:
            length = int(headers["content-length"])
            if length > MAX_BODY_BYTES:
                raise BadRequest("body too large")
            body = await reader.readexactly(length)
        if headers.get("expect", "").lower() == "100-continue":
            pass  # body already read; clients that wait for 100 fall back after a timeout
        url = urlsplit(target)
        return Request(method.upper(), url.path, parse_qs(url.query), version, headers, body, client)

    @staticmethod
    async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
        parts = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)

    async def _send(self, writer: asyncio.StreamWriter, response: Response, version: str,
                    keep_alive: bool) -> bool:
        """Write the response; False when the client went away."""
        body = response.body
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        body = body or b""
        head = [f"HTTP/1.1 {response.status} {_reason(response.status)}",
                "server: uvicorn", f"content-type: {response.content_type}"]
        head += [f"{k}: {v}" for k, v in response.headers.items()]
        head.append("connection: keep-alive" if keep_alive else "connection: close")
        try:
            if response.stream is None:
                head.append(f"content-length: {len(body)}")
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
                await writer.drain()
                return True
            head.append("transfer-encoding: chunked")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            async for chunk in response.stream:
                if chunk:
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        except (ConnectionError, RuntimeError):
            return False
        finally:
            if response.stream is not None:
                await _aclose(response.stream)
            if response.on_close is not None:
                response.on_close()


async def _aclose(stream) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:
            pass


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def parse_bearer(headers: dict[str, str]) -> tuple[str | None, str | None]:
    """(scheme, token) of the Authorization header, or (None, None)."""
    value = headers.get("authorization")
    if not value:
        return None, None
    scheme, _, token = value.partition(" ")
    return scheme, token if _ else None
