#!/usr/bin/env python3
"""sweep-final.py — the sweep's finalists by the pipeline's own measure: each
finalist (a run of sweep.tsv, a `learned <config>` heuristic of a round of
the labelling chain) gets the mean final score (score.final, filter-topk)
of every one of its candidates in SCORED_ALL, and its rank among all the
round's heuristics by that mean; the chosen one is the finalist of the
highest mean (the first of equal ones, in FINALISTS' order).

    sweep-final.py SCORED_ALL.jsonl SWEEP.tsv FINALISTS.txt > final.tsv

SCORED_ALL: `filter-topk -k 0` output of the round; SWEEP: sweep.mk's
table (for the held-out KL); FINALISTS: one config name per line, in order
of held-out KL. Writes the table `config heldout_kl final candidates rank
heuristics chosen`, a row per finalist in FINALISTS' order."""
import json
import sys


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    kl = {}
    with open(argv[1]) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(head, line.rstrip("\n").split("\t")))
            kl[row["config"]] = row["heldout_kl"]
    finalists = [l.strip() for l in open(argv[2]) if l.strip()]
    if not finalists:
        sys.exit("sweep-final: %s names no finalist" % argv[2])
    scores = {}  # heuristic name -> [final]
    for n, line in enumerate(open(argv[0]), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        final = (r.get("score") or {}).get("final")
        if final is None:
            continue
        scores.setdefault(r["heuristic"]["name"], []).append(final)
    mean = {h: sum(v) / len(v) for h, v in scores.items()}
    board = sorted(mean, key=lambda h: -mean[h])
    rows = []
    for c in finalists:
        h = "learned " + c
        if h not in mean:
            sys.exit("sweep-final: %s: no scored candidate of heuristic \"%s\"" % (argv[0], h))
        if c not in kl:
            sys.exit("sweep-final: %s: no row for \"%s\"" % (argv[1], c))
        rows.append([c, kl[c], mean[h], len(scores[h]), board.index(h) + 1])
    best = max(range(len(rows)), key=lambda i: (rows[i][2], -i))
    print("config\theldout_kl\tfinal\tcandidates\trank\theuristics\tchosen")
    for i, r in enumerate(rows):
        print("%s\t%s\t%.6f\t%d\t%d\t%d\t%d" % (r[0], r[1], r[2], r[3], r[4], len(board), i == best))


if __name__ == "__main__":
    main(sys.argv[1:])
