#!/usr/bin/env python3
"""Records a real server's answers: listens on 127.0.0.1, forwards every
request to UPSTREAM unchanged and appends each exchange to LOG, one JSON
line: {"method", "path", "request" (the JSON body, or null), "status",
"response" (the JSON body, or its text when not JSON)}. Used to make the
fixtures of tests/data/servers/ (see its README); standard library only.

usage: record_proxy.py UPSTREAM PORT_FILE LOG
"""
import http.client
import json
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

upstream = urllib.parse.urlparse(sys.argv[1])
lock = threading.Lock()
log = open(sys.argv[3], "a")


def as_json(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def forward(self, method):
        n = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(n) if n else None
        conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=120)
        headers = {"Content-Type": "application/json"} if raw is not None else {}
        conn.request(method, self.path, body=raw, headers=headers)
        r = conn.getresponse()
        body = r.read()
        conn.close()
        with lock:
            log.write(json.dumps({"method": method, "path": self.path,
                                  "request": as_json(raw) if raw is not None else None,
                                  "status": r.status, "response": as_json(body)}) + "\n")
            log.flush()
        self.send_response(r.status)
        self.send_header("Content-Type", r.getheader("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.forward("GET")

    def do_POST(self):
        self.forward("POST")


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[2], "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
