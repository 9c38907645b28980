#!/usr/bin/python3
"""Test helper: an HTTP server that misbehaves on purpose (issue 15).

Usage: hostile_http_server.py FILE GOOD_CERT GOOD_KEY WRONG_CERT WRONG_KEY

Serves on 127.0.0.1 three listeners and prints one line
"http=P https=P wrong=P" (then serves until killed): plain HTTP, TLS with
GOOD_CERT (trusted by the tests, valid for 127.0.0.1) and TLS with
WRONG_CERT (a certificate for another host name). Every listener answers the
same paths; FILE's bytes are the body where one is needed:

  /good          the file, with Content-Length, ETag, Accept-Ranges
  /chunked       the file in chunks (Transfer-Encoding: chunked)
  /truncated     Content-Length of the file, half of it, then close
  /lying         Content-Length 1000 more than the file, the file, then close
  /extra         Content-Length of the file, the file, 4096 more bytes, then
                 the connection stays open 5 s (nothing past the length is
                 body)
  /empty         Content-Length 0
  /chunk-cut     chunked, stops before the last chunk and closes
  /badrange      206 to any Range, with Content-Range "bytes 0-9/<size>"
  /norange       200 and the whole file even to a Range request
  /changing      serves ranges, but the object changes at every request
                 (a new ETag each time: 200 and the whole file to an
                 If-Range with an older one)
  /loop          302 to /loop (a redirect loop)
  /hop/N         302 to /hop/N-1; /hop/0 serves the file
  /downgrade     302 to http://127.0.0.1:<http port>/good
  /other-host    302 to http(s)://localhost:<same port>/auth
  /auth          200, body "auth:yes" or "auth:no" (was Authorization sent)
  /drip          Content-Length of the file, one byte a second
  /drip-header   the status line, then one header byte a second
  /gzip          Content-Encoding: gzip, the file gzipped
  /big-header    a 100 KiB header line
  /silent        accepts and never answers
"""

import gzip
import hashlib
import http.server
import socket
import socketserver
import ssl
import sys
import threading
import time


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_handler(data, ports, scheme_of):
    etag = '"%s"' % hashlib.sha256(data).hexdigest()[:16]
    versions = [0]  # /changing: requests so far
    versions_lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send_file_headers(self, length, code=200, extra=()):
            self.send_response(code)
            self.send_header("Content-Length", str(length))
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "bytes")
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()

        def redirect(self, location):
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            p = self.path
            port = self.server.server_address[1]
            scheme = scheme_of(port)
            try:
                if p == "/good" or p == "/hop/0":
                    self.send_file_headers(len(data))
                    self.wfile.write(data)
                elif p == "/chunked":
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for i in range(0, len(data), 4000):
                        piece = data[i:i + 4000]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                elif p == "/chunk-cut":
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    half = data[: len(data) // 2]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(half), half))
                    self.close_now()
                elif p == "/truncated":
                    self.send_file_headers(len(data))
                    self.wfile.write(data[: len(data) // 2])
                    self.close_now()
                elif p == "/extra":
                    self.send_file_headers(len(data))
                    self.wfile.write(data + b"\xff" * 4096)
                    self.wfile.flush()
                    time.sleep(5)
                    self.close_now()
                elif p == "/empty":
                    self.send_file_headers(0)
                elif p == "/lying":
                    self.send_file_headers(len(data) + 1000)
                    self.wfile.write(data)
                    self.close_now()
                elif p == "/badrange":
                    if self.headers.get("Range"):
                        self.send_file_headers(
                            10, 206,
                            [("Content-Range", "bytes 0-9/%d" % len(data))])
                        self.wfile.write(data[:10])
                    else:
                        self.send_file_headers(len(data))
                        self.wfile.write(data)
                elif p == "/norange":
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("ETag", etag)
                    self.end_headers()
                    self.wfile.write(data)
                elif p == "/changing":
                    with versions_lock:
                        versions[0] += 1
                        tag = '"v%d"' % versions[0]
                    rng = self.headers.get("Range", "")
                    if_range = self.headers.get("If-Range")
                    if rng.startswith("bytes=") and if_range in (None, tag):
                        first, _, last = rng[6:].partition("-")
                        first = int(first)
                        last = min(int(last) if last else len(data) - 1,
                                   len(data) - 1)
                        self.send_response(206)
                        self.send_header("Content-Length", str(last - first + 1))
                        self.send_header("Content-Range", "bytes %d-%d/%d" %
                                         (first, last, len(data)))
                        self.send_header("ETag", tag)
                        self.end_headers()
                        self.wfile.write(data[first:last + 1])
                    else:
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(data)))
                        self.send_header("ETag", tag)
                        self.end_headers()
                        self.wfile.write(data)
                elif p == "/loop":
                    self.redirect("/loop")
                elif p.startswith("/hop/"):
                    self.redirect("/hop/%d" % (int(p[5:]) - 1))
                elif p == "/downgrade":
                    self.redirect("http://127.0.0.1:%d/good" % ports["http"])
                elif p == "/other-host":
                    self.redirect("%s://localhost:%d/auth" % (scheme, port))
                elif p == "/auth":
                    body = b"auth:yes" if self.headers.get(
                        "Authorization") else b"auth:no"
                    self.send_file_headers(len(body))
                    self.wfile.write(body)
                elif p == "/drip":
                    self.send_file_headers(len(data))
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(1)
                elif p == "/drip-header":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                    self.wfile.flush()
                    for b in b"X-Slow: " + b"a" * 1000:
                        self.wfile.write(bytes([b]))
                        self.wfile.flush()
                        time.sleep(1)
                elif p == "/gzip":
                    body = gzip.compress(data)
                    self.send_file_headers(len(body), 200,
                                           [("Content-Encoding", "gzip")])
                    self.wfile.write(body)
                elif p == "/big-header":
                    self.send_response(200)
                    self.send_header("X-Big", "b" * (100 << 10))
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                elif p == "/silent":
                    time.sleep(30)
                    self.close_now()
                else:
                    self.send_error(404)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                self.close_connection = True

        def close_now(self):
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    return Handler


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    ports = {}
    tls_ports = set()
    handler = make_handler(data, ports,
                           lambda p: "https" if p in tls_ports else "http")
    servers = {}
    for name, cert in (("http", None), ("https", (sys.argv[2], sys.argv[3])),
                       ("wrong", (sys.argv[4], sys.argv[5]))):
        srv = Server(("127.0.0.1", 0), handler)
        if cert is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*cert)
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
            tls_ports.add(srv.server_address[1])
        ports[name] = srv.server_address[1]
        servers[name] = srv
    for srv in servers.values():
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    print("http=%d https=%d wrong=%d" %
          (ports["http"], ports["https"], ports["wrong"]), flush=True)
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
