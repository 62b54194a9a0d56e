"""Compares the metrics.jsonl of bench/same_metrics.sh's two sets of runs:
every line, every key but the wall-clock ones (time/..., ..._s, ...per_s).
Exit 1 when a run is missing or differs."""
import json
import sys

RUNS = ["pretrain", "red_black", "red_black_separate", "red_black_partial", "sugarscape_negotiate", "qa_rag"]


def clockless(line):
    return {k: v for k, v in line.items() if not (k.startswith("time/") or k.endswith("_s") or "per_s" in k)}


def load(folder, run):
    try:
        with open(f"{folder}/{run}/metrics.jsonl") as f:
            return [clockless(json.loads(line)) for line in f]
    except FileNotFoundError:
        return None


def main(old, new):
    bad = 0
    for run in RUNS:
        a, b = load(old, run), load(new, run)
        if a is None or b is None or not a:
            print(f"{run}: missing (see its .log)")
            bad += 1
            continue
        same = a == b
        print(f"{run}: {len(a)} lines, {len(a[0])} keys, identical: {'yes' if same else 'NO'}")
        if not same:
            bad += 1
            for i, (x, y) in enumerate(zip(a, b)):
                diff = {k: (x.get(k), y.get(k)) for k in set(x) | set(y) if x.get(k) != y.get(k)}
                if diff:
                    print(f"  line {i + 1}: {sorted(diff.items())[:6]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
