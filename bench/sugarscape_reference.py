"""Sugarscape g1mt in plain Python: the reference troupe's engine is measured
against in the same run (bench/sugarscape_speed.sh), written from the spec's
g1mt rules (../shared/specs/sugarscape.md) the way an agent-based modeller
writes them: one object per trader, a dict of cell -> traders, Python's random.
Also a statistical cross-check: over many seeds, its population, trades, price
and Gini should match troupe's within their intervals (same rules, different
random streams).

usage: python3 bench/sugarscape_reference.py MAP SEEDS STEPS [--no-trade]
prints one JSON object per seed: seed, steps, agent_steps, seconds,
population_end, trades, mean_price (geometric), gini_end
"""
import json
import math
import random
import sys
import time


def read_map(path):
    rows = [[int(v) for v in line.split()] for line in open(path) if line.strip()]
    h, w = len(rows), len(rows[0])
    sugar = {(x, y): rows[y][x] for y in range(h) for x in range(w)}
    spice = {(x, y): rows[y][w - 1 - x] for y in range(h) for x in range(w)}
    return w, h, sugar, spice


class Trader:
    __slots__ = ("pos", "sugar", "spice", "ms", "mp", "vision")

    def welfare(self, sugar, spice):
        mt = self.ms + self.mp
        return sugar ** (self.ms / mt) * spice ** (self.mp / mt)

    def mrs(self, sugar, spice):
        return (spice / self.mp) / (sugar / self.ms)


def diamond(radius):
    return [(dx, dy) for dx in range(-radius, radius + 1) for dy in range(-radius, radius + 1)
            if abs(dx) + abs(dy) <= radius and (dx, dy) != (0, 0)]


def run(path, seed, steps, trade):
    rng = random.Random(seed)
    w, h, cap_sugar, cap_spice = read_map(path)
    sugar, spice = dict(cap_sugar), dict(cap_spice)
    cells = list(cap_sugar)
    where = {}  # cell -> list of traders
    traders = []
    for _ in range(200):
        t = Trader()
        t.pos = rng.choice(cells)
        t.sugar, t.spice = rng.randint(25, 50), rng.randint(25, 50)
        t.ms, t.mp, t.vision = rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 5)
        traders.append(t)
        where.setdefault(t.pos, []).append(t)
    offsets = {r: diamond(r) for r in range(1, 6)}

    def around(pos, radius):
        x, y = pos
        for dx, dy in offsets[radius]:
            c = (x + dx, y + dy)
            if 0 <= c[0] < w and 0 <= c[1] < h:
                yield c, math.sqrt(dx * dx + dy * dy)

    def trade_pair(a, b, prices):
        while True:
            mrs_a, mrs_b = a.mrs(a.sugar, a.spice), b.mrs(b.sugar, b.spice)
            if math.isclose(mrs_a, mrs_b):
                return
            price = math.sqrt(mrs_a * mrs_b)
            buyer, seller = (a, b) if mrs_a > mrs_b else (b, a)
            ds, dp = (1, int(price)) if price >= 1 else (int(1 / price), 1)
            bs, bp, ss, sp = buyer.sugar + ds, buyer.spice - dp, seller.sugar - ds, seller.spice + dp
            if min(bs, bp, ss, sp) <= 0:
                return
            if not (buyer.welfare(buyer.sugar, buyer.spice) < buyer.welfare(bs, bp)
                    and seller.welfare(seller.sugar, seller.spice) < seller.welfare(ss, sp)
                    and buyer.mrs(bs, bp) > seller.mrs(ss, sp)):
                return
            buyer.sugar, buyer.spice, seller.sugar, seller.spice = bs, bp, ss, sp
            prices.append(price)

    agent_steps, prices = 0, []
    t0 = time.perf_counter()
    for _ in range(steps):
        agent_steps += len(traders)
        for c in cells:
            sugar[c] = min(sugar[c] + 1, cap_sugar[c])
            spice[c] = min(spice[c] + 1, cap_spice[c])
        order = traders[:]
        rng.shuffle(order)
        alive = []
        for t in order:
            options = [(c, d) for c, d in around(t.pos, t.vision) if not where.get(c)]
            if options:
                score = [(t.welfare(t.sugar + sugar[c], t.spice + spice[c]), c, d) for c, d in options]
                best = max(s for s, _, _ in score)
                near = [(c, d) for s, c, d in score if math.isclose(s, best)]
                nearest = min(d for _, d in near)
                final = [c for c, d in near if math.isclose(d, nearest, rel_tol=1e-2)]
                to = rng.choice(final)
                where[t.pos].remove(t)
                t.pos = to
                where.setdefault(to, []).append(t)
            t.sugar += sugar[t.pos] - t.ms
            t.spice += spice[t.pos] - t.mp
            sugar[t.pos] = spice[t.pos] = 0
            if t.sugar <= 0 or t.spice <= 0:
                where[t.pos].remove(t)
            else:
                alive.append(t)
        traders = alive
        if trade:
            order = traders[:]
            rng.shuffle(order)
            for t in order:
                for c, _ in around(t.pos, t.vision):
                    for other in list(where.get(c, ())):
                        trade_pair(t, other, prices)
    seconds = time.perf_counter() - t0
    wealth = sorted(t.sugar + t.spice for t in traders)
    n = len(wealth)
    gini = (2 * sum((i + 1) * x for i, x in enumerate(wealth)) / (n * sum(wealth)) - (n + 1) / n) if n else 0.0
    return {"seed": seed, "steps": steps, "agent_steps": agent_steps, "seconds": seconds, "population_end": n,
            "trades": len(prices),
            "mean_price": math.exp(sum(math.log(p) for p in prices) / len(prices)) if prices else None,
            "gini_end": gini}


if __name__ == "__main__":
    path, seeds, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    trade = "--no-trade" not in sys.argv
    for seed in range(1, seeds + 1):
        print(json.dumps(run(path, seed, steps, trade)), flush=True)
