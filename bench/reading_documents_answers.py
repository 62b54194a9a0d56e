#!/usr/bin/env python3
"""Does a model answer the reading documents it was pretrained on (or ones like them)?

The needle probe asks about passages in the Factbook's form; pretraining's reading
documents (`troupe data reading`) ask the same kind of question in varied wording.
This script draws fresh documents with a seed pretraining does not use, cuts each
passage document before each answer (the earlier questions and answers of the
document kept, as in training) and scores the model's greedy continuation: right
when its first line is the answer. A model that fails the needle but answers these
has learnt the documents' form, not the probe's; one that fails both has not
learnt to look a fact up. Usage:

  python3 bench/reading_documents_answers.py MODEL_DIR [--count 40] [--seed 987] [--seq-len 512]
      [--countries 3] [--short]

(--countries and --short draw the documents as pretrain.reading_countries and
pretrain.reading_short_passages do.)

Each question is one `troupe lm generate` call (about 2 s here).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def questions(text):
    """(prompt, answer, question) for every answer of every passage document."""
    blocks = text.split("\n\n")
    for i, block in enumerate(blocks):
        if not block.startswith("Question:") or i == 0:
            continue
        passages, lines = blocks[i - 1], block.split("\n")
        for k in range(0, len(lines) - 1, 2):
            question, answer = lines[k], lines[k + 1]
            if not answer.startswith("Answer: "):
                continue
            asked_before = "".join(line + "\n" for line in lines[:k])
            yield passages + "\n\n" + asked_before + question + "\nAnswer:", answer[len("Answer: "):], question


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model folder (config.json, model.safetensors, tokenizer.json)")
    parser.add_argument("--count", type=int, default=40, help="documents to draw (about 1 in 5 is a name list)")
    parser.add_argument("--seed", type=int, default=987, help="their seed (pretraining derives its own)")
    parser.add_argument("--seq-len", type=int, default=512, help="the training sequence they must fit")
    parser.add_argument("--countries", type=int, default=3, help="countries per passage document")
    parser.add_argument("--short", action="store_true", help="each passage its answer's clause only")
    parser.add_argument("--troupe", default=os.path.join(ROOT, "build", "workflows", "troupe"))
    parser.add_argument("--quiet", action="store_true", help="the totals only")
    a = parser.parse_args()
    if not os.access(a.troupe, os.X_OK):
        sys.exit(f"no {a.troupe}: build first (bash scripts/build.sh)")
    docs = subprocess.run([a.troupe, "data", "reading", "--count", str(a.count), "--seed", str(a.seed),
                           "--seq-len", str(a.seq_len), "--countries", str(a.countries)] + (["--short"] if a.short else [])
                          + ["--quiet"], check=True, capture_output=True, text=True).stdout
    totals = {"capital": [0, 0], "other": [0, 0]}
    for prompt, answer, question in questions(docs):
        out = subprocess.run([a.troupe, "lm", "generate", "--model", a.model, "--threads", "2", "--greedy",
                              "--max-new", "8", "--json", "--quiet", "--prompt", prompt],
                             check=True, capture_output=True, text=True).stdout
        got = json.loads(out)["text"].split("\n")[0].strip()
        right = got == answer or got.startswith(answer + " ")
        kind = "capital" if "capital" in question.lower() or "seat of government" in question.lower() else "other"
        totals[kind][0] += right
        totals[kind][1] += 1
        if not a.quiet:
            print(("right " if right else "wrong ") + question + " | " + answer + " | got: " + got, flush=True)
    for kind, (right, n) in totals.items():
        print(f"{kind} questions: {right}/{n}" + (f" ({right / n:.3f})" if n else ""))


if __name__ == "__main__":
    main()
