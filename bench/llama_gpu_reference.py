#!/usr/bin/env python3
"""The GPU half of bench/llama_bench.cc in PyTorch: bf16 training of the same
~110M-parameter Llama (12 layers of 768, 12 heads, vocabulary 32000, tied
embeddings, a value head), written as a PyTorch user writes it: the forward
pass under torch.autocast(bfloat16), F.scaled_dot_product_attention with
is_causal, and torch.optim.AdamW's defaults.

With --fp32-head the output projection runs outside autocast in float32, as
troupe's models compute it (their logits feed the policy's log-probabilities).

Usage: python3 bench/llama_gpu_reference.py [--device cuda:0] [--batch 32] [--length 1024] [--steps 10] [--fp32-head]
Prints one JSON object with the same keys as `llama_bench 1 --device cuda:0`.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_reference_model import Model, Sizes  # noqa: E402

# llama_bench.cc's GpuConfig.
SIZES = Sizes(vocab=32000, hidden=768, intermediate=2048, layers=12, heads=12, kv_heads=12)
V, H, I, L, NH, NKV = SIZES.vocab, SIZES.hidden, SIZES.intermediate, SIZES.layers, SIZES.heads, SIZES.kv_heads
PEAK = 989.5e12  # H100/H200 SXM dense bfloat16


def flops_per_token(length):
    per_layer = H * H * (2 + 2 * NKV / NH) + 3 * H * I
    return 6 * (L * per_layer + H * V) + 12.0 * L * H * length


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--fp32-head", action="store_true", help="the output projection in float32, as troupe computes it")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = Model(SIZES, fused_attention=True).to(a.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, V, (a.batch, a.length + 1), device=a.device)

    def step():
        opt.zero_grad()
        with torch.autocast(torch.device(a.device).type, dtype=torch.bfloat16):
            logits = model(tokens[:, :-1], 0, fp32_head=a.fp32_head).float()
        loss = F.cross_entropy(logits.reshape(-1, V), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        loss = step()
    loss.item()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    loss.item()
    tps = a.batch * a.length * a.steps / (time.perf_counter() - t0)
    f = flops_per_token(a.length)
    print(json.dumps({"device": a.device, "parameters": sum(p.numel() for p in model.parameters()), "batch": a.batch,
                      "length": a.length, "steps": a.steps, "train_tokens_per_s_bf16": round(tps, 1),
                      "fp32_head": a.fp32_head, "flops_per_token": f, "tflops": round(tps * f / 1e12, 1), "mfu": round(tps * f / PEAK, 4),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
