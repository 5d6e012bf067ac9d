#!/usr/bin/python3
"""Writes the hand-made candidate records of tests/cli/score_diversity.sh:
  candidates.jsonl  asn's format (schemas/candidate.schema.json): prompt p1
                    with heuristics h1 (3 seeds), h2 (2 seeds, identical
                    texts), h3 (1 seed), records interleaved; prompt p2 with
                    h1 (2 seeds, one generation empty) and an extra field
  reference.jsonl   the reference project's format: no prompt_id, no
                    heuristic, "sampler_info" {name, config}, seeds as strings
Run: /usr/bin/python3 tests/data/diversity/make_candidates.py"""
import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SHA = hashlib.sha256(b"not a real model").hexdigest()


def heuristic(name, procs):
    canon = json.dumps({"name": name, "processors": procs}, sort_keys=True, separators=(",", ":"))
    return {"name": name, "id": hashlib.sha256(canon.encode()).hexdigest()[:12], "processors": procs}


H1 = heuristic("temp 0.7", [{"name": "temperature", "params": {"temperature": 0.7}}])
H2 = heuristic("top_p 0.9 temp 1.0", [{"name": "temperature", "params": {"temperature": 1.0}},
                                      {"name": "top_p", "params": {"top_p": 0.9}}])
H3 = heuristic("min_p 0.1 temp 1.0", [{"name": "temperature", "params": {"temperature": 1.0}},
                                      {"name": "min_p", "params": {"min_p": 0.1}}])


def cand(pid, prompt, h, seed, text, **extra):
    r = {"id": "%s/%s/%d" % (pid, h["id"], seed), "prompt_id": pid, "prompt": prompt, "system": None,
         "heuristic": h, "seed": seed, "generation": text, "tokens": [1, 2, 3], "n_tokens": 3,
         "finish": "length", "model": {"name": "test", "sha256": SHA},
         "settings": {"system": None, "chat_template": "none", "min_new_tokens": 0, "max_new_tokens": 8,
                      "stop": []}}
    r.update(extra)
    return r


P1 = "Write a sentence about a cat."
recs = [
    cand("p1", P1, H1, 0, "The cat sat on the mat."),
    cand("p1", P1, H2, 0, "A cat, a hat: 3.5 naps!"),
    cand("p1", P1, H1, 1, "The cat slept on the warm mat."),
    cand("p1", P1, H3, 0, "Cats \u00e9t\u00e9 caf\u00e9 \u4e2d\u6587."),
    cand("p1", P1, H2, 1, "A cat, a hat: 3.5 naps!"),
    cand("p1", P1, H1, 2, "Dogs run in the park, not cats."),
    cand("p2", "Say hi.", H1, 0, "", dataset="demo", checks={"diversity": True}),
    cand("p2", "Say hi.", H1, 1, "hi there", dataset="demo", checks={"diversity": True}),
]
with open(os.path.join(HERE, "candidates.jsonl"), "w") as f:
    for r in recs:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")

SI1 = {"name": "temp 0.7", "config": H1["processors"]}
SI2 = {"name": "temp 1.0", "config": [{"name": "temperature", "params": {"temperature": 1.0}}]}
ref = [
    {"prompt": "Tell a joke.", "system_prompt": "You are a helpful assistant.", "sampler_info": SI1, "seed": "0",
     "generation": "Why did the chicken cross the road?", "incidence_vector": {"check_diversity": True}},
    {"prompt": "Tell a joke.", "system_prompt": "You are a helpful assistant.", "sampler_info": SI1, "seed": "1",
     "generation": "Knock knock. Who is there?", "incidence_vector": {"check_diversity": True}},
    {"prompt": "Tell a joke.", "system_prompt": "You are a helpful assistant.", "sampler_info": SI2, "seed": "0",
     "generation": "I have no jokes.", "incidence_vector": {"check_diversity": True}},
]
with open(os.path.join(HERE, "reference.jsonl"), "w") as f:
    for r in ref:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
