#!/bin/sh
# sampler_families.sh — held-out KL per heuristic family: for each family
# (one heuristic at temperature 0.7), demo-base generates candidates for the
# 12 training prompts of tests/data/sampler (4 seeds) and the 4 held-out
# ones (2 seeds); each architecture trains on the first and analyze-sampler
# measures KL(target || raw) and KL(target || learned) on the second.
#
#   sh bench/sampler_families.sh [ARCH ...]      (make bench-families; minutes, not CI)
#
# Default architectures: EquivariantLocalTransform and
# SimpleDistributionAwareTransform, hidden 8 (configs/samplers/).
set -e
BIN=${BIN:-bin}
PY=/usr/bin/python3
M=examples/models/demo-base.gguf
D=tests/data/sampler
C=configs/samplers
THREADS=${THREADS:-2}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ARCHS=${*:-EquivariantLocalTransform SimpleDistributionAwareTransform}

family() { # family NAME PROCESSOR PARAMS
    printf 'sampling_pipelines:\n  - name: "%s"\n    processors:\n      - {name: temperature, params: {temperature: 0.7}}\n      - {name: %s, params: %s}\n' "$1" "$2" "$3" > "$T/$1.yaml"
}
family min_p min_p '{min_p: 0.1}'
family top_p top_p '{top_p: 0.8}'
family top_k top_k '{top_k: 16}'
family typical typical '{mass: 0.9}'
family epsilon epsilon '{epsilon: 0.02}'
family eta eta '{epsilon: 0.002}'

printf '%-10s %-34s %6s %9s %9s %8s\n' family arch steps "KL raw" "KL lrn" ratio
for f in min_p top_p top_k typical epsilon eta; do
    "$BIN/gen-candidates" -m $M -H "$T/$f.yaml" -n 48 --min-new-tokens 48 --seeds 0-3 -t "$THREADS" $D/train_prompts.jsonl > "$T/train.jsonl" 2>/dev/null
    "$BIN/gen-candidates" -m $M -H "$T/$f.yaml" -n 48 --min-new-tokens 48 --seeds 0-1 -t "$THREADS" $D/heldout_prompts.jsonl > "$T/held.jsonl" 2>/dev/null
    for a in $ARCHS; do
        case $a in
            EquivariantLocalTransform) cfg=equivariant.yaml lr=0.02 ep=4 ;;
            SimpleDistributionAwareTransform) cfg=dist.yaml lr=0.01 ep=2 ;;
            SamplingNetwork) cfg=network.yaml lr=0.005 ep=2 ;;
            *) cfg=local.yaml lr=0.01 ep=4 ;;
        esac
        "$BIN/train-sampler" -m $M -q -a $a -c $C/$cfg -b 8 --gradient-accumulation-steps 1 --num-warmup-steps 20 \
            --loss-gamma 1 --learning-rate $lr --num-epochs $ep --save-steps 0 -t "$THREADS" -o "$T/s.gguf" "$T/train.jsonl"
        "$BIN/analyze-sampler" -m $M -S "$T/s.gguf" --candidates "$T/held.jsonl" --json -t "$THREADS" > "$T/a.jsonl"
        $PY -c "
import json
s = json.loads(open('$T/a.jsonl').read().splitlines()[-1])['summary']
print('%-10s %-34s %6d %9.4f %9.4f %7.1fx' % ('$f', '$a', s['steps'], s['kl_raw'], s['kl_learned'], s['kl_raw'] / s['kl_learned']))"
    done
done
