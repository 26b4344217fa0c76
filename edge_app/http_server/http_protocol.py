"""cheroot's connection handling with the limits of :mod:`edge_app.http_server.http_limits`.

cheroot (a thread-per-request WSGI server) is kept: it parks idle keep-alive sockets in a
selector rather than in threads, and its request parsing is mature. What it lacks out of the
box, and what this module adds by subclassing its documented extension points
(``ConnectionClass``, ``RequestHandlerClass``, the SSL adapter):

- a deadline for the request line and headers as a whole. cheroot's socket timeout applies to
  each read, so a client sending one byte every few seconds held a worker forever;
- separate size limits for the request line (414) and the headers (431), read in small pieces
  so a 100 MiB header costs 32 KiB of memory, not 100 MiB;
- the TLS handshake in the worker, under the same deadline. cheroot does it in the thread that
  accepts connections, so one client that connects and says nothing stopped every other client;
- errors from the server layer as JSON objects, like every other error of the API.
"""
from __future__ import annotations

import _pyio
import json
import logging
import select
import socket
import ssl
import threading
import time
from http import HTTPStatus
from typing import Any, Callable, Optional

from cheroot import errors, server, wsgi
from cheroot.makefile import MakeFile, StreamReader
from cheroot.ssl.builtin import BuiltinSSLAdapter

from werkzeug.exceptions import RequestEntityTooLarge, RequestTimeout

from edge_app.http_server.http_limits import HttpLimits

logger = logging.getLogger(__name__)


class ReadDeadline:
    """A point in time after which reads from one connection fail with a timeout."""

    def __init__(self) -> None:
        self._at: Optional[float] = None

    def arm(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def remaining_s(self) -> Optional[float]:
        """Seconds left, or None when no deadline is set."""
        return None if self._at is None else self._at - time.monotonic()


class _DeadlineSocketIO(socket.SocketIO):
    """A socket reader whose every receive waits at most until the connection's deadline."""

    def __init__(self, sock: socket.socket, deadline: ReadDeadline, timeout_s: float):
        super().__init__(sock, "rb")
        self._deadline = deadline
        self._timeout_s = timeout_s

    def readinto(self, buffer: Any) -> Optional[int]:
        remaining_s = self._deadline.remaining_s()
        if remaining_s is None:
            return super().readinto(buffer)
        if remaining_s <= 0:
            # cheroot answers 408 to exactly this exception while a request is being read.
            raise socket.timeout("timed out")
        self._sock.settimeout(min(remaining_s, self._timeout_s))
        try:
            return super().readinto(buffer)
        finally:
            self._sock.settimeout(self._timeout_s)


class _DeadlineReader(StreamReader):
    def __init__(self, sock: socket.socket, bufsize: int, deadline: ReadDeadline, timeout_s: float):
        # StreamReader's own __init__ would build a plain SocketIO; the rest of it is reused.
        _pyio.BufferedReader.__init__(self, _DeadlineSocketIO(sock, deadline, timeout_s), bufsize)
        self.bytes_read = 0


def _reason(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return "Error"


def _json_error(message: str) -> bytes:
    return json.dumps({"error": message}).encode("utf-8")


_BODY_LATE = "the request body did not arrive in time"
#: A body the app left unread is read away in pieces of this size, never into one buffer.
_DRAIN_PIECE_BYTES = 64 * 1024


# The app reads the body itself; a body that misses its deadline must reach it as an HTTP
# error (answered 408 in JSON), not as a socket exception it would report as a 500.
class _TimedBody(server.KnownLengthRFile):
    def __init__(self, rfile: Any, content_length: int, request: server.HTTPRequest):
        super().__init__(rfile, content_length)
        self._request = request

    def _late(self, err: Exception) -> RequestTimeout:
        self._request.close_connection = True  # the rest of the body will not be read
        return RequestTimeout(_BODY_LATE)

    def read(self, size: Optional[int] = None) -> bytes:
        try:
            return super().read(size)
        except socket.timeout as err:
            raise self._late(err) from err

    def readline(self, size: Optional[int] = None) -> bytes:
        try:
            return super().readline(size)
        except socket.timeout as err:
            raise self._late(err) from err


class _LimitedChunkedRFile(server.ChunkedRFile):
    def _fetch(self) -> None:
        try:
            super()._fetch()
        except socket.timeout as err:
            raise RequestTimeout(_BODY_LATE) from err
        except OSError as err:
            # cheroot's only way of saying the chunks passed the limit.
            if str(err) == "Request Entity Too Large":
                raise RequestEntityTooLarge() from err
            raise


class GuardedRequest(server.HTTPRequest):
    """Reads a request under the header deadline and size limits; errors answer JSON."""

    server: "GuardedWsgiServer"
    conn: "GuardedConnection"

    def parse_request(self) -> None:
        limits = self.server.limits
        self.server.body_limit_for(None)
        self.conn.read_deadline.arm(limits.header_deadline_s)
        # cheroot's SizeCheckWrapper reads lines in 256-byte pieces and counts as it goes.
        self.rfile = server.SizeCheckWrapper(self.conn.rfile, limits.max_request_line_bytes)
        try:
            if not self.read_request_line():
                return
        except errors.MaxSizeExceeded:
            self.simple_response("414", f"the request line is longer than {limits.max_request_line_bytes} bytes")
            return
        self.rfile = server.SizeCheckWrapper(self.conn.rfile, limits.max_header_bytes)
        # The limit of this request's body, known from its method and path before its headers
        # are read: cheroot then answers 413 to a larger Content-Length without reading the body.
        self.server.body_limit_for(self._is_upload(limits))
        try:
            if not self.read_request_headers():
                return
        except errors.MaxSizeExceeded:
            self.simple_response("431", f"the request headers are larger than {limits.max_header_bytes} bytes")
            return
        self.conn.read_deadline.arm(self._body_deadline_s(limits))
        self.ready = True

    def _is_upload(self, limits: HttpLimits) -> bool:
        if limits.upload_path_prefixes and self.method in (b"PUT", b"POST"):
            path = (self.path or b"").decode("latin-1")
            return path.startswith(limits.upload_path_prefixes)
        return False

    def _body_deadline_s(self, limits: HttpLimits) -> float:
        return limits.upload_deadline_s if self._is_upload(limits) else limits.body_deadline_s

    def respond(self) -> None:
        """cheroot's respond, with a chunked body over the limit answered 413 by the app rather
        than an IOError the app would turn into 500 (a declared length was checked already)."""
        if self.chunked_read:
            self.rfile = _LimitedChunkedRFile(self.conn.rfile, self.server.max_request_body_size)
        else:
            self.rfile = _TimedBody(self.conn.rfile, int(self.inheaders.get(b"Content-Length", 0)), self)
        self.server.gateway(self).respond()
        if self.ready:
            self.ensure_headers_sent()
        if self.chunked_write:
            self.conn.wfile.write(b"0\r\n\r\n")

    def send_headers(self) -> None:
        # cheroot reads what the app left of the body before answering on a kept-alive
        # connection; a body that is late then closes the connection instead of raising here.
        # A 413, or an answer saying "Connection: close" (a refused upload of gigabytes), closes
        # the connection instead of reading a body nobody wants.
        if bytes(self.status[:3]) == b"413" or (b"connection", b"close") in (
                (key.lower(), value.lower()) for key, value in self.outheaders):
            self.close_connection = True
        # Only a body within api.max_body_bytes is read away (in pieces); a larger one left unread
        # (an upload refused before its body, a 404 under an upload path) closes the connection.
        unread = getattr(self.rfile, "remaining", 0) if not self.chunked_read else 0
        if unread > self.server.plain_body_limit_bytes():
            self.close_connection = True
        if not self.close_connection and unread > 0:
            try:
                while self.rfile.remaining > 0 and self.rfile.read(min(self.rfile.remaining, _DRAIN_PIECE_BYTES)):
                    pass
            except RequestTimeout:
                self.close_connection = True
        super().send_headers()

    def simple_response(self, status: Any, msg: Any = "") -> None:
        """Answer an error found by the server layer (before the app saw the request) and close."""
        code = int(str(status)[:3])
        message = msg.decode("latin-1") if isinstance(msg, bytes) else str(msg or "")
        message = self._sentence(code, message)
        body = _json_error(message)
        self.close_connection = True
        reason = _reason(code)
        head = (
            f"{self.server.protocol} {code} {reason}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "X-Content-Type-Options: nosniff\r\nConnection: close\r\n"
        )
        try:
            self.conn.wfile.write(head.encode("latin-1") + b"\r\n" + body)
        except OSError as err:
            if err.args and err.args[0] not in errors.socket_errors_to_ignore:
                raise
        logger.debug("answered %d to %s before the app: %s", code, getattr(self.conn, "remote_addr", None), message)

    def _sentence(self, code: int, message: str) -> str:
        limits = self.server.limits
        if code == 408:
            return (f"the request did not arrive in time (its headers within {limits.header_deadline_s:g} s, "
                    f"its body within {limits.body_deadline_s:g} s)")
        if code == 413:
            return (f"the request body is larger than the limit of {self.server.max_request_body_size} bytes "
                    f"({limits.body_limit_setting})")
        if code == 500:
            return "internal error; the appliance log has the details"
        return message.strip().rstrip(".") or _reason(code)


class GuardedConnection(server.HTTPConnection):
    """One client socket: reads under a deadline, TLS handshake done here rather than on accept."""

    RequestHandlerClass = GuardedRequest
    server: "GuardedWsgiServer"

    def __init__(self, http_server: "GuardedWsgiServer", sock: socket.socket, makefile: Callable[..., Any] = MakeFile):
        self.read_deadline = ReadDeadline()
        self.handshake_done = not isinstance(sock, ssl.SSLSocket)
        timeout_s = http_server.limits.socket_timeout_s

        def guarded_makefile(s: socket.socket, mode: str = "r", bufsize: int = _pyio.DEFAULT_BUFFER_SIZE) -> Any:
            if "r" in mode:
                return _DeadlineReader(s, bufsize, self.read_deadline, timeout_s)
            return makefile(s, mode, bufsize)

        super().__init__(http_server, sock, guarded_makefile)

    def communicate(self) -> bool:
        if not self.handshake_done:
            if not self._handshake():
                return False
        return super().communicate()

    def _handshake(self) -> bool:
        """A non-blocking handshake under the header deadline: a client that connects and sends
        nothing, or its ClientHello a byte at a time, loses its worker when the deadline passes."""
        sock = self.socket
        deadline_s = time.monotonic() + self.server.limits.header_deadline_s
        sock.setblocking(False)
        try:
            while True:
                remaining_s = deadline_s - time.monotonic()
                if remaining_s <= 0:
                    logger.debug("TLS handshake with %s timed out", self.remote_addr)
                    return False
                try:
                    sock.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    select.select([sock], [], [], remaining_s)
                except ssl.SSLWantWriteError:
                    select.select([], [sock], [], remaining_s)
        except (ssl.SSLError, OSError) as err:
            # Plain HTTP on the HTTPS port, a scanner, a client that does not trust the
            # certificate: nothing the operator can act on, so not above debug.
            logger.debug("TLS handshake with %s failed: %s", self.remote_addr, err)
            return False
        finally:
            sock.settimeout(self.server.limits.socket_timeout_s)
        self.handshake_done = True
        self.ssl_env = self.server.ssl_adapter.get_environ(sock)
        return True


class DeferredHandshakeSSLAdapter(BuiltinSSLAdapter):
    """cheroot's builtin TLS, but ``wrap`` (called by the accepting thread) does no I/O."""

    def wrap(self, sock: socket.socket) -> Any:
        return self.context.wrap_socket(sock, do_handshake_on_connect=False, server_side=True), {}


class GuardedWsgiServer(wsgi.Server):
    """cheroot's WSGI server with :class:`GuardedConnection` and live body and logging hooks."""

    ConnectionClass = GuardedConnection
    # The connection loop notices stop() only when it next wakes; cheroot's 0.5 s would eat half
    # of the shutdown budget the appliance has after SIGTERM. Ten wakeups a second cost nothing.
    expiration_interval = 0.1

    def __init__(self, bind_addr: Any, wsgi_app: Any, *, limits: HttpLimits, body_limit_bytes: Callable[[], int],
                 upload_body_limit_bytes: Optional[Callable[[], int]] = None, server_name: str = "edge-app"):
        self.limits = limits
        self._body_limit_bytes = body_limit_bytes
        self._upload_body_limit_bytes = upload_body_limit_bytes or body_limit_bytes
        # Whether the request a worker thread is reading is an upload (limits.upload_path_prefixes):
        # cheroot asks the server, not the request, for the body limit.
        self._request_kind = threading.local()
        super().__init__(
            bind_addr,
            wsgi_app,
            numthreads=limits.threads,
            server_name=server_name,
            request_queue_size=limits.threads,
            timeout=limits.socket_timeout_s,
            accepted_queue_size=limits.max_waiting_connections,
            accepted_queue_timeout=0,  # a full queue must not stall the accepting thread
        )
        self.keep_alive_conn_limit = limits.max_keepalive_connections

    def body_limit_for(self, upload: Optional[bool]) -> None:
        """Set the kind of the request this thread reads (None: not known yet, the larger limit)."""
        self._request_kind.upload = upload

    def plain_body_limit_bytes(self) -> int:
        return self._body_limit_bytes()

    @property  # type: ignore[override]
    def max_request_body_size(self) -> int:
        # cheroot compares Content-Length with this before reading the body (and before sending
        # 100 Continue); reading the running configuration makes a changed limit apply at once.
        # Only requests to the upload paths get the upload limit: any other body is refused
        # above api.max_body_bytes before a byte of it is read, authenticated or not.
        upload = getattr(self._request_kind, "upload", None)
        if upload is None:
            return max(self._body_limit_bytes(), self._upload_body_limit_bytes())
        return self._upload_body_limit_bytes() if upload else self._body_limit_bytes()

    @max_request_body_size.setter
    def max_request_body_size(self, value: int) -> None:
        pass  # the running configuration is the one source of the limit

    def _serve_unservicable(self) -> None:
        """cheroot's 503 for connections beyond the queue, as JSON like every other error."""
        while self.ready:
            conn = self._unservicable_conns.get()
            if conn is server._STOPPING_FOR_INTERRUPT:
                return
            # Not over TLS before the handshake: answering would mean doing it in this thread.
            if getattr(conn, "handshake_done", True):
                try:
                    GuardedRequest(self, conn).simple_response("503", "the appliance is busy; retry in a moment")
                except Exception:  # being polite failed; the connection is closed either way
                    pass
            conn.linger = True
            conn.close()

    def error_log(self, msg: str = "", level: int = logging.INFO, traceback: bool = False) -> None:
        """cheroot writes its own errors to stderr; send them through logging like everything else."""
        logger.log(level, "%s", msg, exc_info=traceback)
