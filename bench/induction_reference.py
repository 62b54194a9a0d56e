#!/usr/bin/env python3
"""The induction diagnostic's model and recipe in PyTorch, as a reference for troupe's trainer.

bench/induction_diagnostic.textproto pretrains a 2-layer Llama of width 64 on repeated random
sequences. This script builds the same decoder (RMSNorm, rotary positions, SwiGLU, tied
embeddings), draws the same kind of data (random sequences of 8-64 tokens, each followed by
itself, packed so none crosses a training sequence) and trains with the same AdamW recipe
(weight decay on matrices only, warmup then cosine decay to 0.1 of the peak, clipping at 1).
It prints, every `--every` steps, the training loss and the accuracy of predicting the repeats
(tokens 2.. of every copy after the first) in that step's batch: what troupe's `lm probe` calls
induction.

One difference from troupe: the rest of a training sequence after the last repeat is padding
(<|endoftext|>), where troupe fills it with corpus text, so the two training losses differ by
what the text costs; the copies' accuracy is comparable.

The flags vary the recipe as docs/language_models.md reports: --lr, --batch, --seq_len,
--weight_decay, --heads (head width), --untied --embed_std 1 (an output layer of its own),
--tied_qk (W_q = W_k at initialisation), --copies/--shortest/--longest (the data), and
--attention_steps N (guided attention, as troupe's pretrain.guided_attention: head 0 of the first
layer led to the previous position, --guided_heads heads of the last to the induction position).

Run with Debian's python3-torch (same version as libtorch-dev):
  /usr/bin/python3 bench/induction_reference.py [--steps 2930] [--lr 0.003] [--batch 8] ...
Prints one JSON object per report line.
"""
import argparse
import json
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Layer(nn.Module):
    def __init__(self, a):
        super().__init__()
        H, I, NH = a.hidden, a.intermediate, a.heads
        self.NH, self.D = NH, H // NH
        self.q, self.k = nn.Linear(H, H, bias=False), nn.Linear(H, H, bias=False)
        self.v, self.o = nn.Linear(H, H, bias=False), nn.Linear(H, H, bias=False)
        self.gate, self.up, self.down = nn.Linear(H, I, bias=False), nn.Linear(H, I, bias=False), nn.Linear(I, H, bias=False)
        self.n1, self.n2 = RMSNorm(H, 1e-6), RMSNorm(H, 1e-6)
        if a.tied_qk:  # W_q = W_k at initialisation: heads start by matching like with like
            with torch.no_grad():
                self.k.weight.copy_(self.q.weight)

    def forward(self, x, cos, sin, mask):
        B, T, H = x.shape
        h = self.n1(x)
        q = self.q(h).view(B, T, self.NH, self.D).transpose(1, 2)
        k = self.k(h).view(B, T, self.NH, self.D).transpose(1, 2)
        v = self.v(h).view(B, T, self.NH, self.D).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        s = (q @ k.transpose(-2, -1)) / math.sqrt(self.D)
        att = torch.softmax(s.masked_fill(~mask, float("-inf")), -1)
        self.att = att
        x = x + self.o((att @ v).transpose(1, 2).reshape(B, T, H))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Decoder(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed = nn.Embedding(a.vocab, a.hidden)
        nn.init.normal_(self.embed.weight, 0, a.embed_std)
        self.head = None if a.tied else nn.Linear(a.hidden, a.vocab, bias=False)
        self.layers = nn.ModuleList([Layer(a) for _ in range(a.layers)])
        self.norm = RMSNorm(a.hidden, 1e-6)
        D = a.hidden // a.heads
        inv = 10000.0 ** (-torch.arange(0, D, 2).float() / D)
        ang = torch.arange(a.seq_len).float()[:, None] * inv
        ang = torch.cat([ang, ang], -1)
        self.register_buffer("cos", ang.cos())
        self.register_buffer("sin", ang.sin())

    def forward(self, ids):
        T = ids.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.cos[:T], self.sin[:T], mask)
        h = self.norm(x)
        return h @ self.embed.weight.t() if self.head is None else self.head(h)


def repeated_stream(rng, vocab, eot, seq_len, tokens, shortest, longest, copies):
    """Random sequences, each followed by copies-1 repeats, packed so none crosses a (seq_len) boundary, eot after each."""
    out = []
    longest = min(longest, (seq_len - 1) // copies)
    while len(out) < tokens:
        n = shortest + rng.randrange(max(1, longest - shortest + 1))
        doc = [rng.randrange(vocab - 1) for _ in range(n)]
        doc = doc * copies + [eot]
        if len(out) % seq_len + len(doc) > seq_len:
            out += [eot] * (seq_len - len(out) % seq_len)
        out += doc
    return out


def second_copy_mask(chunk, eot, copies):
    """Targets that are tokens 2.. of a second copy (index into targets = chunk[1:])."""
    mask = [False] * (len(chunk) - 1)
    start = 0
    for i, t in enumerate(chunk + [eot]):
        if i == len(chunk) or t == eot:
            n = (i - start) // copies
            if n >= 2 and i < len(chunk):
                for c in range(1, copies):
                    for j in range(start + c * n + 1, start + (c + 1) * n):
                        mask[j - 1] = True
            start = i + 1
    return mask


def attention_targets(ids, eot):
    """Per position: the previous position, and the position after the latest earlier occurrence
    of the same token (what an induction head attends to); -1 where there is none."""
    B, T = ids.shape
    prev = torch.arange(-1, T - 1).repeat(B, 1)
    ind = torch.full((B, T), -1, dtype=torch.long)
    for b in range(B):
        last = {}
        row = ids[b].tolist()
        for t, tok in enumerate(row):
            if tok != eot and tok in last:
                ind[b, t] = last[tok] + 1
            last[tok] = t
    return prev, ind


def attention_loss(att, target):
    """Mean -log attention weight on the target position, over positions that have one."""
    valid = target >= 0
    if not valid.any():
        return att.sum() * 0
    picked = att.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return -(picked[valid] + 1e-9).log().mean()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=2930)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq_len", type=int, default=128)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--intermediate", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--weight_decay", type=float, default=0.1)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--embed_std", type=float, default=0.02)
    p.add_argument("--untied", dest="tied", action="store_false")
    p.add_argument("--shortest", type=int, default=8)
    p.add_argument("--longest", type=int, default=64)
    p.add_argument("--copies", type=int, default=2)
    p.add_argument("--tied_qk", action="store_true")
    p.add_argument("--attention_steps", type=int, default=0)
    p.add_argument("--attention_weight", type=float, default=1.0)
    p.add_argument("--guided_heads", type=int, default=1)  # heads of the last layer guided to the induction position
    p.add_argument("--every", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    eot = a.vocab - 1
    L = a.seq_len
    stream = repeated_stream(rng, a.vocab, eot, L, (a.steps * a.batch + 1) * L + 1, a.shortest, a.longest, a.copies)
    model = Decoder(a)
    decayed = [p for p in model.parameters() if p.dim() >= 2]
    plain = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decayed, "weight_decay": a.weight_decay},
                             {"params": plain, "weight_decay": 0.0}], lr=a.lr)

    def lr_at(step):
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        progress = (step - a.warmup) / max(1, a.steps - a.warmup)
        return 0.1 * a.lr + 0.9 * a.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    t0, loss_sum, n, att_sum = time.time(), 0.0, 0, (0.0, 0.0)
    for step in range(a.steps):
        chunks = [stream[(step * a.batch + i) * L:(step * a.batch + i) * L + L + 1] for i in range(a.batch)]
        ids = torch.tensor(chunks)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, a.vocab), ids[:, 1:].reshape(-1))
        total = loss
        if step < a.attention_steps:
            prev, ind = attention_targets(ids[:, :-1], eot)
            lp = attention_loss(model.layers[0].att[:, 0], prev)
            li = sum(attention_loss(model.layers[-1].att[:, h], ind) for h in range(a.guided_heads)) / a.guided_heads
            att_sum = (att_sum[0] + lp.item(), att_sum[1] + li.item())
            total = loss + a.attention_weight * (lp + li)
        opt.zero_grad()
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_sum, n = loss_sum + loss.item(), n + 1
        if (step + 1) % a.every == 0:
            mask = torch.tensor([second_copy_mask(c, eot, a.copies) for c in chunks])
            right = (logits.argmax(-1) == ids[:, 1:])[mask].float()
            print(json.dumps({"step": step + 1, "loss": round(loss_sum / n, 4),
                              "second_copy_accuracy": round(right.mean().item(), 4),
                              "attention_loss": [round(x / n, 3) for x in att_sum],
                              "seconds": round(time.time() - t0, 1)}), flush=True)
            loss_sum, n, att_sum = 0.0, 0, (0.0, 0.0)


if __name__ == "__main__":
    main()
