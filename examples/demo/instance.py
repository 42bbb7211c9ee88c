#!/usr/bin/env python3
"""A service instance for the cats demo: a real HTTP server that answers
with its own name, and keeps its load (active connections) in a file that
its SCI reporter reads.

  instance.py NAME ADDR PORT LOADFILE

GET /          -> "NAME\n"
GET /big?mb=N  -> N MiB, sent slowly (about 1 MiB/s), for long downloads
"""
import http.server
import os
import socketserver
import sys
import threading
import time
import urllib.parse

name, addr, port, loadfile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
active = 0
lock = threading.Lock()


def write_load():
    tmp = loadfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % active)
    os.replace(tmp, loadfile)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        global active
        with lock:
            active += 1
            write_load()
        try:
            url = urllib.parse.urlparse(self.path)
            if url.path == "/big":
                mb = int(urllib.parse.parse_qs(url.query).get("mb", ["4"])[0])
                self.send_response(200)
                self.send_header("Content-Length", str(mb << 20))
                self.send_header("X-Instance", name)
                self.end_headers()
                chunk = (name + "\n").encode() * (65536 // (len(name) + 1))
                chunk += b"." * (65536 - len(chunk))
                for _ in range(mb * 16):
                    self.wfile.write(chunk)
                    time.sleep(1 / 16)
            else:
                body = (name + "\n").encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Instance", name)
                self.end_headers()
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with lock:
                active -= 1
                write_load()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def server_bind(self):
        # HTTPServer.server_bind asks DNS for the address's name; the
        # demo's namespaces have no DNS (and must not look for one).
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = addr, port


write_load()
Server((addr, port), Handler).serve_forever()
