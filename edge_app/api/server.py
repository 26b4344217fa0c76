"""``ApiServer``: the Flask app served by cheroot, a production WSGI server, in its own thread.

TLS: cheroot serves HTTPS through its SSL adapter. ``certfile`` (and ``keyfile`` when the key is
not in the certificate file) switch it on; the configuration schema has no TLS keys for the API
yet, so the caller decides where they come from.
"""
from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any, Callable, Iterable, Optional

from cheroot import wsgi

logger = logging.getLogger(__name__)

THREAD_NAME = "api:http"
# The WSGI environ key under which the server hands requests a threading.Event that is set when
# it stops: long-lived responses (MJPEG live views) watch it and finish instead of holding up
# shutdown until their viewer goes away.
SHUTDOWN_ENVIRON_KEY = "edge_app.api.stopping"

WsgiApp = Callable[[dict, Callable[..., Any]], Iterable[bytes]]


def _bind_error(err: OSError, host: str, port: int) -> OSError:
    """cheroot folds the OS error into its message; recover errno and strerror for the caller."""
    if err.errno is not None:
        return err
    found = re.search(r"\[Errno (\d+)\] ([^)]*)", str(err))
    if found:
        return OSError(int(found.group(1)), found.group(2))
    return OSError(f"cannot listen on {host}:{port}: {err}")


class _LoggingWsgiServer(wsgi.Server):
    """cheroot writes its own errors to stderr; send them through logging like everything else."""

    # The connection loop notices stop() only when it next wakes; cheroot's 0.5 s would eat half
    # of the shutdown budget the appliance has after SIGTERM. Ten wakeups a second cost nothing.
    expiration_interval = 0.1

    def error_log(self, msg: str = "", level: int = logging.INFO, traceback: bool = False) -> None:
        logger.log(level, "%s", msg, exc_info=traceback)


class ApiServer:
    """Serves ``app`` on ``host:port`` from a thread named ``api:http``.

    ``port=0`` asks the OS for a free port; :attr:`port` gives the real one after :meth:`start`.
    ``threads`` bounds concurrent requests (keep it above the app's live-view limit).
    """

    def __init__(
        self,
        app: WsgiApp,
        host: str = "127.0.0.1",
        port: int = 8080,
        *,
        certfile: Optional[str] = None,
        keyfile: Optional[str] = None,
        threads: int = 16,
        socket_timeout_s: float = 10.0,
    ):
        self._app = app
        self._host = host
        self._requested_port = port
        self._certfile = certfile
        self._keyfile = keyfile
        self._threads = threads
        self._socket_timeout_s = socket_timeout_s
        self._stopping = threading.Event()
        self._server: Optional[_LoggingWsgiServer] = None
        self._thread: Optional[threading.Thread] = None

    def _wsgi(self, environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        environ[SHUTDOWN_ENVIRON_KEY] = self._stopping
        return self._app(environ, start_response)

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        """The port actually listened on (the OS's pick when 0 was asked), once started."""
        if self._server is not None and isinstance(self._server.bind_addr, tuple):
            return int(self._server.bind_addr[1])
        return self._requested_port

    @property
    def url(self) -> str:
        scheme = "https" if self._certfile else "http"
        host = "127.0.0.1" if self._host in ("", "0.0.0.0") else self._host
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Bind and start serving. Binding happens here, so a busy port raises OSError at once."""
        if self._server is not None:
            raise RuntimeError("the API server was already started")
        server = _LoggingWsgiServer(
            (self._host, self._requested_port),
            self._wsgi,
            numthreads=self._threads,
            server_name="edge-app",
            timeout=self._socket_timeout_s,
        )
        if self._certfile:
            from cheroot.ssl.builtin import BuiltinSSLAdapter

            server.ssl_adapter = BuiltinSSLAdapter(self._certfile, self._keyfile)
        try:
            server.prepare()
        except OSError as err:
            raise _bind_error(err, self._host, self._requested_port) from err
        self._server = server
        self._thread = threading.Thread(target=self._serve, name=THREAD_NAME, daemon=True)
        self._thread.start()
        logger.info("REST API listening on %s", self.url)

    def _serve(self) -> None:
        assert self._server is not None
        try:
            self._server.serve()
        except Exception:
            logger.exception("the REST API server stopped with an error")

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop accepting, end live views, wait up to ``timeout_s`` for requests in flight."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown_timeout = timeout_s
        # cheroot waits without limit for a worker stuck in a handler once its timeout is spent;
        # the appliance must still shut down on SIGTERM, so the wait is bounded here.
        stopper = threading.Thread(target=server.stop, name="api:stop", daemon=True)
        stopper.start()
        deadline = time.monotonic() + timeout_s + 1.0
        stopper.join(max(0.0, deadline - time.monotonic()))
        thread.join(max(0.1, deadline - time.monotonic()))
        if stopper.is_alive() or thread.is_alive():
            logger.warning("the REST API server did not stop within %.1f s; leaving it behind", timeout_s)
        else:
            logger.info("REST API stopped")
