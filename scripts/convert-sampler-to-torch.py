#!/usr/bin/python3
"""Converts an asn sampler file (GGUF, as train-sampler writes it) into the
reference project's checkpoint: a PyTorch state_dict saved with torch.save
(sampler_model.bin) and the sampler config YAML of its constructor
arguments, which the reference's code loads as

    model = SAMPLER_MODELS[name](dtype=torch.float32, **yaml.safe_load(config))
    model.load_state_dict(torch.load("sampler_model.bin"))

    convert-sampler-to-torch.py sampler.gguf sampler_model.bin model_config.yaml

The inverse of scripts/convert-torch-sampler.py (same layout, same checks):
the keys are the state_dict's own (no "_orig_mod." prefix: the reference's
loaders take plain keys), in its order, float32 tensors of its shapes
(scalars 0-dimensional). The YAML holds the class's constructor arguments
and names the class in a comment first (the reference passes it on the
command line, --sampler_model_name); the class name is also printed on
stdout. train-sampler's training state (train.* keys and tensors: Adam
moments, position) is left out; a sampler class the reference does not
have (EquivariantLocalTransform) is an error.

Needs python3-torch and python3-yaml; the GGUF reader needs only the
standard library and numpy."""
import argparse
import importlib.util
import os
import struct
import sys

import numpy as np

_spec = importlib.util.spec_from_file_location(
    "convert_torch_sampler", os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert-torch-sampler.py"))
conv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conv)

# GGUF value types: fixed-size ones as struct formats; 8 = string, 9 = array
_FMT = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
GGUF_TYPE_F32 = 0


def read_gguf(path):
    """(kvs {key: value}, tensors [(name, float32 array in PyTorch's shape)])
    of an asn sampler file (general.architecture asn-sampler; F32 tensors)."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    version, n_t, n_kv = struct.unpack_from("<IQQ", b, 4)
    if version != 3:
        raise ValueError(f"{path}: GGUF version {version}, expected 3")
    o = 24

    def string(o):
        n, = struct.unpack_from("<Q", b, o)
        if o + 8 + n > len(b):
            raise ValueError(f"{path}: truncated")
        return b[o + 8:o + 8 + n].decode(), o + 8 + n

    def value(t, o):
        if t == 8:
            return string(o)
        if t == 9:
            at, n = struct.unpack_from("<IQ", b, o)
            o += 12
            out = []
            for _ in range(n):
                v, o = value(at, o)
                out.append(v)
            return out, o
        if t not in _FMT:
            raise ValueError(f"{path}: unknown GGUF value type {t}")
        f = "<" + _FMT[t]
        return struct.unpack_from(f, b, o)[0], o + struct.calcsize(f)

    kvs = {}
    try:
        for _ in range(n_kv):
            k, o = string(o)
            t, = struct.unpack_from("<I", b, o)
            kvs[k], o = value(t, o + 4)
        infos = []
        for _ in range(n_t):
            name, o = string(o)
            nd, = struct.unpack_from("<I", b, o)
            ne = struct.unpack_from("<%dQ" % nd, b, o + 4)
            o += 4 + 8 * nd
            t, off = struct.unpack_from("<IQ", b, o)
            o += 12
            infos.append((name, ne, t, off))
    except struct.error:
        raise ValueError(f"{path}: truncated") from None
    if kvs.get("general.architecture") != "asn-sampler":
        raise ValueError(f"{path}: not an asn sampler file (general.architecture is "
                         f"{kvs.get('general.architecture')!r}, expected 'asn-sampler')")
    align = kvs.get("general.alignment", 32)
    base = (o + align - 1) // align * align
    tensors = []
    for name, ne, t, off in infos:
        if name.startswith("train."):
            continue  # train-sampler's training state, not the sampler
        if t != GGUF_TYPE_F32:
            raise ValueError(f"{path}: tensor {name} is of GGUF type {t}, expected F32")
        n = int(np.prod(ne))
        if base + off + 4 * n > len(b):
            raise ValueError(f"{path}: tensor {name} runs past the end of the file")
        a = np.frombuffer(b, dtype="<f4", count=n, offset=base + off).astype(np.float32)
        tensors.append((name, a.reshape(tuple(reversed(ne)))))
    return kvs, tensors


def sampler_from_gguf(path):
    """(class name, constructor arguments, state {key: float32 array}) of an
    asn sampler file, checked against the reference's layout."""
    kvs, tensors = read_gguf(path)
    arch = kvs.get("asn-sampler.type")
    if arch not in conv.ARGS:
        raise ValueError(f"{path}: sampler class {arch!r} has no counterpart in the reference "
                         f"(it has {', '.join(conv.ARCHS)})")
    cfg = {}
    for k, (kind, required) in conv.ARGS[arch].items():
        key = "asn-sampler." + k
        if key not in kvs:
            if required:
                raise ValueError(f"{path}: key {key} is missing")
            continue
        cfg[k] = bool(kvs[key]) if kind == "bool" else int(kvs[key])
    cfg = conv.check_config(arch, cfg)
    exp = conv.expected_tensors(arch, cfg)
    have = dict(tensors)
    for name in have:
        if name not in dict(exp):
            raise ValueError(f"{path}: unexpected tensor {name} for {arch} with {cfg}")
    state = {}
    for name, shape in exp:
        if name not in have:
            raise ValueError(f"{path}: tensor {name} is missing (a {arch} with {cfg} needs it)")
        a = have[name]
        if a.size != int(np.prod(shape, dtype=np.int64)) or (a.ndim > 1 and tuple(a.shape) != tuple(shape)):
            raise ValueError(f"{path}: tensor {name} has shape {tuple(a.shape)}, expected {tuple(shape)}")
        state[name] = a.reshape(shape)  # scalars: GGUF's one-element tensors, 0-d in PyTorch
    return arch, cfg, state


def write_config(path, arch, cfg):
    with open(path, "w") as f:
        f.write(f"# sampler_model_name: {arch}\n")
        for k, v in cfg.items():
            f.write(f"{k}: {'true' if v is True else 'false' if v is False else v}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sampler", help="the asn sampler file (GGUF)")
    ap.add_argument("checkpoint", help="the state_dict file to write (sampler_model.bin)")
    ap.add_argument("config", help="the sampler config YAML to write (its constructor arguments)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as ex:
        sys.exit(f"convert-sampler-to-torch: needs python3-torch ({ex})")
    try:
        arch, cfg, state = sampler_from_gguf(args.sampler)
        torch.save({k: torch.from_numpy(np.array(v)) for k, v in state.items()}, args.checkpoint)
        write_config(args.config, arch, cfg)
    except (OSError, ValueError) as ex:
        sys.exit(f"convert-sampler-to-torch: {ex}")
    print(arch)


if __name__ == "__main__":
    main()
