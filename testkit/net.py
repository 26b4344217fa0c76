"""Ports and addresses for the tests' own servers (brokers, RTSP servers, the appliance's API)."""
import fcntl
import ipaddress
import socket
import struct
import urllib.request
from typing import Optional

#: the ioctl that reads an interface's IPv4 address (linux/sockios.h)
_SIOCGIFADDR = 0x8915


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_accepts(host: str, port: int, timeout_s: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def local_lan_address() -> Optional[str]:
    """An IPv4 address of one of this machine's own interfaces that is not loopback, or None.

    Read from the interfaces themselves (no packet is sent): tests that need a listener a LAN
    client would reach use it, since every 127.0.0.0/8 address counts as loopback.
    """
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            try:
                answer = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:  # an interface without an IPv4 address
                continue
        address = socket.inet_ntoa(answer[20:24])
        if not ipaddress.ip_address(address).is_loopback:
            return address
    return None


def answers_ok(url: str, timeout_s: float = 1.0) -> bool:
    """Whether a plain GET of ``url`` answers 200 (False while nothing listens or on any error)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status == 200
    except OSError:
        return False
