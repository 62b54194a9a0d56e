#!/usr/bin/env python3
"""Reference logits for troupe's GPT-2 style decoder (tests/workflows/gpt2_test.cc).

A plain PyTorch implementation of the Hugging Face GPT-2 forward pass (as
GPT2LMHeadModel computes it): learned token and position embeddings, pre-norm
blocks with LayerNorm, one fused c_attn projection (Conv1D: weights stored
[in, out]), causal softmax attention scaled by 1/sqrt(head_dim), an MLP
c_fc -> GELU -> c_proj, a final LayerNorm and a head tied to the token
embeddings (or lm_head.weight when untied). For a tiny random config of each
variant it writes, in tests/data/gpt2/NAME/: config.json (the field's fields),
model.safetensors (the weights under the names GPT2LMHeadModel.save_pretrained
uses) and expected.safetensors (input_ids and the float32 logits).

Run with Debian's python3-torch (1.13):  /usr/bin/python3 tests/data/gpt2/make_reference.py
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
    # name: config overrides
    "gpt2_tied": dict(activation_function="gelu_new", n_inner=None, tie_word_embeddings=True, layer_norm_epsilon=1e-5),
    "gpt2_untied": dict(activation_function="gelu", n_inner=40, tie_word_embeddings=False, layer_norm_epsilon=1e-6),
}


def gelu(x, kind):
    if kind == "gelu":
        return torch.nn.functional.gelu(x)
    # gelu_new: the tanh approximation GPT-2 was trained with
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def forward(w, c, ids):
    B, T = ids.shape
    H, nh = c["n_embd"], c["n_head"]
    D = H // nh
    eps = c["layer_norm_epsilon"]
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (H,), w[p + ".weight"], w[p + ".bias"], eps)
    x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][torch.arange(T)][None]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        h = ln(x, p + "ln_1")
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]  # Conv1D: x @ W[in, out] + b
        q, k, v = qkv.split(H, dim=-1)
        q, k, v = (t.view(B, T, nh, D).transpose(1, 2) for t in (q, k, v))
        s = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        s = s.masked_fill(~causal, float("-inf"))
        a = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, H)
        x = x + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = ln(x, p + "ln_2")
        h = gelu(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], c["activation_function"])
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = ln(x, "transformer.ln_f")
    head = w["transformer.wte.weight"] if c["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def make(name, spec, seed):
    torch.manual_seed(seed)
    c = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": 48, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64,
        "n_inner": spec["n_inner"], "activation_function": spec["activation_function"],
        "layer_norm_epsilon": spec["layer_norm_epsilon"], "tie_word_embeddings": spec["tie_word_embeddings"],
        "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2,
    }
    H, V, P = c["n_embd"], c["vocab_size"], c["n_positions"]
    I = c["n_inner"] or 4 * H
    r = lambda *shape: torch.randn(*shape) * 0.1
    norm = lambda n: 1.0 + 0.1 * torch.randn(n)
    w = {"transformer.wte.weight": r(V, H), "transformer.wpe.weight": r(P, H),
         "transformer.ln_f.weight": norm(H), "transformer.ln_f.bias": r(H)}
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        w[p + "ln_1.weight"], w[p + "ln_1.bias"] = norm(H), r(H)
        w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"] = r(H, 3 * H), r(3 * H)
        w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = r(H, H), r(H)
        w[p + "ln_2.weight"], w[p + "ln_2.bias"] = norm(H), r(H)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = r(H, I), r(I)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = r(I, H), r(H)
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = r(V, H)
    write_variant(os.path.join(HERE, name), c, w, forward)


if __name__ == "__main__":
    for seed, (name, spec) in enumerate(sorted(VARIANTS.items())):
        make(name, spec, seed + 11)
        print("wrote", name)
