#!/usr/bin/python3
"""Writes a small annotated run for the report tests: 3 prompts x 10
heuristics (3 families x 3 temperatures, plus a learned sampler) x 2 seeds,
with plausible quality, diversity, n-gram, verifiable, score and rank
annotations as rank-bt, score-diversity, score-ngram, score-verifiable and
filter-topk write them, and the preference pairs of filter-topk --pairs.

    make_candidates.py OUT_DIR [--bare | --no-diversity]

writes OUT_DIR/candidates.jsonl and OUT_DIR/pairs.jsonl. --bare leaves every
annotation out (candidates as gen-candidates writes them); --no-diversity
leaves out diversity (and the scores computed from it). Numbers come from a
fixed formula and a seeded generator, so the files are the same every run."""
import hashlib
import json
import math
import random
import sys

out_dir = sys.argv[1]
bare = "--bare" in sys.argv
no_div = "--no-diversity" in sys.argv
rng = random.Random(20240607)

MODEL = {"name": "demo-tiny", "sha256": hashlib.sha256(b"demo-tiny.gguf").hexdigest()}
JUDGE = {"kind": "reference-ll", "model": "demo-ref", "sha256": hashlib.sha256(b"demo-ref.gguf").hexdigest(),
         "tau": 0.1}
SETTINGS = {"system": None, "chat_template": "chatml", "min_new_tokens": 4, "max_new_tokens": 64, "stop": []}
PROMPTS = [
    {"id": "p-story", "prompt": "Write two sentences about a lighthouse.", "checks": {"diversity": True}},
    {"id": "p-list", "prompt": "Name three uses for a paperclip.", "checks": {"diversity": True}},
    {"id": "p-math", "prompt": "What is 12 + 30?", "ground_truth": "42", "dataset": "gsm8k",
     "checks": {"diversity": False, "verifiable": True}},
]


def heuristic(name, procs):
    canon = json.dumps({"name": name, "processors": procs}, sort_keys=True, separators=(",", ":"))
    return {"name": name, "id": hashlib.sha256(canon.encode()).hexdigest()[:12], "processors": procs}


HEURISTICS = []
for t in (0.3, 0.7, 1.0):
    temp = {"name": "temperature", "params": {"temperature": t}}
    HEURISTICS.append(("temp only", t, heuristic(f"temp {t}", [temp])))
    HEURISTICS.append(("top_p", t, heuristic(f"top_p 0.9 temp {t}", [temp, {"name": "top_p", "params": {"top_p": 0.9}}])))
    HEURISTICS.append(("min_p", t, heuristic(f"min_p 0.05 temp {t}", [temp, {"name": "min_p", "params": {"min_p": 0.05}}])))
HEURISTICS.append(("learned", 1.0, heuristic("learned temp 1.0", [
    {"name": "temperature", "params": {"temperature": 1.0}},
    {"name": "learned", "params": {"path": "sampler.gguf"}}])))

# quality peaks at a moderate temperature; truncation (min_p, top_p) keeps it
# up when hot; the learned sampler does best; diversity grows with heat
BASE_Q = {"temp only": 0.0, "top_p": 0.25, "min_p": 0.4, "learned": 0.35}
BASE_D = {"temp only": 0.05, "top_p": 0.0, "min_p": 0.02, "learned": 0.08}


def quality(fam, t):
    drop = {"temp only": 2.2, "top_p": 1.2, "min_p": 0.7, "learned": 0.5}[fam]
    return BASE_Q[fam] - drop * (t - 0.6) ** 2 * 2 + 0.3 * t


recs = []
for p in PROMPTS:
    for seed in (0, 1):
        for fam, t, h in HEURISTICS:
            n_tok = int(20 + 30 * t + rng.randint(0, 12))
            finish = "length" if n_tok >= 50 else ("stop" if rng.random() < 0.2 else "eos")
            if finish == "length":
                n_tok = 64
            tokens = [rng.randint(3, 250) for _ in range(n_tok)]
            r = {"id": f"{p['id']}/{h['id']}/{seed}", "prompt_id": p["id"], "prompt": p["prompt"], "system": None,
                 "heuristic": h, "seed": seed, "generation": " ".join(f"w{x}" for x in tokens[:12]),
                 "tokens": tokens, "n_tokens": n_tok, "finish": finish, "model": MODEL, "settings": SETTINGS}
            for k in ("dataset", "ground_truth", "checks"):
                if k in p:
                    r[k] = p[k]
            recs.append((fam, t, r))

if not bare:
    # rank-bt: ratings mean-centred per (prompt, seed) group, Swiss points
    for p in PROMPTS:
        for seed in (0, 1):
            grp = [x for x in recs if x[2]["prompt_id"] == p["id"] and x[2]["seed"] == seed]
            raw = [quality(fam, t) + rng.gauss(0, 0.15) for fam, t, _ in grp]
            mean = sum(raw) / len(raw)
            for (fam, t, r), q in zip(grp, raw):
                games = 4
                pts = round(games / (1 + math.exp(-(q - mean) * 2.5)) * 2) / 2
                r["quality"] = {"bt": round(q - mean, 6), "swiss_points": pts, "games": games, "judge": JUDGE,
                                "bt_method": "mle"}
                r["bradley_terry_rating"] = r["quality"]["bt"]
    # score-diversity: one value per (prompt, heuristic) group, on both seeds
    if not no_div:
        for p in PROMPTS:
            for fam, t, h in HEURISTICS:
                ent = round(math.log(0.35 + 0.6 * t) + BASE_D[fam] + rng.gauss(0, 0.02), 6)
                sb = round(math.log(60 - 35 * t + rng.uniform(0, 4)), 6)
                d = {"self_bleu": sb, "embedding_entropy": ent, "sample_count": 2, "distinct_1": 0.5,
                     "distinct_2": 0.7, "distinct_3": 0.8, "distinct_4": 0.85}
                for _, _, r in recs:
                    if r["prompt_id"] == p["id"] and r["heuristic"]["id"] == h["id"]:
                        r["diversity"] = d
    for fam, t, r in recs:
        r["ngram"] = {"coverage": int(r["n_tokens"] * (0.9 - 0.3 * t)), "breaks": int(2 + 6 * t), "longest": 5,
                      "words": r["n_tokens"]}
        if "ground_truth" in r:
            r["verifiable_reward"] = 1 if rng.random() < 1.1 - 0.6 * t else 0
    # filter-topk: final score of the top 3 of each (prompt, seed) group
    pairs = []
    for p in PROMPTS:
        for seed in (0, 1):
            grp = [r for _, _, r in recs if r["prompt_id"] == p["id"] and r["seed"] == seed]
            for r in grp:
                div = r.get("diversity", {}).get("embedding_entropy") if r["checks"].get("diversity") else None
                r["_final"] = (0.9 * r["quality"]["bt"] + (0.1 * div if div is not None else 0)) / (0.9 + (0.1 if div is not None else 0))
            grp.sort(key=lambda r: -r["_final"])
            for k, r in enumerate(grp[:3]):
                r["score"] = {"quality": r["quality"]["bt"], "diversity": div, "verifiable": None,
                              "weights": {"quality": 0.9, "diversity": 0.1, "verifiable": 0.9},
                              "final": round(r["_final"], 6), "combined_scores": {}}
                r["rank"] = k + 1
            best, worst = grp[0], grp[-1]
            pairs.append({"prompt": p["prompt"], "chosen": best["generation"], "rejected": worst["generation"],
                          "chosen_id": best["id"], "rejected_id": worst["id"],
                          "margin": round(best["_final"] - worst["_final"], 6)})
            for r in grp:
                del r["_final"]
    with open(f"{out_dir}/pairs.jsonl", "w") as f:
        for x in pairs:
            f.write(json.dumps(x) + "\n")
else:
    open(f"{out_dir}/pairs.jsonl", "w").close()

with open(f"{out_dir}/candidates.jsonl", "w") as f:
    for _, _, r in recs:
        f.write(json.dumps(r) + "\n")
