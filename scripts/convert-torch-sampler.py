#!/usr/bin/python3
"""Converts a sampler checkpoint of the reference project (a PyTorch
state_dict saved as sampler_model.bin, from torch.save) into an asn sampler
file (GGUF), which asn's `learned` processor and trainer read.

    convert-torch-sampler.py --config model_config.yaml [--arch CLASS] \\
        sampler_model.bin sampler.gguf

--config is the sampler config YAML the checkpoint was trained with (its
keys are the class's constructor arguments: hidden_dims,
use_dynamic_truncation, d_model, d_ff, n_blocks, n_heads, scale); the
checkpoint alone does not determine them (n_heads, for one). --arch is the
reference class name (LocalProbabilityTransform,
SimpleDistributionAwareTransform, SamplingNetwork); without it, it is told
from the tensor names. The "_orig_mod." prefix torch.compile adds to the
keys is removed. Every expected tensor must be present with its shape, and
nothing else; values are written as F32 (bf16 checkpoints convert exactly).

The GGUF layout: general.architecture = "asn-sampler", asn-sampler.type =
the class name, one key per hyper-parameter (asn-sampler.<name>, u32 or
bool), and one F32 tensor per state_dict entry under the same name,
dimensions reversed (GGUF's ne[0] is PyTorch's last dimension); scalars are
one-element tensors.

Needs python3-torch (for torch.load) and python3-yaml; the GGUF writer
below needs only the standard library and numpy."""
import argparse
import struct
import sys

import numpy as np

ARCHS = ("LocalProbabilityTransform", "SimpleDistributionAwareTransform", "SamplingNetwork")

# constructor arguments: name -> (kind, required)
ARGS = {
    "LocalProbabilityTransform": {"hidden_dims": ("int", True)},
    "SimpleDistributionAwareTransform": {"hidden_dims": ("int", True), "use_dynamic_truncation": ("bool", True)},
    "SamplingNetwork": {"d_model": ("int", True), "d_ff": ("int", True), "n_blocks": ("int", True),
                        "n_heads": ("int", True), "scale": ("bool", False)},
}


def check_config(arch, cfg):
    """The config as asn reads it: known keys only, sizes the networks accept."""
    if arch not in ARGS:
        raise ValueError(f"unknown sampler class {arch!r} (expected one of {', '.join(ARCHS)})")
    if not isinstance(cfg, dict):
        raise ValueError("a sampler config must be a mapping of the class's arguments")
    out = {}
    for k, v in cfg.items():
        if k not in ARGS[arch]:
            raise ValueError(f"unknown key {k!r} for {arch} (its arguments: {', '.join(ARGS[arch])})")
        kind = ARGS[arch][k][0]
        if kind == "bool":
            if not (isinstance(v, bool) or v in (0, 1)):
                raise ValueError(f"{k} must be true or false")
            out[k] = bool(v)
        else:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{k} must be a non-negative integer")
            out[k] = v
    for k, (kind, req) in ARGS[arch].items():
        if k not in out:
            if req:
                raise ValueError(f"{arch} needs {k!r}")
            out[k] = False
    if arch == "SamplingNetwork":
        if out["d_model"] < 4 or out["d_ff"] < 2 or out["n_heads"] < 1 or out["d_model"] % out["n_heads"]:
            raise ValueError("SamplingNetwork needs d_model >= 4, d_ff >= 2, d_model divisible by n_heads")
    elif out["hidden_dims"] < 2:
        raise ValueError(f"{arch} needs hidden_dims >= 2")
    return out


def _linear(name, i, o):
    return [(name + ".weight", (o, i)), (name + ".bias", (o,))]


def _mlp(name, i, h, o):
    inner = int(2 * h / 3)
    return (_linear(name + ".gate_proj", i, inner) + _linear(name + ".up_proj", i, inner)
            + _linear(name + ".down_proj", inner, o))


def expected_tensors(arch, cfg):
    """[(state_dict key, shape)] in state_dict order."""
    if arch == "LocalProbabilityTransform":
        return [("truncation_scale", ()), ("truncation_threshold", ())] + _mlp("mlp", 1, cfg["hidden_dims"], 1)
    if arch == "SimpleDistributionAwareTransform":
        h = cfg["hidden_dims"]
        t = [] if cfg["use_dynamic_truncation"] else [("truncation_params", (2,))]
        t += _linear("local_mlp.0", 1, h) + _mlp("global_mlp", h + 2, h, 1)
        if cfg["use_dynamic_truncation"]:
            t += _linear("truncation_head", 2, 2)
        return t
    d = cfg["d_model"]
    t = _mlp("encoder.mlp", 1, d, d)
    for b in range(cfg["n_blocks"]):
        p = f"blocks.{b}."
        t += _linear(p + "qkv_proj", d, 3 * d) + _linear(p + "attention.o_proj", d, d)
        t += _mlp(p + "ffn", d, cfg["d_ff"], d)
        t += [(p + "norm1.weight", (d,)), (p + "norm1.bias", (d,)), (p + "norm2.weight", (d,)),
              (p + "norm2.bias", (d,))]
    t += _mlp("transformation_head", 2 * d, d, 1) + _mlp("truncation_head", d, d // 2, 2)
    if cfg["scale"]:
        t += _mlp("scaling_head", d, d // 2, 1)
    return t


def guess_arch(keys):
    if any(k.startswith("encoder.") for k in keys):
        return "SamplingNetwork"
    if any(k.startswith("local_mlp.") for k in keys):
        return "SimpleDistributionAwareTransform"
    if "truncation_scale" in keys:
        return "LocalProbabilityTransform"
    raise ValueError("cannot tell the sampler class from the tensor names; pass --arch")


# ------------------------------------------------------------- GGUF writer

GGUF_U32, GGUF_F32, GGUF_BOOL, GGUF_STRING, GGUF_F64 = 4, 6, 7, 8, 12
ALIGN = 32


def _str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def _kv(key, vtype, value):
    out = _str(key) + struct.pack("<I", vtype)
    if vtype == GGUF_U32:
        return out + struct.pack("<I", value)
    if vtype == GGUF_F32:
        return out + struct.pack("<f", value)
    if vtype == GGUF_F64:
        return out + struct.pack("<d", value)
    if vtype == GGUF_BOOL:
        return out + struct.pack("<B", 1 if value else 0)
    if vtype == GGUF_STRING:
        return out + _str(value)
    raise ValueError(vtype)


def write_gguf(path, kvs, tensors):
    """GGUF v3: kvs [(key, type, value)], tensors [(name, float32 array)]."""
    infos, blobs, off = b"", [], 0
    for name, arr in tensors:
        a = np.ascontiguousarray(np.asarray(arr, dtype=np.float32))
        ne = list(reversed(a.shape)) or [1]
        infos += _str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", 0, off)  # F32
        data = a.tobytes()
        pad = (-len(data)) % ALIGN
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    head += b"".join(_kv(*kv) for kv in kvs) + infos
    head += b"\0" * ((-len(head)) % ALIGN)
    with open(path, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b)


def write_sampler_gguf(path, arch, cfg, state):
    """state: {key: array-like (numpy or torch)}; keys and shapes checked."""
    cfg = check_config(arch, cfg)
    exp = expected_tensors(arch, cfg)
    names = {n for n, _ in exp}
    for k in state:
        if k not in names:
            raise ValueError(f"unexpected tensor {k} for {arch} with {cfg}")
    tensors = []
    for name, shape in exp:
        if name not in state:
            raise ValueError(f"tensor {name} is missing (a {arch} with {cfg} needs it)")
        a = state[name]
        if hasattr(a, "detach"):  # a torch tensor, possibly bf16
            a = a.detach().float().cpu().numpy()
        a = np.asarray(a, dtype=np.float32)
        if tuple(a.shape) != tuple(shape):
            raise ValueError(f"tensor {name} has shape {tuple(a.shape)}, expected {tuple(shape)}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"tensor {name} holds non-finite values")
        tensors.append((name, a))
    kvs = [("general.architecture", GGUF_STRING, "asn-sampler"), ("asn-sampler.type", GGUF_STRING, arch)]
    for k, (kind, _) in ARGS[arch].items():
        kvs.append(("asn-sampler." + k, GGUF_BOOL if kind == "bool" else GGUF_U32, cfg[k]))
    write_gguf(path, kvs, tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="the sampler config YAML of the checkpoint")
    ap.add_argument("--arch", choices=ARCHS, help="reference class (default: told from the tensor names)")
    ap.add_argument("checkpoint", help="sampler_model.bin (a state_dict saved by torch.save)")
    ap.add_argument("output", help="the sampler GGUF to write")
    args = ap.parse_args()
    try:
        import torch
        import yaml
    except ImportError as ex:
        sys.exit(f"convert-torch-sampler: needs python3-torch and python3-yaml ({ex})")
    try:
        with open(args.config) as f:
            cfg = yaml.safe_load(f)
        state = torch.load(args.checkpoint, map_location="cpu")
        if not isinstance(state, dict):
            raise ValueError("the checkpoint is not a state_dict")
        state = {(k[len("_orig_mod."):] if k.startswith("_orig_mod.") else k): v for k, v in state.items()}
        arch = args.arch or guess_arch(state.keys())
        write_sampler_gguf(args.output, arch, cfg, state)
    except (OSError, ValueError, RuntimeError) as ex:
        sys.exit(f"convert-torch-sampler: {ex}")


if __name__ == "__main__":
    main()
