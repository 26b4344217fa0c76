"""The systemd notify protocol (sd_notify(3)), spoken directly over $NOTIFY_SOCKET.

No libsystemd binding is needed: a notification is one datagram of ``KEY=VALUE`` lines sent to
an AF_UNIX socket whose path is in ``$NOTIFY_SOCKET`` (a leading ``@`` names an abstract
socket). Without ``$NOTIFY_SOCKET`` (not run by systemd, or ``Type=simple``) every call does
nothing. A failed send is logged once and never raised: the appliance must not stop because
systemd went away.
"""
from __future__ import annotations

import logging
import os
import socket
from typing import Mapping, Optional

log = logging.getLogger(__name__)


def watchdog_interval_s(env: Mapping[str, str], pid: int) -> Optional[float]:
    """How often to send WATCHDOG=1: half of ``$WATCHDOG_USEC``, or None when no watchdog is set.

    ``$WATCHDOG_PID``, when present, must be this process (the variables may have been inherited
    by a child that systemd does not watch).
    """
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    if usec <= 0:
        return None
    watched_pid = env.get("WATCHDOG_PID")
    if watched_pid and watched_pid != str(pid):
        return None
    return usec / 1e6 / 2.0


class SystemdNotifier:
    """Sends sd_notify messages; ``address`` is the value of $NOTIFY_SOCKET (None: disabled)."""

    def __init__(self, address: Optional[str]):
        self.address = address or None
        self._warned = False
        self._sock: Optional[socket.socket] = None

    @classmethod
    def from_environment(cls, env: Optional[Mapping[str, str]] = None) -> "SystemdNotifier":
        return cls((os.environ if env is None else env).get("NOTIFY_SOCKET"))

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def _target(self) -> str:
        assert self.address is not None
        return "\0" + self.address[1:] if self.address.startswith("@") else self.address

    def notify(self, *lines: str) -> bool:
        """Send ``lines`` as one message; True when it was sent."""
        if self.address is None:
            return False
        message = "\n".join(line.replace("\n", " ") for line in lines).encode("utf-8", "replace")
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.sendto(message, self._target())
            return True
        except OSError as err:
            if not self._warned:
                self._warned = True
                log.warning("cannot notify systemd at %s: %s", self.address, err.strerror or err)
            return False

    def ready(self, status: str = "") -> bool:
        return self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def stopping(self, status: str = "stopping") -> bool:
        return self.notify("STOPPING=1", f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={text}")

    def extend_timeout(self, seconds: float, status: str = "") -> bool:
        """Ask for ``seconds`` more before systemd gives up on start-up (or stop)."""
        lines = [f"EXTEND_TIMEOUT_USEC={int(seconds * 1e6)}"]
        if status:
            lines.append(f"STATUS={status}")
        return self.notify(*lines)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
