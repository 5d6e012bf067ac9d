# cluster.sh — what the multi-host pipeline tests share (sourced after cli.sh):
# the packages, a self-contained copy of the pipeline's top directory, the
# serial run every engine is compared with, and the index rows.

# cluster_need WHAT: skips the whole test (and exits) unless root with the
# cluster packages (installed here when missing, as `make deps-cluster`
# does); daemons need root to switch users and bind their sockets.
cluster_need() {
    if [ -n "${ASN_SANITIZED:-}" ]; then
        # they test the orchestration; the programs they run are the
        # sanitized suite's own subjects everywhere else
        skip "$1" "the sanitizer pass: the cluster tests run in make test"
        exit 0
    fi
    if [ "$(id -u)" != 0 ]; then
        skip "$1" "not root: the test starts its own daemons"
        exit 0
    fi
    if ! sh "$ROOT/scripts/install-deps.sh" cluster > "$TMP/apt.log" 2>&1; then
        skip "$1" "the cluster packages are missing and could not be installed: $(tail -1 "$TMP/apt.log")"
        exit 0
    fi
}

# a sub-make must not inherit the flags or variables of a make running the suite
unset MAKEFLAGS MFLAGS MAKELEVEL MODEL PROMPTS SOURCES HEURISTICS OUT SHARDS

# cluster_top DIR: a top directory with only what a run needs, every path in
# it relative: the pipeline files, the programs, the model, the heuristics,
# prompts (ids from the default system, an explicit id, a verifiable item)
# and an n-gram corpus.
CLUSTER_TOOLS="gen-candidates verify rank-bt score-diversity score-ngram score-verifiable index filter-topk report"
cluster_top() {
    mkdir -p "$1/pipelines/slurm" "$1/bin" "$1/data"
    cp "$ROOT/pipelines/full.mk" "$ROOT/pipelines/full-parallel.sh" "$1/pipelines/"
    cp "$ROOT"/pipelines/slurm/* "$1/pipelines/slurm/"
    for t in $CLUSTER_TOOLS; do cp "$BIN/$t" "$1/bin/"; done
    cp "$ROOT/tests/data/models/tiny-spm-q8_0.gguf" "$1/data/model.gguf"
    cp "$ROOT/tests/data/reference-configs/custom_logit_processors_test.yaml" "$1/data/heuristics.yaml"
    cp "$ROOT/tests/data/ngram/corpus_a.txt" "$1/data/corpus.txt"
    cp "$ROOT/tests/data/reference-configs/test_prompts.jsonl" "$1/data/prompts.jsonl"
    cat >> "$1/data/prompts.jsonl" <<'EOF'
{"id": "math-1", "prompt": "Tom has 3 apples and buys 4 more. How many apples does he have?", "dataset": "gsm8k", "ground_truth": "7"}
{"prompt": "Tell me a joke about compilers.", "system": "You are a comedian."}
EOF
}
# full.mk's variables for that directory (SHARDS and OUT come on top)
CLUSTER_VARS="MODEL=data/model.gguf HEURISTICS=data/heuristics.yaml PROMPTS=data/prompts.jsonl SEEDS=0-1 \
MAX_NEW_TOKENS=12 MIN_NEW_TOKENS=2 THREADS=1 NGRAM_CORPUS=data/corpus.txt TOP_K=2"
CLUSTER_STAGES="candidates verified ranked diverse ngram scored filtered pairs"

# cluster_rows DB: the index's rows in id order (rowids aside)
cluster_rows() {
    /usr/bin/python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("SELECT id, kind, prompt_id, heuristic_id, heuristic_name, seed, json FROM records ORDER BY id"):
    print(repr(row))' "$1"
}

# cluster_same REF OUT: every merged stage and the index rows of OUT are those of REF
cluster_same() {
    for f in $CLUSTER_STAGES; do
        test -s "$1/$f.jsonl" || { echo "$1/$f.jsonl is missing or empty"; return 1; }
        cmp "$1/$f.jsonl" "$2/$f.jsonl" || return 1
    done
    cluster_rows "$1/index.db" > "$1/rows.txt" && cluster_rows "$2/index.db" > "$2/rows.txt" &&
        test -s "$1/rows.txt" && cmp "$1/rows.txt" "$2/rows.txt"
}

# free_port: a TCP port nothing listens on now, on 127.0.0.1
free_port() {
    /usr/bin/python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
