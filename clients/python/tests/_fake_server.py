"""A stand-in for ``plan-ledger serve`` in the unit tests: answers POST /v1/events like the real
server (202, one result per event), /healthz, and POST /v1/events/status (every stored id applied);
other routes answer what ``routes`` (GET) and ``post_routes`` (POST) say, each request recorded in
``requests``."""
import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class FakeServer:
    def __init__(self, port: Optional[int] = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.events: List[Dict[str, Any]] = []
        self.bodies: List[bytes] = []
        self.posts = 0
        self.probes = 0
        self.lock = threading.Lock()
        #: replaces the answer to a POST /v1/events: (events) -> (status, body dict) or None for the normal answer
        self.on_post: Optional[Callable[[List[Any]], Optional[tuple]]] = None
        self.status_answer: Optional[Callable[[List[str]], Dict[str, List[str]]]] = None
        self.routes: Dict[str, tuple] = {}
        #: POST path prefix -> (status, body dict)
        self.post_routes: Dict[str, tuple] = {}
        #: (method, path, Authorization header, JSON body or None) of each request to routes / post_routes
        self.requests: List[tuple] = []
        self._httpd: Optional[ThreadingHTTPServer] = None
        self.connections: List[socket.socket] = []
        #: the next this many POST /v1/events are read, then their connection is closed with no answer
        self.drop_posts = 0

    def start(self) -> "FakeServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                with server.lock:
                    server.connections.append(self.connection)

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body, separators=(",", ":")).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/healthz":
                    with server.lock:
                        server.probes += 1
                    return self._send(200, {"ok": True})
                for prefix, (status, body) in server.routes.items():
                    if self.path.startswith(prefix):
                        with server.lock:
                            server.requests.append(("GET", self.path, self.headers.get("authorization"), None))
                        return self._send(status, body)
                self._send(404, {"error": f"no route {self.path}"})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.path == "/v1/events":
                    events = json.loads(body)
                    with server.lock:
                        server.posts += 1
                        drop = server.drop_posts > 0
                        if drop:
                            server.drop_posts -= 1
                        else:
                            server.bodies.append(body)
                    if drop:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    custom = server.on_post(events) if server.on_post else None
                    if custom is not None:
                        return self._send(*custom)
                    with server.lock:
                        server.events.extend(events)
                    results = [
                        {"index": i, "status": "accepted", "eventId": e["eventId"], "seq": e["seq"]}
                        for i, e in enumerate(events)
                    ]
                    return self._send(202, {"accepted": len(events), "invalid": 0, "dropped": 0, "results": results})
                if self.path == "/v1/events/status":
                    ids = json.loads(body)["eventIds"]
                    if server.status_answer is not None:
                        return self._send(200, server.status_answer(ids))
                    with server.lock:
                        known = {e["eventId"] for e in server.events}
                    return self._send(
                        200,
                        {
                            "applied": [i for i in ids if i in known],
                            "waiting": [],
                            "refused": [],
                            "unknown": [i for i in ids if i not in known],
                        },
                    )
                for prefix, (status, answer) in server.post_routes.items():
                    if self.path.startswith(prefix):
                        with server.lock:
                            server.requests.append(
                                (
                                    "POST",
                                    self.path,
                                    self.headers.get("authorization"),
                                    json.loads(body) if body else None,
                                )
                            )
                        return self._send(status, answer)
                self._send(404, {"error": "no route"})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        self.close_connections()  # keep-alive connections too: a stopped server answers nothing

    def close_connections(self) -> None:
        """Closes every open connection, as a server does with idle ones at its keep-alive timeout."""
        with self.lock:
            for c in self.connections:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.connections.clear()

    def stored(self) -> List[Dict[str, Any]]:
        with self.lock:
            return list(self.events)


logging.getLogger("plan_ledger").addHandler(logging.NullHandler())
