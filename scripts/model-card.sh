#!/bin/sh
# Prints the facts of a demo model for examples/models/README.md: parameter
# count and validation figures from its training log, and sample generations
# at temperatures 0.3, 0.8 and 1.5 (seed 1, 48 new tokens).
#   sh scripts/model-card.sh MODEL.gguf LOG.jsonl [BIN]
M=$1; LOG=$2; BIN=${3:-bin}
/usr/bin/python3 - "$LOG" <<'PYEOF'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
last = rows[-1]
val = [r for r in rows if r.get("val_loss") is not None]
print("- training steps: %s, tokens: %s" % (last.get("step"), last.get("tokens")))
if val:
    v = val[-1]["val_loss"]
    print("- validation loss %.4f nats/token, perplexity %.2f" % (v, math.exp(v)))
PYEOF
for prompt in "And it came to pass, that" "CYNIC, n." "A man who"; do
    for t in 0.3 0.8 1.5; do
        printf -- '- T=%s, "%s" → ' "$t" "$prompt"
        "$BIN/generate" -m "$M" -n 48 --seed 1 --temperature $t "$prompt" 2>/dev/null | tr '\n' ' ' | cut -c1-300
        echo
    done
done
