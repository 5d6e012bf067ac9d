#!/bin/sh
# tokenize from the command line: text as an argument, -f FILE and stdin
# give the same ids; BOS and special tokens follow llama-tokenize's
# defaults (--no-bos, --no-parse-special turn them off); --pieces writes
# valid JSON whose pieces give the text back; llama.cpp's vectors through
# the tool; errors (no model, missing file, not a GGUF, no tokenizer, bad
# usage) with their exit codes.
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
TK="$BIN/tokenize"
V="$DATA/vocab"
SPM="$V/ggml-vocab-llama-spm.gguf"
L3="$V/ggml-vocab-llama-bpe.gguf"
QW="$V/ggml-vocab-qwen2.gguf"
BERT="$V/ggml-vocab-bert-bge.gguf"

# stdout_is NAME EXPECTED: the last command's stdout is exactly EXPECTED (one line).
stdout_is() {
    got=$(cat "$TMP/out")
    if [ "$got" = "$2" ]; then ok "$1"; else not_ok "$1" "stdout '$got', expected '$2'"; fi
}

# ------------------------------------------------------------ the basics

expect_status "SPM text argument: exit status 0" 0 "$TK" -m "$SPM" "Hello world"
stdout_is "SPM text argument: BOS then the ids" "[1,15043,3186]"
expect_status "--no-bos: exit status 0" 0 "$TK" -m "$SPM" --no-bos "Hello world"
stdout_is "--no-bos: no BOS" "[15043,3186]"

printf 'Hello world' > "$TMP/hello.txt"
expect_status "-f FILE: exit status 0" 0 "$TK" -m "$SPM" -f "$TMP/hello.txt"
stdout_is "-f FILE: the same ids as the argument" "[1,15043,3186]"
expect_status "stdin: exit status 0" 0 sh -c '"$1" -m "$2" < "$3"' sh "$TK" "$SPM" "$TMP/hello.txt"
stdout_is "stdin: the same ids as the argument" "[1,15043,3186]"
expect_status "-f -: exit status 0" 0 sh -c '"$1" -m "$2" -f - < "$3"' sh "$TK" "$SPM" "$TMP/hello.txt"
stdout_is "-f - reads stdin" "[1,15043,3186]"

printf 'Hello world\n' > "$TMP/hello-nl.txt"
expect_status "a trailing newline in the file is kept" 0 "$TK" -m "$SPM" -f "$TMP/hello-nl.txt"
stdout_is "a trailing newline in the file is kept: <0x0A> at the end" "[1,15043,3186,13]"

expect_status "empty text, SPM: exit status 0" 0 "$TK" -m "$SPM" ""
stdout_is "empty text, SPM: BOS alone" "[1]"
expect_status "empty text, qwen2 (no BOS): exit status 0" 0 "$TK" -m "$QW" ""
stdout_is "empty text, qwen2: empty array" "[]"

# special tokens are parsed by default, and BOS is added even if the text starts with one
expect_status "llama3 chat prompt: exit status 0" 0 "$TK" -m "$L3" "<|begin_of_text|><|start_header_id|>user<|end_header_id|>"
stdout_is "llama3 chat prompt: BOS twice, special tokens parsed" "[128000,128000,128006,882,128007]"
expect_status "--no-parse-special: exit status 0" 0 "$TK" -m "$L3" --no-parse-special "<|eot_id|>"
if grep -q '128009' "$TMP/out"; then not_ok "--no-parse-special: <|eot_id|> is plain text" "$(cat "$TMP/out")"
else ok "--no-parse-special: <|eot_id|> is plain text"; fi
expect_status "qwen2 chatml: exit status 0" 0 "$TK" -m "$QW" "<|im_start|>user
hi<|im_end|>"
stdout_is "qwen2 chatml: im_start, text, im_end; no BOS" "[151644,872,198,6023,151645]"

# WordPiece: [CLS] (101) and [SEP] (102) around the ids of llama.cpp's vector "Hello world"
expect_status "bert-bge WordPiece: exit status 0" 0 "$TK" -m "$BERT" "Hello world"
stdout_is "bert-bge WordPiece: [CLS], the words, [SEP]" "[101,7592,2088,102]"
expect_status "bert-bge --no-bos: exit status 0" 0 "$TK" -m "$BERT" --no-bos "Hello world"
stdout_is "bert-bge --no-bos: neither [CLS] nor [SEP]" "[7592,2088]"

# ------------------------------------------------------------------ --pieces

printf 'caf\303\251 \360\237\246\231 <b>\n\tok' > "$TMP/mixed.txt"
expect_status "--pieces: exit status 0" 0 "$TK" -m "$SPM" --pieces -f "$TMP/mixed.txt"
check "--pieces: valid JSON; ids as without --pieces; the pieces after BOS give the text back" \
    "$PY" -c '
import json, subprocess, sys
tk, model, path = sys.argv[1:4]
objs = json.load(open(sys.argv[4]))
ids = json.loads(subprocess.run([tk, "-m", model, "-f", path], capture_output=True, check=True).stdout)
assert [o["id"] for o in objs] == ids, (objs, ids)
raw = b"".join(bytes(o["bytes"]) if "bytes" in o else o["piece"].encode() for o in objs)
assert objs[0]["piece"] == "<s>", objs[0]
want = open(path, "rb").read()
assert raw[len(b"<s>"):] == b" " + want, (raw, want)  # SPM: the space prefix
assert any("bytes" in o for o in objs), "the emoji is written as byte tokens"
' "$TK" "$SPM" "$TMP/mixed.txt" "$TMP/out"

printf 'abc\377 def caf\303' > "$TMP/bad-utf8.txt"
expect_status "invalid UTF-8 input: exit status 0" 0 "$TK" -m "$L3" --pieces -f "$TMP/bad-utf8.txt"
check "invalid UTF-8 input: the output is valid JSON" "$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/out"

# ----------------------------------------- llama.cpp's vectors, through the tool

check "llama-spm vectors through the tool (--no-bos --no-parse-special)" "$PY" -c '
import json, subprocess, sys
tk, model, tmp = sys.argv[1:4]
inp = open(model + ".inp", "rb").read().split(b"\n__ggml_vocab_test__\n")[:-1]
out = open(model + ".out").read().split("\n")
bad = []
for i, text in enumerate(inp):
    p = tmp + "/case.txt"
    open(p, "wb").write(text)
    got = json.loads(subprocess.run([tk, "-m", model, "--no-bos", "--no-parse-special", "-f", p],
                                    capture_output=True, check=True).stdout)
    want = [int(x) for x in out[i].split()]
    if got != want:
        bad.append((i + 1, got, want))
assert not bad, bad[:3]
' "$TK" "$SPM" "$TMP"

check "bert-bge (WordPiece) vectors through the tool (--no-bos --no-parse-special)" "$PY" -c '
import json, subprocess, sys
tk, model, tmp = sys.argv[1:4]
inp = open(model + ".inp", "rb").read().split(b"\n__ggml_vocab_test__\n")[:-1]
out = open(model + ".out").read().split("\n")
bad = []
for i, text in enumerate(inp):
    p = tmp + "/case.txt"
    open(p, "wb").write(text)
    got = json.loads(subprocess.run([tk, "-m", model, "--no-bos", "--no-parse-special", "-f", p],
                                    capture_output=True, check=True).stdout)
    want = [int(x) for x in out[i].split()]
    if got != want:
        bad.append((i + 1, got, want))
assert len(inp) == 46 and not bad, bad[:3]
' "$TK" "$BERT" "$TMP"

# ------------------------------------------------------------------- errors

expect_status "no -m: exit status 2" 2 "$TK" "text"
expect_stderr "no -m: the error says -m is required" '^tokenize: .*-m'
expect_status "missing model file: exit status 1" 1 "$TK" -m "$TMP/nope.gguf" "text"
expect_stderr "missing model file: the error names the file" '^tokenize: .*nope\.gguf'
expect_status "not a GGUF: exit status 1" 1 "$TK" -m "$TMP/hello.txt" "text"
expect_stderr "not a GGUF: the error names the file and says so" '^tokenize: .*hello\.txt.*(GGUF|magic)'
if [ -f "$ROOT/tests/fixtures/gguf_ref.gguf" ]; then
    expect_status "a GGUF without tokenizer: exit status 1" 1 "$TK" -m "$ROOT/tests/fixtures/gguf_ref.gguf" "text"
    expect_stderr "a GGUF without tokenizer: the error says so" '^tokenize: .*gguf_ref\.gguf: .*tokenizer'
fi
expect_status "missing -f file: exit status 1" 1 "$TK" -m "$SPM" -f "$TMP/nope.txt"
expect_stderr "missing -f file: the error names the file" '^tokenize: .*nope\.txt'
expect_status "two text arguments: exit status 2" 2 "$TK" -m "$SPM" "a" "b"
expect_status "text and -f together: exit status 2" 2 "$TK" -m "$SPM" -f "$TMP/hello.txt" "a"
if [ -s "$TMP/out" ]; then not_ok "usage errors write nothing to stdout" "$(head -c 200 "$TMP/out")"
else ok "usage errors write nothing to stdout"; fi
expect_status "--help: exit status 0" 0 "$TK" --help
expect_stdout "--help names the options" 'no-parse-special'
