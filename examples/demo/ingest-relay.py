#!/usr/bin/env python3
"""Interim C-SMA -> C-PS metric ingest for the cats demo and loop tests.

  ingest-relay.py ADDR PORT LOG

Until cats-select has its authenticated HTTP ingest endpoint, the site
agents POST their metric records (`cats-sma --to http://ADDR:PORT/metrics`,
one record per request, application/cbor) here, and this relay writes each
body whole, with one write, to stdout: the trusted control stream on
cats-select's standard input.  Each body is written under one lock, so
records from several agents never interleave.  Every body is also appended
to LOG (a CBOR Sequence, for the demo's trace).  It trusts its callers: it
only exists so that the harness has a single place (loop_northbound in
loop_net.bash) to switch to the real northbound.
"""
import http.server
import os
import socketserver
import sys
import threading

addr, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = sys.stdout.fileno()
logfd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, text):
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        ctype = self.headers.get("Content-Type", "")
        n = int(self.headers.get("Content-Length", "0"))
        if not ctype.startswith("application/cbor") or not 0 < n <= 65536:
            self.reply(415 if n else 400, "one CBOR record per request")
            return
        body = self.rfile.read(n)
        with lock:
            os.write(logfd, body)
            os.write(out, body)
        self.reply(200, "1 accepted")

    def do_GET(self):
        self.reply(200, "ok")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def server_bind(self):
        socketserver.TCPServer.server_bind(self)    # no DNS lookup
        self.server_name, self.server_port = addr, port


Server((addr, port), Handler).serve_forever()
