#!/usr/bin/env python3
"""The README's main job written plainly in PyTorch: the reference that
bench/run.sh measures troupe's training loop against.

Same game (Red-Black, 5 agents a team, 10 rounds, multipliers 5:3,8:5,10:10,
willingness / speak / vote phases, 3 reasoning words), same opponent
(tit-for-tat), same model size (a pre-norm decoder, d 32, 2 layers, 4 heads,
feed-forward 2x, learned positions, a role embedding), same batch (32 episodes
in GRPO groups of 8), same credit (return-to-go x 0.01 per turn, a format
reward, inert votes baselined, groups by episode group, turn and phase), same
guided first tokens and correlated team sampling, same update (2048 of the
iteration's calls, minibatches of 512, one epoch, clipped ratio, entropy bonus
0.01, Adam lr 0.003, gradients clipped at 1.0).

"Plainly" means as one would write it first: the game in Python objects, every
pending decision of every episode batched per tick (one model call per
decoding step, as troupe), each call's prompt encoded from the start (no KV
cache), the update over padded batches. One intra-op thread, as troupe's
`trainer.threads`.

Run with Debian's python3-torch (same version as libtorch-dev):
/usr/bin/python3 bench/red_black_reference.py [ITERATIONS] [SEED]  (prints one JSON object)
"""
import json
import random
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

TEAM, ROUNDS, REASON_WORDS = 5, 10, 3
MULTIPLIERS = {4: 3, 7: 5, 9: 10}  # rounds 5, 8 and 10 (0-based)
EPISODES, GROUP, UPDATE_RECORDS, MINIBATCH = 32, 8, 2048, 512
D, LAYERS, HEADS, FF, MAX_LEN = 32, 2, 4, 2, 96
LR, CLIP, ENTROPY, GRAD_CLIP, TURN_WEIGHT, FORMAT_WEIGHT = 0.003, 0.2, 0.01, 1.0, 0.01, 0.5
PAD, BOS, EOS, ROLE = 0, 1, 2, 3


class Vocab:
    def __init__(self):
        self.ids = {}
        self.words = []
        for w in ["<pad>", "<bos>", "<eos>", "<role>"]:
            self.id(w)
        words = ["history", "now", "says", "us", "them", "round", "of", "left", "x", "will", "speak", "vote",
                 "red", "black", "-", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]
        words += ["#%d" % i for i in range(11)] + ["+%d" % p for p in (3, 6, 9, 15, 18, 30, 60)]
        words += ["-%d" % p for p in (3, 6, 9, 15, 18, 30, 60)]
        for w in words:
            self.id(w)
        self.size = 96
        while len(self.words) < self.size:  # free words for the reasoning
            self.id("w%d" % len(self.words))

    def id(self, w):
        if w not in self.ids:
            self.ids[w] = len(self.words)
            self.words.append(w)
        return self.ids[w]


VOCAB = Vocab()
RED, BLACK = VOCAB.ids["red"], VOCAB.ids["black"]
WILL_OPTIONS = [VOCAB.ids[w] for w in "0123"]


def payoff(own, other):  # "black" cooperates
    if own == "black" and other == "black":
        return 3
    if own == "red" and other == "red":
        return -3
    return 6 if own == "red" else -6


def number_words(n):
    return (["-"] if n < 0 else []) + list(str(abs(n)))


class Game:
    """One episode: both teams deliberate (willingness, one speaker at a time) and vote each round."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.round, self.score, self.history = 0, [0, 0], []
        self.done = False
        self.start_round()

    def start_round(self):
        self.spoken = [[False] * TEAM for _ in range(2)]
        self.messages = [[], []]
        self.votes = [[None] * TEAM for _ in range(2)]
        self.phase = "will"
        self.inert = [False] * TEAM
        self.skip_trivial()

    def skip_trivial(self):
        if self.phase == "will" and self.spoken[0].count(False) == 1:
            self.speaker = [s.index(False) for s in self.spoken]
            self.phase = "speak"

    def multiplier(self):
        return MULTIPLIERS.get(self.round, 1)

    def observation(self, team):
        o = ["history"]
        for choices, points in self.history:
            o += [choices[team], choices[1 - team], "%+d" % points[team] if points[team] else "0",
                  "%+d" % points[1 - team] if points[1 - team] else "0"]
        o.append("now")
        for choice, reasons in self.messages[team]:
            o += ["says", choice] + reasons
        o += ["us"] + number_words(self.score[team]) + ["them"] + number_words(self.score[1 - team])
        o += ["round", "#%d" % (self.round + 1), "of", "#%d" % ROUNDS, "left", "#%d" % (ROUNDS - self.round - 1),
              "x", "#%d" % self.multiplier(), self.phase]
        return [BOS, ROLE] + [VOCAB.id(w) for w in o]

    def pending(self):
        """Team A's seats to act now (team B is scripted)."""
        if self.phase == "will":
            return [i for i in range(TEAM) if not self.spoken[0][i]]
        if self.phase == "speak":
            return [self.speaker[0]]
        return list(range(TEAM))

    def tit_for_tat(self):
        return self.history[-1][0][0] if self.history else "black"

    def apply(self, answers):
        """answers: seat -> token list. Returns seat -> valid."""
        valid = {}
        b_choice = self.tit_for_tat()
        if self.phase == "will":
            will = [-1] * TEAM
            for seat, tokens in answers.items():
                w = VOCAB.words[tokens[0]] if tokens else ""
                valid[seat] = w in "0123" and len(w) == 1
                will[seat] = int(w) if valid[seat] else 0
            best = max(will[i] for i in range(TEAM) if not self.spoken[0][i])
            tied = [i for i in range(TEAM) if not self.spoken[0][i] and will[i] == best]
            b_left = [i for i in range(TEAM) if not self.spoken[1][i]]
            self.speaker = [tied[0] if len(tied) == 1 else tied[self.rng.randrange(len(tied))], b_left[0]]
            self.phase = "speak"
        elif self.phase == "speak":
            seat, tokens = next(iter(answers.items()))
            words = [VOCAB.words[t] for t in tokens if t != EOS]
            valid[seat] = bool(words) and words[0] in ("red", "black")
            self.messages[0].append((words[0] if valid[seat] else "black", words[1:1 + REASON_WORDS]))
            self.messages[1].append((b_choice, []))
            for t in range(2):
                self.spoken[t][self.speaker[t]] = True
            self.phase = "vote" if self.spoken[0].count(False) == 0 else "will"
            self.skip_trivial()
        else:
            for seat, tokens in answers.items():
                w = VOCAB.words[tokens[0]] if tokens else ""
                valid[seat] = w in ("red", "black")
                self.votes[0][seat] = w if valid[seat] else "black"
            red = self.votes[0].count("red")
            choice_a = "red" if red > TEAM - red else "black"
            for i in range(TEAM):  # a vote is inert when flipping it would not change the choice
                flipped_red = red - 1 if self.votes[0][i] == "red" else red + 1
                self.inert[i] = ("red" if flipped_red > TEAM - flipped_red else "black") == choice_a
            m = self.multiplier()
            points = [payoff(choice_a, b_choice) * m, payoff(b_choice, choice_a) * m]
            self.history.append(((choice_a, b_choice), points))
            self.score = [self.score[t] + points[t] for t in range(2)]
            self.round += 1
            if self.round >= ROUNDS:
                self.done = True
            else:
                self.start_round()
        return valid


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc1, self.fc2 = nn.Linear(D, FF * D), nn.Linear(FF * D, D)

    def forward(self, x, mask):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / (D // HEADS) ** 0.5
        att = att.masked_fill(~mask, -1e9).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos, self.role = nn.Embedding(VOCAB.size, D), nn.Embedding(MAX_LEN, D), nn.Embedding(1, D)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln, self.head, self.value = nn.LayerNorm(D), nn.Linear(D, VOCAB.size), nn.Linear(D, 1)

    def forward(self, tokens, valid):
        """tokens, valid [B,T] (left-padded): logits [B,T,V]."""
        B, T = tokens.shape
        positions = (valid.long().cumsum(1) - 1).clamp_min(0)
        x = self.tok(tokens) + self.pos(positions) + self.role.weight[0]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        mask = (causal.unsqueeze(0) & valid.unsqueeze(1)) | torch.eye(T, dtype=torch.bool).unsqueeze(0)
        for b in self.blocks:
            x = b(x, mask.unsqueeze(1))
        return self.head(self.ln(x))


def left_pad(seqs):
    T = max(len(s) for s in seqs)
    tokens = torch.full((len(seqs), T), PAD, dtype=torch.long)
    valid = torch.zeros((len(seqs), T), dtype=torch.bool)
    for i, s in enumerate(seqs):
        tokens[i, T - len(s):] = torch.tensor(s)
        valid[i, T - len(s):] = True
    return tokens, valid


def guide_mask(options_list):
    mask = torch.full((len(options_list), VOCAB.size), -1e9)
    for i, options in enumerate(options_list):
        if options:
            mask[i, options] = 0.0
        else:
            mask[i] = 0.0
    return mask


@torch.no_grad()
def generate(model, prompts, options, max_new):
    """Samples up to max_new tokens per prompt (the first among its options), re-encoding each step."""
    seqs = [list(p) for p in prompts]
    out = [[] for _ in prompts]
    logps = [[] for _ in prompts]
    live = list(range(len(prompts)))
    for step in range(max_new):
        tokens, valid = left_pad([seqs[i] for i in live])
        logits = model(tokens, valid)[:, -1]
        if step == 0:
            logits = logits + guide_mask([options[i] for i in live])
        logp = logits.log_softmax(-1)
        picks = torch.multinomial(logp.exp(), 1).squeeze(1)
        still = []
        for row, i in enumerate(live):
            t = int(picks[row])
            out[i].append(t)
            logps[i].append(float(logp[row, t]))
            seqs[i].append(t)
            if t != EOS and len(out[i]) < max_new:
                still.append(i)
        live = still
        if not live:
            break
    return out, logps


def rollout(model, iteration):
    games = [Game(hash((iteration, e // GROUP)) & 0xffffffff) for e in range(EPISODES)]
    records = []  # dicts: episode, turn, phase, prompt, response, logp, options, valid, inert, seat
    while True:
        batch = []  # (episode, seat, prompt, options, max_new)
        for e, g in enumerate(games):
            if g.done:
                continue
            for seat in g.pending():
                prompt = g.observation(0)
                if g.phase == "will":
                    batch.append((e, seat, prompt, WILL_OPTIONS, 1))
                elif g.phase == "speak":
                    batch.append((e, seat, prompt, [RED, BLACK], 1 + REASON_WORDS))
                else:
                    batch.append((e, seat, prompt, [RED, BLACK], 1))
        if not batch:
            break
        # Correlated team sampling: an episode's agents with the same prompt share one sample.
        unique = {}
        for e, seat, prompt, options, max_new in batch:
            unique.setdefault((e, tuple(prompt)), (prompt, options, max_new))
        keys = list(unique)
        for max_new in sorted({v[2] for v in unique.values()}):
            chosen = [k for k in keys if unique[k][2] == max_new]
            out, logps = generate(model, [unique[k][0] for k in chosen], [unique[k][1] for k in chosen], max_new)
            for k, o, lp in zip(chosen, out, logps):
                unique[k] = unique[k] + (o, lp)
        answers = {}
        for e, seat, prompt, options, max_new in batch:
            _, _, _, o, lp = unique[(e, tuple(prompt))]
            answers.setdefault(e, {})[seat] = o
            records.append({"episode": e, "turn": games[e].round, "phase": games[e].phase, "prompt": prompt,
                            "response": o, "logp": lp, "options": options, "seat": seat})
        first_of = {}
        for i in range(len(records) - len(batch), len(records)):
            first_of.setdefault(records[i]["episode"], i)
        for e, a in answers.items():
            phase = games[e].phase
            valid = games[e].apply(a)
            for i in range(first_of[e], first_of[e] + len(a)):
                r = records[i]
                r["valid"] = valid[r["seat"]]
                r["inert"] = phase == "vote" and games[e].inert[r["seat"]]
    return games, records


def credit(games, records):
    for r in records:
        g = games[r["episode"]]
        outcome = sum(points[0] for _, points in g.history[r["turn"]:]) * TURN_WEIGHT
        r["outcome"], r["format"] = outcome, (0.0 if r["valid"] else -1.0) * FORMAT_WEIGHT
    groups = {}
    for r in records:
        groups.setdefault((r["episode"] // GROUP, r["turn"], r["phase"]), []).append(r)
    for members in groups.values():
        pivotal = [r["outcome"] for r in members if not r["inert"]]
        if pivotal:
            for r in members:
                if r["inert"]:
                    r["outcome"] = sum(pivotal) / len(pivotal)
        rewards = torch.tensor([r["outcome"] + r["format"] for r in members], dtype=torch.float64)
        mean = rewards.mean()
        std = rewards.std() if len(members) > 1 else torch.tensor(0.0)
        for r, x in zip(members, rewards):
            r["advantage"] = float((x - mean) / (std + 1e-6)) if len(members) > 1 else 0.0


def update(model, optimizer, records):
    chosen = random.sample(records, min(UPDATE_RECORDS, len(records)))
    for start in range(0, len(chosen), MINIBATCH):
        mb = chosen[start:start + MINIBATCH]
        tokens, valid = left_pad([r["prompt"] + r["response"] for r in mb])
        B, T = tokens.shape
        n = torch.tensor([len(r["response"]) for r in mb])
        j = torch.arange(T - 1).unsqueeze(0)
        target = j >= (T - 1 - n).unsqueeze(1)  # positions that predict a response token
        first = j == (T - 1 - n).unsqueeze(1)
        old = torch.zeros(B, T - 1)
        for i, r in enumerate(mb):
            old[i, T - 1 - len(r["response"]):] = torch.tensor(r["logp"])
        advantage = torch.tensor([r["advantage"] for r in mb]).unsqueeze(1)
        guide = guide_mask([r["options"] for r in mb])
        logits = model(tokens, valid)[:, :-1] + first.unsqueeze(-1) * guide.unsqueeze(1)
        all_logp = logits.log_softmax(-1)
        logp = all_logp.gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)
        entropy = -(all_logp.exp() * all_logp).sum(-1)
        ratio = (logp - old).exp()
        policy = -torch.min(ratio * advantage, ratio.clamp(1 - CLIP, 1 + CLIP) * advantage)
        ntok = target.sum()
        loss = ((policy - ENTROPY * entropy) * target).sum() / ntok
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    random.seed(seed)
    model = Model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    times = {"rollout": 0.0, "credit": 0.0, "update": 0.0}
    scores = []
    start = time.time()
    for it in range(iterations):
        t0 = time.time()
        games, records = rollout(model, it)
        t1 = time.time()
        credit(games, records)
        t2 = time.time()
        update(model, optimizer, records)
        t3 = time.time()
        times["rollout"] += t1 - t0
        times["credit"] += t2 - t1
        times["update"] += t3 - t2
        scores.append(sum(g.score[0] for g in games) / len(games))
    seconds = time.time() - start
    print(json.dumps({"iterations": iterations, "episodes": iterations * EPISODES, "seconds": seconds,
                      "episodes_per_s": iterations * EPISODES / seconds,
                      "rollout_s_per_iteration": times["rollout"] / iterations,
                      "credit_s_per_iteration": times["credit"] / iterations,
                      "update_s_per_iteration": times["update"] / iterations,
                      "parameters": sum(p.numel() for p in model.parameters()),
                      "team_a_score_first": scores[0], "team_a_score_last": scores[-1]}))


if __name__ == "__main__":
    main()
