#!/usr/bin/env python3
"""Writes the QA pipelines' table (table.md, table.json) from the evaluations
that `troupe train` left in each run folder: untrained, after the warm start,
after RL (sampled at the trainer's temperature) and, where bench/qa_table.sh
made it, the trained checkpoint decoded greedily.

usage: qa_table.py OUT_DIR WORKFLOW...
"""
import json
import os
import sys

STAGES = [
    ("eval_untrained.json", "untrained"),
    ("eval_warm_start.json", "SFT"),
    ("eval_trained.json", "SFT + RL"),
    ("eval_trained_greedy.json", "SFT + RL, greedy"),
]
TYPES = ["single_hop", "bridge", "comparison"]


def cell(e, key):
    if key not in e:
        return "-"
    hw = e.get("ci95/" + key, 0.0)
    return f"{e[key]:.3f} ±{hw:.3f}" if hw > 0 else f"{e[key]:.3f}"


def main():
    out, workflows = sys.argv[1], sys.argv[2:]
    rows, records = [], []
    for w in workflows:
        for name, stage in STAGES:
            path = os.path.join(out, w, name)
            if not os.path.exists(path):
                continue
            with open(path) as f:
                e = json.load(f)
            records.append({"workflow": w, "stage": stage, **e})
            cols = [w, stage, str(int(e.get("questions", e.get("episodes", 0)))), cell(e, "em"), cell(e, "f1")]
            cols += [cell(e, "f1/" + t) for t in TYPES]
            cols += [cell(e, "recall_at_k"), cell(e, "calls"), cell(e, "invalid_outputs")]
            rows.append(cols)
    head = ["workflow", "stage", "questions", "EM", "F1"] + ["F1 " + t for t in TYPES]
    head += ["recall@k", "calls", "invalid outputs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "table.json"), "w") as f:
        json.dump(records, f, indent=1)
    sys.stdout.write(text)
    if not rows:
        sys.exit("qa_table: no evaluations found under " + out)


if __name__ == "__main__":
    main()
