#!/usr/bin/env python3
"""heldout-rank.py — where the learned sampler lands among the heuristics on
the prompts held out from its training: each heuristic's mean final score
(score.final, filter-topk) over its candidates of those prompts in FILTERED,
with a bootstrap interval over prompts for the learned sampler's margin over
the best heuristic.

    heldout-rank.py FILTERED.jsonl HELDOUT_PROMPTS.jsonl [--top 5] [--boot 2000] [--seed 0]

FILTERED: filter-topk output of a round that includes a `learned` heuristic:
`filter-topk -k 0` (every candidate, scored: every heuristic on the same
prompts and seeds) or the kept ones (the report's leaderboard measure);
HELDOUT_PROMPTS: prompt records ({"id": ...}) held out from the training.
Prints a table (rank, heuristic, kept, quality, diversity, final, 95%
interval of the mean over prompts; diversity is the mean embedding entropy
across seeds, score-diversity's) and a line with the learned sampler's rank
and margin."""
import json
import random
import sys


def main(argv):
    args, opts = [], {"--top": 5, "--boot": 2000, "--seed": 0}
    i = 0
    while i < len(argv):
        if argv[i] in opts:
            opts[argv[i]] = int(argv[i + 1])
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 2:
        sys.exit(__doc__)
    held = set()
    for n, line in enumerate(open(args[1]), 1):
        if line.strip():
            held.add(json.loads(line)["id"])
    per = {}  # heuristic -> prompt -> [final]
    qual, div = {}, {}
    learned = None
    for n, line in enumerate(open(args[0]), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        if r["prompt_id"] not in held:
            continue
        final = (r.get("score") or {}).get("final")
        if final is None:
            continue
        h = r["heuristic"]["name"]
        if any(p["name"] in ("learned", "adaptive_sampler") for p in r["heuristic"]["processors"]):
            learned = h
        per.setdefault(h, {}).setdefault(r["prompt_id"], []).append(final)
        qual.setdefault(h, []).append((r.get("quality") or {}).get("bt") or 0.0)
        e = (r.get("diversity") or {}).get("embedding_entropy")
        if e is not None:
            div.setdefault(h, []).append(e)
    if not per:
        sys.exit("heldout-rank: no kept candidate of a held-out prompt in %s" % args[0])
    # the prompts with candidates here (filter-topk drops the group of a
    # verifiable prompt that no candidate answered right)
    prompts = sorted(p for p in held if any(p in v for v in per.values()))
    empty = len(held) - len(prompts)

    def mean_of(h, sample):
        xs = [x for p in sample for x in per[h].get(p, [])]
        return sum(xs) / len(xs) if xs else None

    rng = random.Random(opts["--seed"])
    boots = [[rng.choice(prompts) for _ in prompts] for _ in range(opts["--boot"])]
    board = sorted(per, key=lambda h: -mean_of(h, prompts))

    def interval(h):
        ms = sorted(m for m in (mean_of(h, b) for b in boots) if m is not None)
        return (ms[int(0.025 * len(ms))], ms[int(0.975 * len(ms)) - 1]) if ms else (float("nan"),) * 2

    print("%4s  %-44s %5s %8s %9s %8s  %s" % ("rank", "heuristic", "kept", "quality", "diversity", "final",
                                              "95% interval (prompts)"))
    for k, h in enumerate(board, 1):
        if k <= opts["--top"] or h == learned:
            lo, hi = interval(h)
            kept = sum(len(v) for v in per[h].values())
            d = "%9.3f" % (sum(div[h]) / len(div[h])) if div.get(h) else "%9s" % "-"
            print("%4d%s %-44s %5d %8.3f %s %8.3f  [%.3f, %.3f]" % (k, "*" if h == learned else " ", h, kept,
                  sum(qual[h]) / len(qual[h]), d, mean_of(h, prompts), lo, hi))
    if learned is None:
        print("no learned sampler among the kept candidates of the held-out prompts")
        return
    best = next(h for h in board if h != learned)
    diffs = []
    for b in boots:
        a, c = mean_of(learned, b), mean_of(best, b)
        if a is not None and c is not None:
            diffs.append(a - c)
    diffs.sort()
    margin = mean_of(learned, prompts) - mean_of(best, prompts)
    lo, hi = (diffs[int(0.025 * len(diffs))], diffs[int(0.975 * len(diffs)) - 1]) if diffs else (float("nan"),) * 2
    print("learned: rank %d of %d on %d held-out prompts%s; margin over the best heuristic (%s) %+.3f, "
          "95%% bootstrap interval over prompts [%+.3f, %+.3f]" %
          (board.index(learned) + 1, len(board), len(prompts),
           " (and %d without a candidate here)" % empty if empty else "", best, margin, lo, hi))


if __name__ == "__main__":
    main(sys.argv[1:])
