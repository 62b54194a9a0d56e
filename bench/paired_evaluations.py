"""Paired differences between two evaluations of the same episodes (the same
seeds, so the same worlds or questions): for each metric named, the mean of
a - b over the episodes both hold and its 95% paired bootstrap interval, as
bench/qa_table.py computes them for the QA table.

    python3 bench/paired_evaluations.py RUN/eval_trained.episodes.jsonl \
        RUN/eval_warm_start.episodes.jsonl welfare_gain_learner trade_success_rate
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qa_table import paired, read_episodes  # noqa: E402


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    a, b = read_episodes(sys.argv[1]), read_episodes(sys.argv[2])
    for key in sys.argv[3:]:
        result = paired(a, b, key)
        if result is None:
            print(f"{key}: fewer than 2 episodes in both hold it")
            continue
        n, mean, lo, hi = result
        print(f"{key}: {mean:+.3f} [{lo:+.3f}, {hi:+.3f}] over {n} episodes")


if __name__ == "__main__":
    main()
