"""hurray.ingest(headers=...) goes through the C++ HTTP client (issue 46
item 1): credentials the caller gave (Authorization, Cookie,
Proxy-Authorization, in any case) reach only the origin of the URL they were
given for; a redirect to another port gets the other headers but none of
them. Two plain-HTTP servers on loopback record what they receive."""

import socket
import threading

import pytest

import hurray


class _Recorder:
    """Serves one scripted answer per connection on 127.0.0.1 and records
    each request head."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(10)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        for answer in self.answers:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    head += chunk
                self.requests.append(head.decode("latin-1"))
                conn.sendall(answer() if callable(answer) else answer)

    def close(self):
        self.thread.join(timeout=10)
        self.sock.close()


def _fields(request):
    return {line.split(":", 1)[0].strip().lower()
            for line in request.split("\r\n")[1:] if ":" in line}


def test_credentials_do_not_follow_a_redirect_to_another_port():
    other = _Recorder([b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                       b"Connection: close\r\n\r\n"])
    first = _Recorder([lambda: (
        f"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{other.port}/b"
        f"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").encode()])
    try:
        with pytest.raises(Exception, match="404"):
            list(hurray.ingest(
                f"http://127.0.0.1:{first.port}/a.hrry",
                headers={"Authorization": "Bearer s3cret",
                         "cookie": "sid=s3cret",
                         "Proxy-Authorization": "Basic s3cret",
                         "X-Trace": "t1"},
                connect_timeout=5, idle_timeout=5))
    finally:
        first.close()
        other.close()
    assert len(first.requests) == 1 and len(other.requests) == 1
    given, moved = first.requests[0], other.requests[0]
    assert {"authorization", "cookie", "proxy-authorization",
            "x-trace"} <= _fields(given)
    assert "s3cret" not in moved, moved
    assert not {"authorization", "cookie",
                "proxy-authorization"} & _fields(moved)
    assert "x-trace" in _fields(moved)
