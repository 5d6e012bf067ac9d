#!/usr/bin/env python3
"""Answers as a recorded server answered (the exchanges record_proxy.py
wrote): a GET by its path, a POST by its path and the request's prompt,
seed, sampler list and constraint, each with the recorded status and body. Anything
else is a 404. Listens on 127.0.0.1 only; standard library only.

usage: replay_server.py EXCHANGES.jsonl PORT_FILE [--no-owner] [--max-inflight-file F]

--no-owner drops owned_by from /v1/models (a proxy that rewrites it);
--max-inflight-file keeps in F the most POSTs that were in flight at once
(each answer is held 20 ms so that overlapping requests overlap here).
"""
import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("exchanges")
ap.add_argument("port_file")
ap.add_argument("--no-owner", action="store_true")
ap.add_argument("--max-inflight-file", default="")
args = ap.parse_args()


def key(path, req):
    if not isinstance(req, dict):
        return (path, None)
    return (path, json.dumps(req.get("prompt", req.get("input_ids"))), req.get("seed"), json.dumps(req.get("samplers")),
            json.dumps(req.get("json_schema")), json.dumps(req.get("grammar")))


gets, posts = {}, {}
for line in open(args.exchanges):
    x = json.loads(line)
    if x["method"] == "GET":
        gets.setdefault(x["path"], (x["status"], x["response"]))
    else:
        posts.setdefault(key(x["path"], x["request"]), (x["status"], x["response"]))
if args.no_owner and "/v1/models" in gets:
    status, models = gets["/v1/models"]
    for m in models.get("data", []):
        m.pop("owned_by", None)

lock = threading.Lock()
inflight = [0, 0]  # now, most


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code, obj):
        body = (json.dumps(obj) if not isinstance(obj, str) else obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.answer(*gets.get(self.path, (404, {"error": {"message": "not recorded", "code": 404}})))

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        req = json.loads(self.rfile.read(n))
        with lock:
            inflight[0] += 1
            if inflight[0] > inflight[1]:
                inflight[1] = inflight[0]
                if args.max_inflight_file:
                    with open(args.max_inflight_file, "w") as f:
                        f.write(str(inflight[1]))
        time.sleep(0.02)
        try:
            self.answer(*posts.get(key(self.path, req), (404, {"error": {"message": "not recorded", "code": 404}})))
        finally:
            with lock:
                inflight[0] -= 1


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(args.port_file, "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
