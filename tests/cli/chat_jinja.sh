#!/bin/sh
# The prompt asn builds is the one the model's own Jinja chat template
# renders: every real template of tests/data/chat/templates/ rendered by
# Python's jinja2 as transformers' apply_chat_template does
# (tests/scripts/render_chat.py), for three conversations (the research
# pipeline's system message and question; no system message and spaces
# around the text; a system message with spaces and a newline), and for
# Llama 3.2's template a second "Today Date" (tokenize --chat-date); asn's
# text (tokenize --chat --print-prompt) must be byte-identical, the leading
# BOS text aside (the template writes bos_token, asn's tokenizer adds the
# token). The token ids carry exactly one BOS. Templates whose extras asn
# does not write are listed as known differences (skipped, with why).
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
TK="$BIN/tokenize"
L3="$DATA/vocab/ggml-vocab-llama-bpe.gguf"
if ! $PY -c 'import jinja2' 2> /dev/null; then
    skip "Jinja renderings" "python3-jinja2 is not installed (scripts/install-deps.sh)"
    exit 0
fi
mkdir "$TMP/r"
# the renderings through the SentencePiece test vocab (BOS "<s>"; small, so
# fast to load), the one-BOS checks through Llama 3's
SPM="$DATA/vocab/ggml-vocab-llama-spm.gguf"
check "jinja2 renders every template" $PY "$ROOT/tests/scripts/render_chat.py" "$TMP/r" "<s>" "$DATA"/chat/templates/*.jinja

# known: templates whose extras asn does not write
known() {
    case $1 in
    Mistral-Small-3.2-*) echo "its default system message holds the day it runs (%Y-%m-%d)" ;;
    NousResearch-Hermes-3-*-tool_use.jinja) echo "the tool-use variant writes its tool-calling system text" ;;
    HuggingFaceTB-SmolLM3-3B.jinja) echo "SmolLM3's metadata block and reasoning-mode system text" ;;
    esac
}

same=0 skipped=
for c in "$TMP"/r/*.case; do
    n=${c%.case}
    IFS='	' read -r tf date < "$c"
    name=$(basename "$tf")
    why=$(known "$name")
    if [ -f "$n.refused" ]; then
        # gemma 2 has no system role: its template refuses one, asn merges
        # it into the first user turn as llama.cpp does
        ok "$name: the template refuses the conversation ($(cat "$n.refused"))"
        continue
    fi
    set -- --chat --chat-template-file "$tf" --chat-date "$date" --print-prompt -f "$n.user"
    if [ -f "$n.system" ]; then
        s=$(cat "$n.system"; printf x)
        set -- "$@" --system "${s%x}"
    fi
    if ! "$TK" -m "$SPM" "$@" > "$n.got" 2> "$n.err"; then
        not_ok "$name ($(basename "$n"))" "tokenize failed: $(head -c 300 "$n.err")"
        continue
    fi
    sed '1s/^<s>//' "$n.got" > "$n.g"
    sed '1s/^<s>//' "$n.expected" > "$n.e"
    if cmp -s "$n.g" "$n.e"; then
        [ -z "$why" ] && same=$((same + 1)) && continue
        not_ok "$name ($(basename "$n"))" "listed as a known difference but now identical: update the list"
    elif [ -n "$why" ]; then
        case " $skipped " in *" $name "*) ;; *)
            skipped="$skipped $name"
            skip "$name: the Jinja rendering" "known difference: $why" ;;
        esac
    else
        not_ok "$name ($(basename "$n")), date $date" "asn $(od -c "$n.g" | head -3 | tr '\n' ' ') / jinja $(od -c "$n.e" | head -3 | tr '\n' ' ')"
    fi
done
if [ "$same" -ge 40 ]; then ok "$same renderings byte-identical to jinja2's"; else not_ok "renderings" "only $same identical"; fi

# the research pipeline's models: the families asn picks
for t in meta-llama-Llama-3.2-3B-Instruct:llama3.1 Qwen-Qwen2.5-7B-Instruct:qwen2.5 google-gemma-3-4b-it:gemma3; do
    f=${t%%:*}; fam=${t#*:}
    "$TK" -m "$SPM" --chat --chat-template-file "$DATA/chat/templates/$f.jinja" --chat-template "$fam" --print-prompt "x" > "$TMP/named" 2>&1
    "$TK" -m "$SPM" --chat --chat-template-file "$DATA/chat/templates/$f.jinja" --print-prompt "x" > "$TMP/detected" 2>&1
    if cmp -s "$TMP/named" "$TMP/detected"; then ok "$f: detected as $fam"; else not_ok "$f: detected as $fam" "$(head -c 200 "$TMP/detected")"; fi
done

# exactly one BOS: the template writes bos_token, the tokenizer adds BOS
expect_status "--chat: ids" 0 "$TK" -m "$L3" --chat --system "You are a helpful assistant." \
    --chat-template-file "$DATA/chat/templates/meta-llama-Llama-3.2-3B-Instruct.jinja" "Hi"
nbos=$(tr ',' '\n' < "$TMP/out" | tr -d '[]' | grep -cx 128000)
if [ "$nbos" = 1 ]; then ok "the prompt tokens hold exactly one BOS"; else not_ok "one BOS" "$nbos in $(cat "$TMP/out")"; fi
if head -c 15 "$TMP/out" | grep -q '^\[128000,128006'; then ok "BOS first, then the system header"; else not_ok "BOS first" "$(head -c 40 "$TMP/out")"; fi
# a text that itself opens with the BOS text gets no second one
expect_status "--chat, a template text that writes the BOS text: ids" 0 "$TK" -m "$L3" --chat --chat-template none "<|begin_of_text|>Hi"
nbos=$(tr ',' '\n' < "$TMP/out" | tr -d '[]' | grep -cx 128000)
if [ "$nbos" = 1 ]; then ok "a prompt that writes BOS itself: still one BOS"; else not_ok "one BOS (written)" "$(cat "$TMP/out")"; fi

# --chat-date: checked
expect_status "--chat-date not a date: exit 2" 2 "$TK" -m "$L3" --chat --chat-date "2025-03-05" "x"
expect_stderr "--chat-date not a date: says the form" "DD Mon YYYY"
expect_status "--system without --chat: exit 2" 2 "$TK" -m "$L3" --system "x" "x"
