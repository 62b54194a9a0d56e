#!/usr/bin/env python3
"""Training curves of a run folder's metrics.jsonl through gnuplot.

Usage: python3 bench/plot_metrics.py RUN OUT.png METRIC [METRIC ...] [--window N] [--title T]
       python3 bench/plot_metrics.py RUN=LABEL,RUN=LABEL,... OUT.png METRIC ...

Each metric (a key of metrics.jsonl, e.g. game/team_a_score) is drawn per
iteration as a moving mean over N iterations (default 10), with the band of
that window's mean +- 1.96 standard errors. Several runs (comma-separated,
each with a label) draw one line per run and metric, e.g. the seeds of an
experiment's cells. OUT.dat and OUT.gp are written beside the PNG, so the
figure can be restyled and redrawn.
"""
import json
import math
import os
import subprocess
import sys


def main():
    args = sys.argv[1:]
    window, title = 10, ""
    if "--window" in args:
        i = args.index("--window")
        window = int(args[i + 1])
        del args[i:i + 2]
    if "--title" in args:
        i = args.index("--title")
        title = args[i + 1]
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    run, png, metrics = args[0], args[1], args[2:]
    runs = [(r.split("=")[0], r.split("=")[1] if "=" in r else "") for r in run.split(",")]
    series = []  # (label, lines of metrics.jsonl, metric)
    for folder, label in runs:
        lines = [json.loads(l) for l in open(os.path.join(folder, "metrics.jsonl")) if l.strip()]
        for m in metrics:
            series.append(((label + " " if label else "") + m if len(metrics) > 1 or not label else label, lines, m))
    base = os.path.splitext(png)[0]
    with open(base + ".dat", "w") as dat:
        for name, lines, m in series:
            points = [(l["iteration"], l[m]) for l in lines if m in l]
            if not points:
                sys.exit(f"no line of metrics.jsonl has {m} ({name})")
            dat.write(f"# {name}: iteration, moving mean over {window}, low, high\n")
            for k in range(len(points)):
                vals = [v for _, v in points[max(0, k - window + 1):k + 1]]
                mean = sum(vals) / len(vals)
                sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
                half = 1.96 * sd / math.sqrt(len(vals))
                dat.write(f"{points[k][0]} {mean} {mean - half} {mean + half}\n")
            dat.write("\n\n")
    quoted = lambda s: '"' + s.replace("_", "\\\\_") + '"'
    with open(base + ".gp", "w") as gp:
        gp.write(f'set terminal pngcairo size 900,480 enhanced font "DejaVu Sans,11"\nset output "{os.path.basename(png)}"\n')
        gp.write(f"set title {quoted(title or run)}\nset xlabel \"iteration\"\nset key outside right\nset grid\n")
        plots = []
        for i, (name, _, _) in enumerate(series):
            plots.append(f'"{os.path.basename(base)}.dat" index {i} using 1:3:4 with filledcurves lc {i + 1} fs transparent solid 0.2 notitle')
            plots.append(f'"{os.path.basename(base)}.dat" index {i} using 1:2 with lines lw 2 lc {i + 1} title {quoted(name)}')
        gp.write("plot " + ", \\\n     ".join(plots) + "\n")
    subprocess.run(["gnuplot", os.path.basename(base) + ".gp"], cwd=os.path.dirname(os.path.abspath(png)), check=True)
    print("wrote", png)


if __name__ == "__main__":
    main()
