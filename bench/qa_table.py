#!/usr/bin/env python3
"""Writes the QA pipelines' table (table.md, table.json) from the evaluations
that `troupe train` left in each run folder: untrained, after the warm start
(SFT) and after RL, each on the same test questions in the same order.

Cells are means with their 95% bootstrap interval over questions. Below the
table, paired differences: the same questions answered by two stages of one
workflow (RL - SFT) or by two workflows at one stage (RAG - closed-book), with
the 95% interval of the mean difference from a paired bootstrap over
questions. A difference whose interval excludes 0 is marked.

The first row is a baseline without a model: each question answered with the
answer its relation has most often among the training questions ("English"
for a language, "no" for landlocked), scored as troupe scores answers. Every
workflow's stages are compared with it.

Two more evaluations of each trained run, where qa_table.sh made them:
- eval_reworded: the test questions worded by hand (factbook_qa:reworded),
  beside the same questions in the generator's wording (taken from
  eval_trained, paired by question id), and their paired difference;
- eval_oracle_reader (decompose workflows): the oracle decomposes, so the
  answerer reads the supporting passages, whatever its own decomposer does.
Then how many capital questions each evaluation answers exactly: the reading
target (an answerer given the passage that names a capital names it).

usage: qa_table.py OUT_DIR WORKFLOW...
  (QA_DATA: the dataset folder; default the data cache's qa/factbook)
"""
import collections
import json
import os
import random
import re
import sys

STAGES = [
    ("eval_untrained", "untrained"),
    ("eval_warm_start", "SFT"),
    ("eval_trained", "SFT + RL"),
    ("eval_oracle_reader", "SFT + RL, oracle decomposer"),
]
REWORDED = ("eval_reworded", "SFT + RL, worded by hand")
GENERATOR_WORDING = "SFT + RL, the same questions as generated"
TYPES = ["single_hop", "bridge", "comparison"]
RESAMPLES = 2000
LONGER = re.compile(r"_rl\d+$")  # a run continued to more RL iterations

# (workflow a, stage a, workflow b, stage b): a - b on the same questions.
# A "<workflow>_rlN" folder continues <workflow>'s run to N RL iterations
# (same warm start): it is compared with its own warm start and with
# <workflow>'s shorter RL.
def comparisons(workflows):
    out = []
    longer = {w: LONGER.sub("", w) for w in workflows if LONGER.search(w)}  # qa_rag_rl200 -> qa_rag
    base = [w for w in workflows if w not in longer]
    for w in workflows:
        out.append((w, "SFT + RL", w, "SFT"))
    for w, short in longer.items():
        if short in workflows:
            out.append((w, "SFT + RL", short, "SFT + RL"))
    stages = ("SFT", "SFT + RL")
    for w in base:
        if w != "qa_closed_book" and "qa_closed_book" in workflows:
            out += [(w, stage, "qa_closed_book", stage) for stage in stages]
    for w, short in longer.items():
        closed = [c for c, s in longer.items() if s == "qa_closed_book" and c.endswith(w[len(short):])]
        if short != "qa_closed_book" and closed:
            out.append((w, "SFT + RL", closed[0], "SFT + RL"))
    if "qa_decompose" in workflows and "qa_rag" in workflows:
        out += [("qa_decompose", stage, "qa_rag", stage) for stage in stages]
    for other in ("qa_decompose_separate", "qa_decompose_hybrid"):
        if "qa_decompose" in workflows and other in workflows:
            out += [(other, stage, "qa_decompose", stage) for stage in stages]
    return out


def cell(e, key):
    if key not in e:
        return "-"
    lo, hi = e.get("ci95_lo/" + key), e.get("ci95_hi/" + key)
    if lo is not None and hi is not None and hi - lo > 1e-9:
        return f"{e[key]:.3f} [{lo:.3f}, {hi:.3f}]"
    hw = e.get("ci95/" + key, 0.0)
    return f"{e[key]:.3f} ±{hw:.3f}" if hw > 1e-9 else f"{e[key]:.3f}"


def cache_dir():
    for var, suffix in (("TROUPE_CACHE", ""), ("XDG_CACHE_HOME", "/troupe")):
        if os.environ.get(var):
            return os.environ[var] + suffix
    return os.path.expanduser("~/.cache/troupe")


def normalise(text):
    """troupe's answer normalisation (games/qa/answer_scoring.cc)."""
    cleaned = "".join(c.lower() if ord(c) < 128 else c for c in text if not (ord(c) < 128 and not c.isalnum() and not c.isspace()))
    return " ".join(w for w in cleaned.split() if w not in ("a", "an", "the"))


def token_f1(pred, gold):
    p, g = normalise(pred).split(), normalise(gold).split()
    if not p or not g:
        return 1.0 if p == g else 0.0
    common = sum((collections.Counter(p) & collections.Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def read_questions(data, name):
    """The question records of one of the dataset's JSON-lines files, in order (episode i is question i)."""
    with open(os.path.join(data, name)) as f:
        return [json.loads(line) for line in f if line.strip()]


def prior_episodes(data):
    """The most common training answer of each relation, as one evaluation's episodes."""
    train, test = read_questions(data, "train.jsonl"), read_questions(data, "test.jsonl")
    counts = collections.defaultdict(collections.Counter)
    for r in train:
        counts[r.get("relation", "")][r["answers"][0]] += 1
    episodes = {}
    for i, q in enumerate(test):
        guess = counts[q.get("relation", "")].most_common(1)[0][0] if counts[q.get("relation", "")] else ""
        em = float(any(normalise(guess) == normalise(a) for a in q["answers"]))
        f1 = max(token_f1(guess, a) for a in q["answers"])
        e = {"episode": i, "em": em, "f1": f1}
        if q.get("type"):
            e["em/" + q["type"]], e["f1/" + q["type"]] = em, f1
        episodes[i] = e
    return episodes


def summary(episodes, seed=1):
    """Means and 95% percentile-bootstrap intervals of every metric, as an eval_*.json holds them."""
    out = {"questions": len(episodes)}
    keys = sorted({k for e in episodes.values() for k in e if k != "episode"})
    rng = random.Random(seed)
    for k in keys:
        v = [e[k] for e in episodes.values() if k in e]
        n = len(v)
        means = sorted(sum(v[rng.randrange(n)] for _ in range(n)) / n for _ in range(RESAMPLES))
        out[k] = sum(v) / n
        out["ci95_lo/" + k], out["ci95_hi/" + k] = means[round(0.025 * (RESAMPLES - 1))], means[round(0.975 * (RESAMPLES - 1))]
    return out


def read_episodes(path):
    """episode index -> its metrics, from an .episodes.jsonl file."""
    episodes = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                e = json.loads(line)
                episodes[int(e["episode"])] = e
    return episodes


def reworded_pair(trained, reworded, test, reworded_questions):
    """The hand-worded evaluation and the generator-worded one on the same questions, both indexed by the
    reworded file's order: (generator wording's episodes, hand wording's episodes)."""
    index = {q["id"]: i for i, q in enumerate(test)}
    same, hand = {}, {}
    for j, q in enumerate(reworded_questions):
        i = index.get(q["id"])
        if i is not None and i in trained and j in reworded:
            same[j], hand[j] = trained[i], reworded[j]
    return same, hand


def capitals(episodes, questions):
    """(capital questions answered exactly, capital questions asked) of one evaluation."""
    asked = [i for i, q in enumerate(questions) if q.get("relation") == "capital" and i in episodes]
    return sum(int(episodes[i].get("em", 0) > 0.5) for i in asked), len(asked)


def paired(a, b, key, seed=1):
    """Mean of a - b over the episodes both report `key` for, and its 95% paired bootstrap interval."""
    common = sorted(i for i in a if i in b and key in a[i] and key in b[i])
    d = [a[i][key] - b[i][key] for i in common]
    if len(d) < 2:
        return None
    rng = random.Random(seed)
    n = len(d)
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(RESAMPLES))
    return n, sum(d) / n, means[round(0.025 * (RESAMPLES - 1))], means[round(0.975 * (RESAMPLES - 1))]


def table_row(w, stage, e):
    cols = [w, stage, str(int(e.get("questions", e.get("episodes", 0)))), cell(e, "em"), cell(e, "f1")]
    cols += [cell(e, "f1/" + t) for t in TYPES]
    cols += [cell(e, "recall_at_k"), cell(e, "recall_any_at_k"), cell(e, "calls"), cell(e, "invalid_outputs")]
    return cols


def main():
    out, workflows = sys.argv[1], sys.argv[2:]
    rows, records, episodes = [], [], {}
    data = os.environ.get("QA_DATA", os.path.join(cache_dir(), "qa", "factbook"))
    if os.path.exists(os.path.join(data, "test.jsonl")):
        episodes[("prior", "(no model)")] = prior_episodes(data)
        e = summary(episodes[("prior", "(no model)")])
        records.append({"workflow": "prior", "stage": "(no model)", **e})
        rows.append(["most common training answer per relation (no model)", "-", str(e["questions"]), cell(e, "em"),
                     cell(e, "f1")] + [cell(e, "f1/" + t) for t in TYPES] + ["-", "-", "-", "-"])
    for w in workflows:
        for name, stage in STAGES:
            path = os.path.join(out, w, name + ".json")
            if not os.path.exists(path):
                continue
            with open(path) as f:
                e = json.load(f)
            records.append({"workflow": w, "stage": stage, **e})
            per = os.path.join(out, w, name + ".episodes.jsonl")
            if os.path.exists(per):
                episodes[(w, stage)] = read_episodes(per)
            rows.append(table_row(w, stage, e))
        # The hand-worded questions, beside the same questions as the generator words them.
        path = os.path.join(out, w, REWORDED[0] + ".episodes.jsonl")
        if os.path.exists(path) and (w, "SFT + RL") in episodes and \
                all(os.path.exists(os.path.join(data, f)) for f in ("test.jsonl", "reworded_test.jsonl")):
            same, hand = reworded_pair(episodes[(w, "SFT + RL")], read_episodes(path),
                                       read_questions(data, "test.jsonl"), read_questions(data, "reworded_test.jsonl"))
            if same:
                episodes[(w, GENERATOR_WORDING)], episodes[(w, REWORDED[1])] = same, hand
                for stage, e in ((GENERATOR_WORDING, summary(same)), (REWORDED[1], summary(hand))):
                    records.append({"workflow": w, "stage": stage, **e})
                    rows.append(table_row(w, stage, e))
    head = ["workflow", "stage", "questions", "EM", "F1"] + ["F1 " + t for t in TYPES]
    head += ["recall@k", "some passage@k", "calls", "invalid outputs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]

    diffs = []
    against_prior = [(w, stage, "prior", "(no model)") for w in workflows for stage in ("SFT", "SFT + RL")]
    wording = [(w, REWORDED[1], w, GENERATOR_WORDING) for w in workflows]
    oracle = [(w, STAGES[3][1], w, "SFT + RL") for w in workflows]
    for wa, sa, wb, sb in comparisons(workflows) + against_prior + wording + oracle:
        if (wa, sa) not in episodes or (wb, sb) not in episodes:
            continue
        for key in ("f1", "em", "f1/bridge"):
            p = paired(episodes[(wa, sa)], episodes[(wb, sb)], key)
            if p is None:
                continue
            n, mean, lo, hi = p
            verdict = "higher" if lo > 0 else "lower" if hi < 0 else "no clear difference"
            diffs.append({"a": f"{wa} {sa}", "b": f"{wb} {sb}", "metric": key, "questions": n,
                          "difference": mean, "ci95_lo": lo, "ci95_hi": hi, "verdict": verdict})
    if diffs:
        lines += ["", "Paired differences on the same questions (a - b, 95% paired bootstrap interval):", "",
                  "| a | b | metric | difference | 95% interval | a is |", "|---|---|---|---|---|---|"]
        for d in diffs:
            lines.append(f"| {d['a']} | {d['b']} | {d['metric'].upper().replace('/BRIDGE', ' bridge')} | {d['difference']:+.3f} | "
                         f"[{d['ci95_lo']:+.3f}, {d['ci95_hi']:+.3f}] | {d['verdict']} |")
    counts = []
    if os.path.exists(os.path.join(data, "test.jsonl")):
        test = read_questions(data, "test.jsonl")
        for (w, stage), per in episodes.items():
            # Untrained models answer nothing; a longer run's warm start is its shorter run's.
            if stage in ("untrained", GENERATOR_WORDING, REWORDED[1]) or (LONGER.search(w) and stage == "SFT"):
                continue
            right, asked = capitals(per, test)
            if asked:
                counts.append((w, stage, right, asked))
        if counts:
            lines += ["", "Capital questions answered exactly (the reading target: >= 0.8 given the passages):", "",
                      "| workflow | stage | right | of | share |", "|---|---|---|---|---|"]
            lines += [f"| {w} | {stage} | {right} | {asked} | {right / asked:.3f} |" for w, stage, right, asked in counts]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "table.json"), "w") as f:
        json.dump({"evaluations": records, "paired_differences": diffs,
                   "capital_questions": [{"workflow": w, "stage": s, "right": r, "asked": n} for w, s, r, n in counts]},
                  f, indent=1)
    sys.stdout.write(text)
    if not rows:
        sys.exit("qa_table: no evaluations found under " + out)


if __name__ == "__main__":
    main()
