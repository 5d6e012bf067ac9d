"""hostile_gguf.py KIND IN OUT — writes a damaged or hostile copy of the
GGUF file IN: the bad-input cases of docs/bad-input.md.

  truncated      the first half of the file
  header-only    the first 100 bytes
  huge-tensors   the tensor count 2^60
  huge-kvs       the key-value count 2^60
  offset-past    the first tensor's data offset 2^40 (past the end)
  huge-shape     the first tensor's shape [2^40, 2^40] (elements overflow)
  empty-vocab    tokenizer.ggml.tokens (and its scores, types) empty
  nan-weights    every float of the output / embedding weights NaN
                 (F32 tensors; F16/Q8_0 scales set to an f16 NaN), so the
                 model's logits are NaN
"""
import struct
import sys

kind, src, dst = sys.argv[1:4]
b = bytearray(open(src, "rb").read())

if kind == "truncated":
    open(dst, "wb").write(b[: len(b) // 2]); sys.exit()
if kind == "header-only":
    open(dst, "wb").write(b[:100]); sys.exit()
if kind == "huge-tensors":
    struct.pack_into("<Q", b, 8, 1 << 60); open(dst, "wb").write(b); sys.exit()
if kind == "huge-kvs":
    struct.pack_into("<Q", b, 16, 1 << 60); open(dst, "wb").write(b); sys.exit()

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
n_t, n_kv = struct.unpack_from("<QQ", b, 8)

def skip_str(o):
    n, = struct.unpack_from("<Q", b, o)
    return o + 8 + n

def skip_value(t, o):
    if t == 8:
        return skip_str(o)
    if t == 9:
        at, n = struct.unpack_from("<IQ", b, o)
        o += 12
        if at in SIZES:
            return o + n * SIZES[at]
        for _ in range(n):
            o = skip_value(at, o)
        return o
    return o + SIZES[t]

off = 24
kvs = []  # (key, type, start of the entry, start of the value, end)
align = 32
for _ in range(n_kv):
    start = off
    klen, = struct.unpack_from("<Q", b, off)
    key = b[off + 8: off + 8 + klen].decode()
    off += 8 + klen
    t, = struct.unpack_from("<I", b, off)
    vstart = off + 4
    off = skip_value(t, vstart)
    kvs.append((key, t, start, vstart, off))
    if key == "general.alignment":
        align, = struct.unpack_from("<I", b, vstart)
tinfo_start = off
tensors = []  # (name, info start, dims offset, n_dims, type, offset field position)
for _ in range(n_t):
    s = off
    nlen, = struct.unpack_from("<Q", b, off)
    name = b[off + 8: off + 8 + nlen].decode()
    off += 8 + nlen
    nd, = struct.unpack_from("<I", b, off)
    dims_at = off + 4
    dims = struct.unpack_from("<%dQ" % nd, b, dims_at)
    off = dims_at + 8 * nd
    tt, = struct.unpack_from("<I", b, off)
    tensors.append((name, s, dims_at, nd, dims, tt, off + 4))
    off += 12
data_start = (off + align - 1) // align * align

if kind == "offset-past":
    struct.pack_into("<Q", b, tensors[0][6], 1 << 40); open(dst, "wb").write(b); sys.exit()
if kind == "huge-shape":
    name, s, dims_at, nd, dims, tt, _ = tensors[0]
    for i in range(min(nd, 2)):
        struct.pack_into("<Q", b, dims_at + 8 * i, 1 << 40)
    open(dst, "wb").write(b); sys.exit()
if kind == "nan-weights":
    names = [t for t in tensors if t[0] == "output.weight"] or [t for t in tensors if t[0] == "token_embd.weight"]
    for name, s, dims_at, nd, dims, tt, offpos in names:
        n = 1
        for d in dims:
            n *= d
        o = data_start + struct.unpack_from("<Q", b, offpos)[0]
        if tt == 0:  # F32
            for i in range(n):
                struct.pack_into("<I", b, o + 4 * i, 0x7FC00000)
        elif tt == 1:  # F16
            for i in range(n):
                struct.pack_into("<H", b, o + 2 * i, 0x7E00)
        elif tt == 8:  # Q8_0: blocks of an f16 scale and 32 int8
            for k in range(n // 32):
                struct.pack_into("<H", b, o + 34 * k, 0x7E00)
        else:
            sys.exit("nan-weights: tensor type %d not handled" % tt)
    open(dst, "wb").write(b); sys.exit()
if kind == "empty-vocab":
    out = bytearray(b[:24])
    for key, t, start, vstart, end in kvs:
        if key in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"):
            at, = struct.unpack_from("<I", b, vstart)
            out += b[start:vstart] + struct.pack("<IQ", at, 0)
        else:
            out += b[start:end]
    out += b[tinfo_start:off]
    out += bytes((-len(out)) % align)
    out += b[data_start:]
    open(dst, "wb").write(out); sys.exit()
sys.exit("unknown kind " + kind)
