#!/usr/bin/env python3
"""The same decoder and the same measurements as bench/llama_bench.cc, in PyTorch.

Run with Debian's python3-torch (same version as libtorch-dev):
/usr/bin/python3 bench/llama_reference_bench.py THREADS   (prints one JSON object)
"""
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V, H, I, L, NH, NKV, THETA, EPS = 8000, 256, 688, 4, 8, 4, 10000.0, 1e-6
D = H // NH


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype)


def rotate_half(x):
    return torch.cat([-x[..., D // 2:], x[..., :D // 2]], dim=-1)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k = nn.Linear(H, NH * D, bias=False), nn.Linear(H, NKV * D, bias=False)
        self.v, self.o = nn.Linear(H, NKV * D, bias=False), nn.Linear(NH * D, H, bias=False)
        self.gate, self.up, self.down = nn.Linear(H, I, bias=False), nn.Linear(H, I, bias=False), nn.Linear(I, H, bias=False)
        self.n1, self.n2 = RMSNorm(H), RMSNorm(H)

    def forward(self, x, cos, sin, mask, cache):
        B, T, _ = x.shape
        h = self.n1(x)
        q = self.q(h).view(B, T, NH, D).transpose(1, 2)
        k = self.k(h).view(B, T, NKV, D).transpose(1, 2)
        v = self.v(h).view(B, T, NKV, D).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if cache is not None:
            if cache:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            cache[:] = [k, v]
        k, v = k.repeat_interleave(NH // NKV, 1), v.repeat_interleave(NH // NKV, 1)
        s = (q @ k.transpose(-2, -1)) / D ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        a = torch.softmax(s.float(), -1).to(q.dtype) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, NH * D))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, H)
        self.layers = nn.ModuleList(Layer() for _ in range(L))
        self.norm = RMSNorm(H)
        self.value = nn.Linear(H, 1)

    def forward(self, ids, start, caches=None):
        B, T = ids.shape
        pos = torch.arange(start, start + T, dtype=torch.float32)
        freqs = torch.outer(pos, 1.0 / (THETA ** (torch.arange(0, D, 2, dtype=torch.float32) / D)))
        emb = torch.cat([freqs, freqs], -1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = torch.ones(T, start + T, dtype=torch.bool).tril(start) if T > 1 else None
        x = self.embed(ids)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, mask, caches[i] if caches is not None else None)
        h = self.norm(x)
        self.value(h)
        return h @ self.embed.weight.T


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
    m = Model()
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
