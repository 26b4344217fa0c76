"""paho's client driven by an asyncio loop, through paho's own external-loop hooks.

``on_socket_open``/``on_socket_close`` add and remove a reader (``loop_read``),
``on_socket_register_write``/``unregister_write`` a writer (``loop_write``), and a task calls
``loop_misc`` every second (keepalive pings, retries). Thousands of clients share one thread.
"""
from __future__ import annotations

import asyncio
import socket
from typing import Any, Optional

import paho.mqtt.client as mqtt


class AsyncioDriver:
    def __init__(self, client: mqtt.Client, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self.loop = loop
        self._misc: Optional[asyncio.Task] = None
        client.on_socket_open = self._on_socket_open
        client.on_socket_close = self._on_socket_close
        client.on_socket_register_write = lambda c, u, sock: loop.add_writer(sock, c.loop_write)
        client.on_socket_unregister_write = lambda c, u, sock: loop.remove_writer(sock)

    def _on_socket_open(self, client: mqtt.Client, userdata: Any, sock: socket.socket) -> None:
        self.loop.add_reader(sock, client.loop_read)
        self._misc = self.loop.create_task(self._misc_loop())

    def _on_socket_close(self, client: mqtt.Client, userdata: Any, sock: socket.socket) -> None:
        self.loop.remove_reader(sock)
        if self._misc is not None:
            self._misc.cancel()

    async def _misc_loop(self) -> None:
        while self.client.loop_misc() == mqtt.MQTT_ERR_SUCCESS:
            await asyncio.sleep(1.0)

    def drop(self) -> None:
        """Close the socket under paho, without a DISCONNECT: to the broker, a power cut."""
        sock = self.client.socket()
        if self._misc is not None:
            self._misc.cancel()
        if sock is not None:
            self.loop.remove_reader(sock)
            self.loop.remove_writer(sock)
            sock.close()
