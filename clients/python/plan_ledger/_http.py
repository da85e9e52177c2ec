"""HTTP connections to ``plan-ledger serve``, shared by the sender thread and the read helpers."""
from __future__ import annotations

import http.client
import select
import urllib.parse

# errors of a request whose connection the server had closed (RemoteDisconnected is a ConnectionResetError)
PEER_CLOSED = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)


def connect(url: urllib.parse.SplitResult, timeout: float) -> http.client.HTTPConnection:
    """A new (not yet opened) connection to ``url``'s host and port."""
    if url.scheme == "https":
        return http.client.HTTPSConnection(url.hostname or "", url.port, timeout=timeout)
    return http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout)


def closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """True when an idle kept-alive connection cannot be reused: readable while no request is out means
    the server closed it (its keep-alive timeout) or sent what nobody asked for."""
    sock = conn.sock
    if sock is None:
        return False  # http.client opens a new one for the next request
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True
