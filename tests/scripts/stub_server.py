#!/usr/bin/env python3
"""A stand-in for serve in the client's tests: answers POST /v1/completions
from recorded candidates (the records of gen-candidates --model), found by
the request's asn_prompt_id, heuristic id and seed, in serve's response
layout; GET /v1/models names the records' model. Faults on demand: every
Nth request answered 503 (with Retry-After: 0), delayed, or dropped without
an answer. Listens on 127.0.0.1 only; standard library only.

usage: stub_server.py RECORDS.jsonl PORT_FILE [--fail-every N] [--slow-every N]
                      [--slow-s S] [--drop-every N] [--status-every N:CODE]
                      [--kind asn|vllm|sglang|llama-server] [--fixed] [--record FILE]
                      [--no-owner]

--kind answers in that server's layout (vLLM's token_ids, SGLang's
output_ids, llama-server's tokens); --fixed answers every request with the
first record's tokens (for kinds whose bodies name no heuristic id);
--record appends every POST body to FILE, one JSON line each. GET
/v1/models names the kind in owned_by as that server does (--no-owner: not),
and each kind's own endpoint answers (vLLM's /version, SGLang's
/get_model_info, llama-server's /props with 2 slots).
"""
import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("records")
ap.add_argument("port_file")
ap.add_argument("--fail-every", type=int, default=0)
ap.add_argument("--slow-every", type=int, default=0)
ap.add_argument("--slow-s", type=float, default=0.5)
ap.add_argument("--drop-every", type=int, default=0)
ap.add_argument("--status-every", default="")
ap.add_argument("--kind", default="asn")
ap.add_argument("--fixed", action="store_true")
ap.add_argument("--record", default="")
ap.add_argument("--no-owner", action="store_true")
args = ap.parse_args()

recs = {}
model = None
first = None
for line in open(args.records):
    r = json.loads(line)
    recs[(r["prompt_id"], r["heuristic"]["id"], r["seed"])] = r
    model = r["model"]
    first = first or r

lock = threading.Lock()
count = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        card = {"id": model["name"], "object": "model"}
        if args.kind == "asn":
            card["asn"] = {"sha256": model["sha256"]}
        elif not args.no_owner:  # as each server's ModelCard names itself
            card["owned_by"] = {"vllm": "vllm", "sglang": "sglang", "llama-server": "llamacpp"}[args.kind]
        own = {"vllm": ("/version", {"version": "0.11.0"}),
               "sglang": ("/get_model_info", {"model_path": model["name"], "is_generation": True}),
               "llama-server": ("/props", {"default_generation_settings": {}, "total_slots": 2})}.get(args.kind)
        if self.path == "/v1/models":
            self.answer(200, {"object": "list", "data": [card]})
        elif own and self.path == own[0]:
            self.answer(200, own[1])
        else:
            self.answer(404, {"error": {"message": "no endpoint", "code": 404}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(n)
        req = json.loads(raw)
        with lock:
            count[0] += 1
            k = count[0]
            if args.record:
                with open(args.record, "a") as f:
                    f.write(raw.decode() + "\n")
        if args.drop_every and k % args.drop_every == 0:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if args.fail_every and k % args.fail_every == 0:
            self.answer(503, {"error": {"message": "busy", "code": 503}}, [("Retry-After", "0")])
            return
        if args.status_every:
            every, code = map(int, args.status_every.split(":"))
            if k % every == 0:
                self.answer(code, {"error": {"message": "injected status %d" % code, "code": code}})
                return
        if args.slow_every and k % args.slow_every == 0:
            time.sleep(args.slow_s)
        key = (req.get("asn_prompt_id"), req.get("asn_heuristic", {}).get("id"), req.get("seed"))
        r = first if args.fixed else recs.get(key)
        if r is None:
            self.answer(400, {"error": {"message": "no recorded answer for %r" % (key,), "code": 400}})
            return
        fin = "length" if r["finish"] == "length" else "stop"
        if args.kind == "sglang":
            self.answer(200, {"text": r["generation"], "output_ids": r["tokens"],
                              "meta_info": {"id": "x%d" % k, "finish_reason": {"type": fin}}})
            return
        if args.kind == "llama-server":
            self.answer(200, {"index": 0, "content": r["generation"], "tokens": r["tokens"], "stop": True,
                              "tokens_predicted": r["n_tokens"]})
            return
        self.answer(200, {"id": "cmpl-%d" % k, "object": "text_completion", "created": 0, "model": model["name"],
                          "choices": [{"index": 0, "text": r["generation"], "logprobs": None,
                                       "finish_reason": fin, "asn_finish": r["finish"],
                                       "token_ids": r["tokens"]}],
                          "usage": {"prompt_tokens": len(req.get("prompt", "")), "completion_tokens": r["n_tokens"],
                                    "total_tokens": len(req.get("prompt", "")) + r["n_tokens"]}})


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
with open(args.port_file + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
import os  # noqa: E402

os.rename(args.port_file + ".tmp", args.port_file)
srv.serve_forever()
