#!/usr/bin/python3
"""An independent PyTorch (float64) implementation of the reference
project's learned samplers and loss (LocalProbabilityTransform,
SimpleDistributionAwareTransform, SamplingNetwork, TruncatedLogitsLoss),
written from the reference's models.py /
loss.py; it writes the fixtures asn's tests/unit/test_sampler_net.c
compares against.

Per model NAME, tests/fixtures/sampler/NAME.gguf is the sampler (written
with scripts/convert-torch-sampler.py's writer from this module's
state_dict, so the key names are PyTorch's own), and NAME_vV.gguf for V in
50 and 5000 holds tensors logits, target, out (the sampler's output),
dlogits (d loss / d logits) and grad.KEY for every parameter, and keys
loss.total, loss.kl, loss.penalty, loss.gamma.

Inputs follow asn's rule for -inf logits: the network sees only the finite
tokens (the V = 50 rows have some -inf), and its output is -inf elsewhere.
Parameters and inputs are rounded to float32 values first, so that both
sides start from the same numbers. Needs Debian's python3-torch and
python3-numpy; run from anywhere:
    /usr/bin/python3 tests/reference/sampler_ref.py"""
import importlib.util
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "fixtures", "sampler")

_spec = importlib.util.spec_from_file_location("convert_torch_sampler",
                                               os.path.join(ROOT, "scripts", "convert-torch-sampler.py"))
conv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conv)

torch.set_default_dtype(torch.float64)

# ------------------------------------------------------------------ layers


class SwiGLUMLP(nn.Module):
    """down(silu(gate(x)) * up(x)); inner width int(2 * hidden / 3)."""

    def __init__(self, n_in, hidden, n_out):
        super().__init__()
        width = int(2 * hidden / 3)
        self.gate_proj = nn.Linear(n_in, width)
        self.up_proj = nn.Linear(n_in, width)
        self.down_proj = nn.Linear(width, n_out)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def soft_truncate(l, scale, threshold):
    return l + F.logsigmoid(l * scale + threshold)


# The models take the finite logits of one row (a 1-D tensor).

class LocalProbabilityTransform(nn.Module):
    def __init__(self, hidden_dims):
        super().__init__()
        self.mlp = SwiGLUMLP(1, hidden_dims, 1)
        self.truncation_scale = nn.Parameter(torch.tensor(1.0))
        self.truncation_threshold = nn.Parameter(torch.tensor(10.0))

    def forward(self, logits):
        lp = F.log_softmax(logits, dim=-1)
        l = lp + self.mlp(lp[:, None])[:, 0]
        return soft_truncate(l, self.truncation_scale, self.truncation_threshold)


class SimpleDistributionAwareTransform(nn.Module):
    def __init__(self, hidden_dims, use_dynamic_truncation):
        super().__init__()
        self.local_mlp = nn.Sequential(nn.Linear(1, hidden_dims), nn.SiLU())
        self.global_mlp = SwiGLUMLP(hidden_dims + 2, hidden_dims, 1)
        self.dynamic = use_dynamic_truncation
        if use_dynamic_truncation:
            self.truncation_head = nn.Linear(2, 2)
        else:
            self.truncation_params = nn.Parameter(torch.tensor([0.5413, 10.0]))

    def forward(self, logits):
        lp = F.log_softmax(logits, dim=-1)
        with torch.no_grad():  # the statistics are constants for the gradient
            stats = torch.stack([lp.max(), -(lp.exp() * lp).sum()])
        feats = torch.cat([self.local_mlp(lp[:, None]), stats.expand(lp.shape[0], 2)], dim=-1)
        l = lp + self.global_mlp(feats)[:, 0]
        raw = self.truncation_head(stats) if self.dynamic else self.truncation_params
        return soft_truncate(l, F.softplus(raw[0]), F.softplus(raw[1]))


class ElementwiseEncoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mlp = SwiGLUMLP(1, d, d)

    def forward(self, lp):
        return self.mlp(lp[:, None])


class LinearAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.o_proj = nn.Linear(d, d)

    def forward(self, q, k, v):
        n, d = q.shape
        split = lambda t: t.reshape(n, self.heads, d // self.heads).transpose(0, 1)  # heads x n x dh
        qf, kf, vh = F.elu(split(q)) + 1, F.elu(split(k)) + 1, split(v)
        num = qf @ (kf.transpose(1, 2) @ vh)
        den = qf @ kf.sum(dim=1)[:, :, None]
        att = (num / (den + 1e-6)).transpose(0, 1).reshape(n, d)
        return self.o_proj(att)


class Block(nn.Module):
    def __init__(self, d, d_ff, heads):
        super().__init__()
        self.qkv_proj = nn.Linear(d, 3 * d)
        self.attention = LinearAttention(d, heads)
        self.ffn = SwiGLUMLP(d, d_ff, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x):
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)
        x = self.norm1(x + self.attention(q, k, v))
        return self.norm2(x + self.ffn(x))


class SamplingNetwork(nn.Module):
    def __init__(self, d_model, d_ff, n_blocks, n_heads, scale=False):
        super().__init__()
        self.encoder = ElementwiseEncoder(d_model)
        self.blocks = nn.Sequential(*[Block(d_model, d_ff, n_heads) for _ in range(n_blocks)])
        self.transformation_head = SwiGLUMLP(2 * d_model, d_model, 1)
        self.truncation_head = SwiGLUMLP(d_model, d_model // 2, 2)
        self.scale = scale
        if scale:
            self.scaling_head = SwiGLUMLP(d_model, d_model // 2, 1)

    def forward(self, logits):
        lp = F.log_softmax(logits, dim=-1)
        h = self.blocks(self.encoder(lp))
        c = h.mean(dim=0)
        lmod = self.transformation_head(torch.cat([h, c.expand_as(h)], dim=-1))[:, 0]
        # without the scaling head the reference multiplies by softplus(1.0)
        mult = F.softplus(self.scaling_head(c)[0] if self.scale else torch.tensor(1.0))
        l = mult * (lp + lmod)
        t = self.truncation_head(c)
        return soft_truncate(l, F.softplus(t[0]), F.softplus(t[1]))


def run_row(model, logits):
    """The model on the finite logits; -inf elsewhere."""
    fin = torch.isfinite(logits)
    out = torch.full_like(logits, float("-inf"))
    out[fin] = model(logits[fin])
    return out


def truncated_logits_loss(pred, target, gamma):
    """TruncatedLogitsLoss for one row (reference loss.py, 'mean' over 1)."""
    removed = torch.isneginf(target)
    log_p = F.log_softmax(pred, dim=-1)
    with torch.no_grad():
        q = F.softmax(target, dim=-1)
        log_q = F.log_softmax(target, dim=-1)
    kl_el = q * (log_q - log_p)
    kl_el = torch.where(removed, torch.zeros_like(kl_el), kl_el)
    kl = kl_el.sum()
    pen = (log_p.exp() * removed.double()).sum()
    return kl + gamma * pen, kl, pen


def policy_loss(pred, ref, token, adv, clip, kl_beta):
    """The policy-gradient loss of train-sampler --rl for one drawn token:
    the reference project's GRPO term -A log p (clip 0) or PPO's clipped
    ratio with a dual clip at 3|A| (clip > 0), plus kl_beta times the k3
    estimate of the KL to the reference, exp(r) - 1 - r, r = log p - log
    p_ref. Written from those formulas."""
    lp = F.log_softmax(pred, dim=-1)[token]
    with torch.no_grad():
        lp_ref = F.log_softmax(ref, dim=-1)[token]
    r = lp - lp_ref
    rho = torch.exp(r)
    if clip == 0:
        pg = -adv * lp
    else:
        obj = torch.minimum(adv * rho, adv * torch.clamp(rho, 1 - clip, 1 + clip))
        if adv < 0:
            obj = torch.maximum(obj, torch.tensor(3.0 * adv))
        pg = -obj
    kl = torch.exp(r) - 1 - r
    return pg + kl_beta * kl, pg, kl


# ----------------------------------------------------------------- fixtures


MODELS = [
    ("local", "LocalProbabilityTransform", {"hidden_dims": 32}),
    ("dist_static", "SimpleDistributionAwareTransform", {"hidden_dims": 32, "use_dynamic_truncation": False}),
    ("dist_dynamic", "SimpleDistributionAwareTransform", {"hidden_dims": 32, "use_dynamic_truncation": True}),
    # the reference's model_config.yaml and model_config_scale.yaml
    ("net", "SamplingNetwork", {"d_model": 32, "d_ff": 64, "n_blocks": 4, "n_heads": 4, "scale": False}),
    ("net_scale", "SamplingNetwork", {"d_model": 32, "d_ff": 64, "n_blocks": 4, "n_heads": 4, "scale": True}),
]
CLASSES = {"LocalProbabilityTransform": LocalProbabilityTransform,
           "SimpleDistributionAwareTransform": SimpleDistributionAwareTransform,
           "SamplingNetwork": SamplingNetwork}
GAMMA = 2.0


def f32(t):
    return torch.from_numpy(np.asarray(t, dtype=np.float32).astype(np.float64))


def make_model(cls, cfg, seed):
    torch.manual_seed(seed)
    model = CLASSES[cls](**cfg)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            # away from the constant initial values, so that every
            # parameter's role shows in the outputs and gradients
            if "norm" in name or ("truncation" in name and "head" not in name):
                p.add_(0.3 * torch.randn(p.shape, generator=gen))
            # a threshold of 10 leaves the soft truncation nearly idle on
            # these rows; around 5.5 it acts on a good part of each row
            if name == "truncation_threshold":
                p.sub_(4.5)
            if name == "truncation_params":
                p[1] -= 4.5
            p.copy_(f32(p.numpy()))
    return model


def make_row(V, seed):
    """Language-model-like logits (a few large, a long tail), some -inf
    when V is small; the target: temperature 0.7 then min-p 0.05."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(V) * 2.0 - 1.1 * np.log(rng.permutation(V) + 1.0)
    if V <= 100:
        x[rng.choice(V, 6, replace=False)] = -np.inf
    logits = f32(x)
    t = logits / 0.7
    p = torch.softmax(t, dim=-1)
    target = torch.where(p >= 0.05 * p.max(), t, torch.tensor(float("-inf")))
    return logits, f32(target.numpy())


def check_converter():
    """The converter's command line on a checkpoint as the reference saves
    it (bf16, torch.compile's "_orig_mod." prefix) gives the same file as
    its writer on the plain state_dict."""
    import subprocess
    import sys
    import tempfile
    cfg = {"d_model": 8, "d_ff": 12, "n_blocks": 2, "n_heads": 2, "scale": True}
    model = SamplingNetwork(**cfg).to(torch.bfloat16)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt, yml = os.path.join(tmp, "sampler_model.bin"), os.path.join(tmp, "model_config.yaml")
        torch.save({"_orig_mod." + k: v for k, v in model.state_dict().items()}, ckpt)
        with open(yml, "w") as f:
            f.write("d_model: 8\nd_ff: 12\nn_blocks: 2\nn_heads: 2\nscale: True\n")
        out, ref = os.path.join(tmp, "cli.gguf"), os.path.join(tmp, "ref.gguf")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "convert-torch-sampler.py"), "--config", yml,
                        ckpt, out], check=True)
        conv.write_sampler_gguf(ref, "SamplingNetwork", cfg, model.state_dict())
        with open(out, "rb") as a, open(ref, "rb") as b:
            assert a.read() == b.read(), "converter command line and writer disagree"
    print("converter: bf16 checkpoint with _orig_mod. keys converts")


def policy_fixture():
    """tests/fixtures/sampler/policy_v50.gguf: rows pred and ref (V = 50,
    some -inf) and, per case i, the drawn token, advantage, clip, kl_beta,
    the loss terms and d total / d pred (dpred.i)."""
    V = 50
    pred, _ = make_row(V, 4242)
    gen = torch.Generator().manual_seed(4243)
    ref = f32((pred + 0.8 * torch.randn(V, generator=gen, dtype=torch.float64)).numpy())
    fin = torch.isfinite(pred)
    rho = torch.exp(F.log_softmax(pred, -1) - F.log_softmax(ref, -1))

    def token_near(x):  # the finite token whose ratio is closest to x
        d = torch.where(fin, (torch.log(rho) - math.log(x)).abs(), torch.tensor(float("inf")))
        return int(torch.argmin(d))
    cases = [  # (token, advantage, clip, kl_beta)
        (token_near(1.0), 1.3, 0.0, 0.0), (token_near(0.4), -0.7, 0.0, 0.1), (token_near(2.5), 0.9, 0.0, 0.5),
        (token_near(1.05), 1.1, 0.2, 0.0), (token_near(1.6), 1.1, 0.2, 0.1),   # inside; clipped above
        (token_near(0.95), -0.8, 0.2, 0.1), (token_near(0.5), -0.8, 0.2, 0.0),  # inside; clipped below
        (token_near(4.0), -1.2, 0.2, 0.1), (token_near(0.5), 0.6, 0.2, 0.1),   # dual clip; A > 0 below
    ]
    tensors = [("pred", pred.numpy()), ("ref", ref.numpy())]
    kvs = [("cases", conv.GGUF_U32, len(cases))]
    for i, (tok, adv, clip, beta) in enumerate(cases):
        x = pred.clone().requires_grad_(True)
        total, pg, kl = policy_loss(x, ref, tok, adv, clip, beta)
        total.backward()
        tensors.append((f"dpred.{i}", torch.where(fin, x.grad, torch.zeros(V, dtype=torch.float64)).numpy()))
        kvs += [(f"case.{i}.token", conv.GGUF_U32, tok), (f"case.{i}.advantage", conv.GGUF_F64, adv),
                (f"case.{i}.clip", conv.GGUF_F64, clip), (f"case.{i}.kl_beta", conv.GGUF_F64, beta),
                (f"case.{i}.total", conv.GGUF_F64, total.item()), (f"case.{i}.pg", conv.GGUF_F64, pg.item()),
                (f"case.{i}.kl", conv.GGUF_F64, kl.item())]
        print(f"policy case {i}: token {tok} rho {rho[tok].item():.3f} A {adv} clip {clip} kl_beta {beta}: "
              f"total {total.item():.6g}")
    conv.write_gguf(os.path.join(OUT, "policy_v50.gguf"), kvs, tensors)


def main():
    check_converter()
    policy_fixture()
    os.makedirs(OUT, exist_ok=True)
    for mi, (name, cls, cfg) in enumerate(MODELS):
        model = make_model(cls, cfg, 1000 + mi)
        state = model.state_dict()
        expected = [n for n, _ in conv.expected_tensors(cls, conv.check_config(cls, cfg))]
        assert list(state.keys()) == expected, (name, list(state.keys()), expected)
        conv.write_sampler_gguf(os.path.join(OUT, name + ".gguf"), cls, cfg, state)
        for V in (50, 5000):
            logits, target = make_row(V, 7 * V + mi)
            model.zero_grad()
            x = logits.clone().requires_grad_(True)
            out = run_row(model, x)
            total, kl, pen = truncated_logits_loss(out, target, GAMMA)
            total.backward()
            assert torch.isfinite(total) and not torch.isnan(out).any()
            tensors = [("logits", logits.numpy()), ("target", target.numpy()), ("out", out.detach().numpy()),
                       ("dlogits", x.grad.numpy())]
            tensors += [("grad." + n, p.grad.numpy()) for n, p in model.named_parameters()]
            kvs = [("loss.total", conv.GGUF_F64, total.item()), ("loss.kl", conv.GGUF_F64, kl.item()),
                   ("loss.penalty", conv.GGUF_F64, pen.item()), ("loss.gamma", conv.GGUF_F32, GAMMA)]
            conv.write_gguf(os.path.join(OUT, f"{name}_v{V}.gguf"), kvs, tensors)
            print(f"{name} V={V}: loss {total.item():.6g} (kl {kl.item():.6g}, penalty {pen.item():.6g})")


if __name__ == "__main__":
    main()
