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
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V, H, I, L, NH, NKV, THETA, EPS = 32000, 768, 2048, 12, 12, 12, 10000.0, 1e-6
D = H // NH
PEAK = 989.5e12  # H100/H200 SXM dense bfloat16


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

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        h = self.n1(x)
        q = self.q(h).view(B, T, NH, D).transpose(1, 2)
        k = self.k(h).view(B, T, NKV, D).transpose(1, 2)
        v = self.v(h).view(B, T, NKV, D).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=NH != NKV)
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

    def forward(self, ids, fp32_head=False):
        B, T = ids.shape
        pos = torch.arange(T, dtype=torch.float32, device=ids.device)
        inv = 1.0 / (THETA ** (torch.arange(0, D, 2, dtype=torch.float32, device=ids.device) / D))
        emb = torch.cat([torch.outer(pos, inv)] * 2, -1)
        x = self.embed(ids)
        cos, sin = emb.cos()[None, None].to(x.dtype), emb.sin()[None, None].to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        h = self.norm(x)
        self.value(h)
        if fp32_head:  # as troupe computes it: the output projection outside autocast, in float32
            with torch.autocast(ids.device.type, enabled=False):
                return h.float() @ self.embed.weight.T
        return (h @ self.embed.weight.T).float()


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
    model = Model().to(a.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, V, (a.batch, a.length + 1), device=a.device)

    def step():
        opt.zero_grad()
        with torch.autocast(torch.device(a.device).type, dtype=torch.bfloat16):
            logits = model(tokens[:, :-1], a.fp32_head)
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
