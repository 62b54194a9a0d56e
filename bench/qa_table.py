#!/usr/bin/env python3
"""Writes the QA pipelines' table (table.md, table.json) from the evaluations
that `troupe train` left in each run folder: untrained, after the warm start
(SFT) and after RL, each on the same test questions in the same order.

Cells are means with their 95% bootstrap interval over questions. Below the
table, paired differences: the same questions answered by two stages of one
workflow (RL - SFT) or by two workflows at one stage (RAG - closed-book), with
the 95% interval of the mean difference from a paired bootstrap over
questions. A difference whose interval excludes 0 is marked.

usage: qa_table.py OUT_DIR WORKFLOW...
"""
import json
import os
import random
import re
import sys

STAGES = [
    ("eval_untrained", "untrained"),
    ("eval_warm_start", "SFT"),
    ("eval_trained", "SFT + RL"),
]
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


def read_episodes(path):
    """episode index -> its metrics, from an .episodes.jsonl file."""
    episodes = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                e = json.loads(line)
                episodes[int(e["episode"])] = e
    return episodes


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


def main():
    out, workflows = sys.argv[1], sys.argv[2:]
    rows, records, episodes = [], [], {}
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
            cols = [w, stage, str(int(e.get("questions", e.get("episodes", 0)))), cell(e, "em"), cell(e, "f1")]
            cols += [cell(e, "f1/" + t) for t in TYPES]
            cols += [cell(e, "recall_at_k"), cell(e, "recall_any_at_k"), cell(e, "calls"), cell(e, "invalid_outputs")]
            rows.append(cols)
    head = ["workflow", "stage", "questions", "EM", "F1"] + ["F1 " + t for t in TYPES]
    head += ["recall@k", "some passage@k", "calls", "invalid outputs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]

    diffs = []
    for wa, sa, wb, sb in comparisons(workflows):
        if (wa, sa) not in episodes or (wb, sb) not in episodes:
            continue
        for key in ("f1", "em"):
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
            lines.append(f"| {d['a']} | {d['b']} | {d['metric'].upper()} | {d['difference']:+.3f} | "
                         f"[{d['ci95_lo']:+.3f}, {d['ci95_hi']:+.3f}] | {d['verdict']} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "table.json"), "w") as f:
        json.dump({"evaluations": records, "paired_differences": diffs}, f, indent=1)
    sys.stdout.write(text)
    if not rows:
        sys.exit("qa_table: no evaluations found under " + out)


if __name__ == "__main__":
    main()
