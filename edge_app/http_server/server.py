"""``ApiServer``: the Flask app served by cheroot, a production WSGI server, in its own thread.

Connection handling (deadlines, size limits, the TLS handshake) lives in
:mod:`edge_app.http_server.http_protocol`, its numbers in :mod:`edge_app.http_server.http_limits`.
TLS: ``certfile`` (and ``keyfile`` when the key is not in the certificate file) switch HTTPS on;
:meth:`ApiServer.from_config` takes them from ``api.tls``.
"""
from __future__ import annotations

import logging
import re
import ssl
import threading
import time
from typing import Any, Callable, Iterable, Optional, Tuple, Union

from edge_app.http_server.http_limits import DEFAULT_LIMITS, HttpLimits
from edge_app.http_server.http_protocol import DeferredHandshakeSSLAdapter, GuardedWsgiServer
from edge_app.http_server.listening import LISTENING_ENVIRON_KEY
from edge_app.config.schema import APIConfig

logger = logging.getLogger(__name__)

THREAD_NAME = "api:http"
# The WSGI environ key under which the server hands requests a threading.Event that is set when
# it stops: long-lived responses (MJPEG live views) watch it and finish instead of holding up
# shutdown until their viewer goes away.
SHUTDOWN_ENVIRON_KEY = "edge_app.api.stopping"

WsgiApp = Callable[[dict, Callable[..., Any]], Iterable[bytes]]
BodyLimit = Union[int, Callable[[], int]]


class TLSSetupError(OSError):
    """The certificate or key of ``api.tls`` cannot be used; the message names the file."""


def _bind_error(err: OSError, host: str, port: int) -> OSError:
    """cheroot folds the OS error into its message; recover errno and strerror for the caller."""
    if err.errno is not None:
        return err
    found = re.search(r"\[Errno (\d+)\] ([^)]*)", str(err))
    if found:
        return OSError(int(found.group(1)), found.group(2))
    return OSError(f"cannot listen on {host}:{port}: {err}")


class ApiServer:
    """Serves ``app`` on ``host:port`` from a thread named ``api:http``.

    ``port=0`` asks the OS for a free port; :attr:`port` gives the real one after :meth:`start`.
    ``limits`` bound what one client can hold; ``body_limit_bytes`` (a number, or a function
    asked per request so a changed ``api.max_body_bytes`` applies at once) refuses larger bodies
    with 413 before they are read; ``upload_body_limit_bytes`` is the limit of PUT and POST bodies
    to ``limits.upload_path_prefixes`` instead (default: the same).
    """

    def __init__(
        self,
        app: WsgiApp,
        host: str = "127.0.0.1",
        port: int = 8080,
        *,
        certfile: Optional[str] = None,
        keyfile: Optional[str] = None,
        limits: HttpLimits = DEFAULT_LIMITS,
        body_limit_bytes: BodyLimit = APIConfig.model_fields["max_body_bytes"].default,
        upload_body_limit_bytes: Optional[Callable[[], int]] = None,
    ):
        self._app = app
        self._host = host
        self._requested_port = port
        self._certfile = certfile
        self._keyfile = keyfile
        self._limits = limits
        self._body_limit: Callable[[], int] = body_limit_bytes if callable(body_limit_bytes) else (lambda: int(body_limit_bytes))
        self._upload_body_limit = upload_body_limit_bytes
        self._stopping = threading.Event()
        self._server: Optional[GuardedWsgiServer] = None
        self._thread: Optional[threading.Thread] = None

    @classmethod
    def from_config(
        cls,
        app: WsgiApp,
        api_config: APIConfig,
        *,
        body_limit_bytes: Optional[Callable[[], int]] = None,
        upload_body_limit_bytes: Optional[Callable[[], int]] = None,
        limits: HttpLimits = DEFAULT_LIMITS,
    ) -> "ApiServer":
        """The server ``api_config`` describes: host, port, HTTPS from ``api.tls``.

        ``body_limit_bytes`` should read the running configuration; without it the limit is
        the one of ``api_config``.
        """
        tls = api_config.tls
        return cls(
            app,
            api_config.host,
            api_config.port,
            certfile=tls.certfile if tls.enabled else None,
            keyfile=tls.keyfile if tls.enabled else None,
            limits=limits,
            body_limit_bytes=body_limit_bytes or api_config.max_body_bytes,
            upload_body_limit_bytes=upload_body_limit_bytes,
        )

    def _wsgi(self, environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        environ[SHUTDOWN_ENVIRON_KEY] = self._stopping
        environ[LISTENING_ENVIRON_KEY] = self.listening_hosts()
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

    def listening_hosts(self) -> Tuple[str, ...]:
        """The addresses the server is bound to (``0.0.0.0``/``::`` for all), empty before :meth:`start`.

        What decides whether the API needs a token (:mod:`edge_app.config.exposure`): a changed
        ``api.host`` moves the listener only at a restart. Still reported once stopped, which
        errs on the side of asking for a token.
        """
        server = self._server
        if server is None or not isinstance(server.bind_addr, tuple):
            return ()
        return (str(server.bind_addr[0]),)

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
        ssl_adapter = self._ssl_adapter() if self._certfile else None
        server = GuardedWsgiServer(
            (self._host, self._requested_port),
            self._wsgi,
            limits=self._limits,
            body_limit_bytes=self._body_limit,
            upload_body_limit_bytes=self._upload_body_limit,
        )
        server.ssl_adapter = ssl_adapter
        try:
            server.prepare()
        except OSError as err:
            raise _bind_error(err, self._host, self._requested_port) from err
        self._server = server
        self._thread = threading.Thread(target=self._serve, name=THREAD_NAME, daemon=True)
        self._thread.start()
        logger.info("REST API listening on %s", self.url)

    def _ssl_adapter(self) -> DeferredHandshakeSSLAdapter:
        """Load the certificate and key now, so a bad file is an error at start, naming it."""
        assert self._certfile is not None
        files = f"certificate {self._certfile}" + (f" / key {self._keyfile}" if self._keyfile else "")
        for path in (self._certfile, self._keyfile):
            # OpenSSL reports an unreadable file as "PEM lib"; opening it first names the cause.
            try:
                with open(path or self._certfile, "rb"):
                    pass
            except OSError as err:
                raise TLSSetupError(f"cannot read the TLS file {path}: {err.strerror or err}") from err
        try:
            return DeferredHandshakeSSLAdapter(self._certfile, self._keyfile)
        except ssl.SSLError as err:
            raise TLSSetupError(f"cannot use the TLS {files}: they must be a PEM certificate chain and its "
                                f"private key ({err.reason or err})") from err
        except OSError as err:
            raise TLSSetupError(f"cannot read the TLS {files}: {err.strerror or err}") from err

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
