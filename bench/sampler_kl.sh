#!/bin/sh
# sampler_kl.sh — how well each learned-sampler architecture reproduces its
# targets on held-out data: KL(target || raw) / KL(target || learned), both
# measured by analyze-sampler in the same run (the raw model is the baseline).
#
#   sh bench/sampler_kl.sh [DEMO_OUT]      (make bench-kl; minutes, not CI)
#
# 1. V = 32000: the tiny SentencePiece model of the tests (random weights,
#    llama.cpp's 32k vocabulary), one heuristic (min_p 0.1 at temperature
#    0.7), the prompts of tests/data/sampler (12 train, 4 held-out).
# 2. A mix of heuristics: the kept candidates (filter-topk) of a demo run on
#    demo-base (DEMO_OUT, default out/demo: run `make demo` first), split by
#    prompt: every third prompt is held out.
# Every architecture trains with the same options as tests/cli/sampler_evidence.sh.
set -e
BIN=${BIN:-bin}
DEMO=${1:-out/demo}
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
D=tests/data/sampler
C=configs/samplers
THREADS=${THREADS:-2}

train() { # train MODEL ARCH TRAIN OUT [OPTIONS]
    m=$1 a=$2 data=$3 out=$4; shift 4
    case $a in
        SamplingNetwork) cfg=network.yaml lr=0.005 ;;
        SimpleDistributionAwareTransform) cfg=dist.yaml lr=0.01 ;;
        *) cfg=local.yaml lr=0.01 ;;
    esac
    start=$(date +%s.%N)
    "$BIN/train-sampler" -m "$m" -q -a "$a" -c "$C/$cfg" -b 8 --gradient-accumulation-steps 1 \
        --num-warmup-steps 20 --loss-gamma 1 --learning-rate $lr --save-steps 0 -t "$THREADS" -o "$out" "$@" "$data"
    end=$(date +%s.%N)
    rows=$($PY -c "import json; print(json.loads(open('${out%.gguf}.log.jsonl').read().splitlines()[-1])['rows'])")
    secs=$($PY -c "print('%.1f' % ($end - $start))")
}

measure() { # measure LABEL MODEL SAMPLER HELD
    "$BIN/analyze-sampler" -m "$2" -S "$3" --candidates "$4" --json -t "$THREADS" > "$T/a.jsonl"
    $PY -c "
import json
s = json.loads(open('$T/a.jsonl').read().splitlines()[-1])['summary']
print('%-58s %6d %9.4f %9.4f %7.1fx %7.4f %7.4f %6d rows %6.1f s' % ('$1', s['steps'], s['kl_raw'], s['kl_learned'],
      s['kl_raw'] / s['kl_learned'], s['mass_raw'], s['mass_learned'], $rows, $secs))"
}

printf '%-58s %6s %9s %9s %8s %7s %7s %s\n' "case" "steps" "KL raw" "KL lrn" "ratio" "m raw" "m lrn" "training"

# 1. V = 32000
M32=tests/data/models/tiny-spm-q8_0.gguf
"$BIN/gen-candidates" -m $M32 -H $D/minp.yaml -n 48 --min-new-tokens 48 --seeds 0-3 $D/train_prompts.jsonl > "$T/t32.jsonl" 2>/dev/null
"$BIN/gen-candidates" -m $M32 -H $D/minp.yaml -n 48 --min-new-tokens 48 --seeds 0-1 $D/heldout_prompts.jsonl > "$T/h32.jsonl" 2>/dev/null
for a in LocalProbabilityTransform SimpleDistributionAwareTransform SamplingNetwork; do
    case $a in SamplingNetwork) steps="--max-steps 100" ;; *) steps="--num-epochs 2" ;; esac
    train $M32 $a "$T/t32.jsonl" "$T/s.gguf" $steps
    measure "V=32000 min_p 0.1 temp 0.7: $a" $M32 "$T/s.gguf" "$T/h32.jsonl"
done

# 2. the mix of heuristics a demo run kept
if [ -f "$DEMO/round1/filtered.jsonl" ]; then
    M=examples/models/demo-base.gguf
    $PY - "$DEMO/round1/filtered.jsonl" "$T/tmix.jsonl" "$T/hmix.jsonl" <<'PYEOF'
import json, sys
order, recs = [], {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["prompt_id"] not in recs:
        order.append(r["prompt_id"]); recs[r["prompt_id"]] = []
    recs[r["prompt_id"]].append(l)
with open(sys.argv[2], "w") as tr, open(sys.argv[3], "w") as he:
    for i, p in enumerate(order):
        (he if i % 3 == 2 else tr).writelines(recs[p])
PYEOF
    for a in LocalProbabilityTransform SimpleDistributionAwareTransform SamplingNetwork; do
        case $a in SamplingNetwork) steps="--max-steps 300" ;; *) steps="--num-epochs 4" ;; esac
        train $M $a "$T/tmix.jsonl" "$T/s.gguf" $steps
        measure "demo mix ($(wc -l < "$T/tmix.jsonl") train / $(wc -l < "$T/hmix.jsonl") held-out): $a" $M "$T/s.gguf" "$T/hmix.jsonl"
    done
else
    echo "($DEMO/round1/filtered.jsonl not found: run make demo for the mix-of-heuristics rows)"
fi
