#!/usr/bin/env python3
"""Reference logits for troupe's Llama-family decoder (tests/workflows/llama_test.cc).

A plain PyTorch implementation of the Hugging Face Llama / Qwen2 / Qwen3
forward pass, written from the description in the project's language-model
spec (pre-norm blocks, RMSNorm in float32, rotate_half RoPE, grouped-query
attention, SwiGLU, optional q/k/v bias and q/k norms, tied or separate head).
For a tiny random config of each variant it writes, in tests/data/llama/NAME/:
config.json (the field's fields), model.safetensors (the weights, the field's
names) and expected.safetensors (input_ids and the float32 logits).

Run with Debian's python3-torch (1.13):  /usr/bin/python3 tests/data/llama/make_reference.py
"""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from reference_files import write_variant  # noqa: E402

VARIANTS = {
    # name: (config overrides, tied, q/k/v bias, q/k norm)
    "llama_gqa": dict(num_key_value_heads=2, rope_theta=10000.0, tie_word_embeddings=False, bias=False, qk_norm=False),
    "llama_tied": dict(num_key_value_heads=4, rope_theta=10000.0, tie_word_embeddings=True, bias=False, qk_norm=False),
    "qwen2_bias": dict(num_key_value_heads=2, rope_theta=1e6, tie_word_embeddings=True, bias=True, qk_norm=False),
    "qwen3_qknorm": dict(num_key_value_heads=2, rope_theta=1e6, tie_word_embeddings=False, bias=False, qk_norm=True,
                         head_dim=16),
    # rope_scaling: Llama 3.1's (a low theta so that every branch of its
    # wavelength rule meets one of the 4 frequencies), linear under the key's
    # older name, and dynamic NTK.
    "rope_llama3": dict(num_key_value_heads=2, rope_theta=100.0, tie_word_embeddings=True, bias=False, qk_norm=False,
                        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
    "rope_linear": dict(num_key_value_heads=2, rope_theta=10000.0, tie_word_embeddings=True, bias=False,
                        qk_norm=False, rope_scaling={"type": "linear", "factor": 4.0}),
    "rope_dynamic": dict(num_key_value_heads=2, rope_theta=10000.0, tie_word_embeddings=True, bias=False,
                         qk_norm=False, rope_scaling={"rope_type": "dynamic", "factor": 2.0}),
}


def inverse_frequencies(c, D, seq_len):
    """RoPE's inverse frequencies as Hugging Face's rope_scaling types compute them."""
    base = c["rope_theta"]
    scaling = c.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "dynamic" and seq_len > c["max_position_embeddings"]:
        f, m = scaling["factor"], c["max_position_embeddings"]
        base = base * ((f * seq_len / m) - (f - 1)) ** (D / (D - 2))
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    if kind == "linear":
        inv = inv / scaling["factor"]
    if kind == "llama3":
        f, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        out = []
        for x in inv.tolist():
            wavelength = 2 * math.pi / x
            if wavelength < old / hi:
                out.append(x)
            elif wavelength > old / lo:
                out.append(x / f)
            else:
                smooth = (old / wavelength - lo) / (hi - lo)
                out.append((1 - smooth) * x / f + smooth * x)
        inv = torch.tensor(out, dtype=torch.float32)
    return inv


def rms_norm(x, w, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def forward(w, c, ids):
    B, T = ids.shape
    H, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim", H // nh)
    eps = c["rms_norm_eps"]
    x = w["model.embed_tokens.weight"][ids]
    pos = torch.arange(T, dtype=torch.float32)
    inv_freq = inverse_frequencies(c, D, T)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos()[None, None], emb.sin()[None, None]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)

        def proj(name, n):
            y = h @ w[p + f"self_attn.{name}_proj.weight"].T
            if p + f"self_attn.{name}_proj.bias" in w:
                y = y + w[p + f"self_attn.{name}_proj.bias"]
            return y.view(B, T, n, D)

        q, k, v = proj("q", nh), proj("k", nkv), proj("v", nkv)
        if p + "self_attn.q_norm.weight" in w:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = nh // nkv
        k = k[:, :, None].expand(B, nkv, rep, T, D).reshape(B, nh, T, D)  # each kv head serves rep query heads
        v = v[:, :, None].expand(B, nkv, rep, T, D).reshape(B, nh, T, D)
        s = (q @ k.transpose(-2, -1)) / (D ** 0.5)
        s = s.masked_fill(~causal, float("-inf"))
        a = torch.softmax(s.float(), dim=-1).to(q.dtype) @ v
        x = x + a.transpose(1, 2).reshape(B, T, nh * D) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        up = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if c["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def make(name, spec, seed):
    torch.manual_seed(seed)
    c = {
        "architectures": ["Qwen3ForCausalLM" if spec["qk_norm"] else "Qwen2ForCausalLM" if spec["bias"]
                          else "LlamaForCausalLM"],
        "model_type": "qwen3" if spec["qk_norm"] else "qwen2" if spec["bias"] else "llama",
        "vocab_size": 48, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": spec["num_key_value_heads"], "rms_norm_eps": 1e-6,
        "rope_theta": spec["rope_theta"], "max_position_embeddings": 64,
        "tie_word_embeddings": spec["tie_word_embeddings"], "torch_dtype": "float32",
        "bos_token_id": 1, "eos_token_id": 2,
    }
    if "head_dim" in spec:
        c["head_dim"] = spec["head_dim"]
    if "rope_scaling" in spec:
        c["rope_scaling"] = spec["rope_scaling"]
    H, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim", H // nh)
    I, V = c["intermediate_size"], c["vocab_size"]
    r = lambda *shape: torch.randn(*shape) * 0.1
    norm = lambda n: 1.0 + 0.1 * torch.randn(n)
    w = {"model.embed_tokens.weight": r(V, H), "model.norm.weight": norm(H)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "self_attn.q_proj.weight"] = r(nh * D, H)
        w[p + "self_attn.k_proj.weight"] = r(nkv * D, H)
        w[p + "self_attn.v_proj.weight"] = r(nkv * D, H)
        w[p + "self_attn.o_proj.weight"] = r(H, nh * D)
        if spec["bias"]:
            for n, out in (("q", nh * D), ("k", nkv * D), ("v", nkv * D)):
                w[p + f"self_attn.{n}_proj.bias"] = r(out)
        if spec["qk_norm"]:
            w[p + "self_attn.q_norm.weight"] = norm(D)
            w[p + "self_attn.k_norm.weight"] = norm(D)
        w[p + "mlp.gate_proj.weight"] = r(I, H)
        w[p + "mlp.up_proj.weight"] = r(I, H)
        w[p + "mlp.down_proj.weight"] = r(H, I)
        w[p + "input_layernorm.weight"] = norm(H)
        w[p + "post_attention_layernorm.weight"] = norm(H)
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = r(V, H)
    write_variant(os.path.join(HERE, name), c, w, forward)


if __name__ == "__main__":
    for seed, (name, spec) in enumerate(sorted(VARIANTS.items())):
        make(name, spec, seed + 1)
        print("wrote", name)
