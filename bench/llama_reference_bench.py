#!/usr/bin/env python3
"""The same decoder and the same measurements as bench/llama_bench.cc, in PyTorch.

Run with Debian's python3-torch (same version as libtorch-dev):
/usr/bin/python3 bench/llama_reference_bench.py THREADS   (prints one JSON object)
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_reference_model import Model, Sizes  # noqa: E402

# llama_bench.cc's BenchConfig: 4 layers of 256, 8 heads sharing 4 key/value heads.
SIZES = Sizes(vocab=8000, hidden=256, intermediate=688, layers=4, heads=8, kv_heads=4)
V, L = SIZES.vocab, SIZES.layers


def train_tokens_per_s(model, batch=8, length=128, steps=5):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, V, (batch, length + 1))

    def step():
        opt.zero_grad()
        logits = model(tokens[:, :-1], 0)
        F.cross_entropy(logits.reshape(-1, V), tokens[:, 1:].reshape(-1)).backward()
        opt.step()

    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return batch * length * steps / (time.perf_counter() - t0)


@torch.no_grad()
def generate_tokens_per_s(model, batch, prompt=16, new=64):
    start = torch.randint(0, V, (batch, prompt))

    def run():
        caches = [[] for _ in range(L)]
        logits = model(start, 0, caches)
        for t in range(new):
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            logits = model(nxt, prompt + t, caches)

    run()
    t0 = time.perf_counter()
    run()
    return batch * new / (time.perf_counter() - t0)


if __name__ == "__main__":
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    torch.manual_seed(0)
    m = Model(SIZES)
    train = train_tokens_per_s(m)
    m.eval()
    figures = {"train_tokens_per_s": round(train, 1),
               "generate_b1_tokens_per_s": round(generate_tokens_per_s(m, 1), 1),
               "generate_b64_tokens_per_s": round(generate_tokens_per_s(m, 64), 1)}
    # Mixed precision as PyTorch users write it: the forward pass under autocast (bfloat16).
    m.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        figures["train_tokens_per_s_bf16"] = round(train_tokens_per_s(m), 1)
        m.eval()
        figures["generate_b64_tokens_per_s_bf16"] = round(generate_tokens_per_s(m, 64), 1)
    print(json.dumps(figures))
