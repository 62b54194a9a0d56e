"""The Llama-family decoder of troupe's benchmarks, written plainly in PyTorch:
RMSNorm, rotary positions, grouped key/value heads, SwiGLU, tied embeddings
and a value head (as troupe's policy models have one). bench/llama_reference_bench.py
(CPU, Debian's python3-torch) and bench/llama_gpu_reference.py (GPU) build it.
"""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Sizes:
    vocab: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    theta: float = 10000.0
    eps: float = 1e-6

    @property
    def head_dim(self):
        return self.hidden // self.heads


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def rotary(s, start, T, device):
    """cos and sin of rotary positions start..start+T-1, shaped [1, 1, T, head_dim]."""
    D = s.head_dim
    pos = torch.arange(start, start + T, dtype=torch.float32, device=device)
    inv = 1.0 / (s.theta ** (torch.arange(0, D, 2, dtype=torch.float32, device=device) / D))
    freqs = torch.outer(pos, inv)
    emb = torch.cat([freqs, freqs], -1)
    return emb.cos()[None, None], emb.sin()[None, None]


class Layer(nn.Module):
    def __init__(self, s, fused_attention):
        super().__init__()
        H, D, NH, NKV, I = s.hidden, s.head_dim, s.heads, s.kv_heads, s.intermediate
        self.s, self.fused = s, fused_attention
        self.q, self.k = nn.Linear(H, NH * D, bias=False), nn.Linear(H, NKV * D, bias=False)
        self.v, self.o = nn.Linear(H, NKV * D, bias=False), nn.Linear(NH * D, H, bias=False)
        self.gate, self.up, self.down = nn.Linear(H, I, bias=False), nn.Linear(H, I, bias=False), nn.Linear(I, H, bias=False)
        self.n1, self.n2 = RMSNorm(H, s.eps), RMSNorm(H, s.eps)
        # With keep_weights (and unfused attention), forward keeps the heads' attention weights
        # [B, heads, T, T_keys] in self.weights, for scripts that look at where heads attend.
        self.keep_weights, self.weights, self.merged = False, None, None

    def forward(self, x, cos, sin, mask, cache):
        s, (B, T, _) = self.s, x.shape
        NH, NKV, D = s.heads, s.kv_heads, s.head_dim
        h = self.n1(x)
        q = self.q(h).view(B, T, NH, D).transpose(1, 2)
        k = self.k(h).view(B, T, NKV, D).transpose(1, 2)
        v = self.v(h).view(B, T, NKV, D).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if cache is not None:
            if cache:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            cache[:] = [k, v]
        if self.fused:  # what a PyTorch 2.5+ user writes: FlashAttention's causal kernel
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=NH != NKV)
        else:
            k, v = k.repeat_interleave(NH // NKV, 1), v.repeat_interleave(NH // NKV, 1)
            sc = (q @ k.transpose(-2, -1)) / D ** 0.5
            if mask is not None:
                sc = sc.masked_fill(~mask, float("-inf"))
            w = torch.softmax(sc.float(), -1)
            if self.keep_weights:
                self.weights = w.detach()
            a = w.to(q.dtype) @ v
        merged = a.transpose(1, 2).reshape(B, T, NH * D)
        if self.keep_weights:
            self.merged = merged.detach()  # every head's output before o: head h's is [..., h*D:(h+1)*D]
        x = x + self.o(merged)
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    """forward(ids, start, caches=None, fp32_head=False) -> logits. With
    `fused_attention` (training only, no cache) attention is
    F.scaled_dot_product_attention's causal kernel. With `fp32_head` the output
    projection runs outside autocast in float32, as troupe computes it."""

    def __init__(self, s, fused_attention=False):
        super().__init__()
        self.s = s
        self.embed = nn.Embedding(s.vocab, s.hidden)
        self.layers = nn.ModuleList(Layer(s, fused_attention) for _ in range(s.layers))
        self.norm = RMSNorm(s.hidden, s.eps)
        self.value = nn.Linear(s.hidden, 1)

    def forward(self, ids, start, caches=None, fp32_head=False):
        s, (B, T) = self.s, ids.shape
        cos, sin = rotary(s, start, T, ids.device)
        mask = torch.ones(T, start + T, dtype=torch.bool, device=ids.device).tril(start) if T > 1 else None
        x = self.embed(ids)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, mask, caches[i] if caches is not None else None)
        self.residual = x.detach()  # the residual stream the final norm reads
        h = self.norm(x)
        self.value(h)
        if fp32_head:
            with torch.autocast(ids.device.type, enabled=False):
                return h.float() @ self.embed.weight.T
        return h @ self.embed.weight.T
