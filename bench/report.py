#!/usr/bin/env python3
"""Runs troupe's benchmarks and writes one report, as JSON and as markdown.

    python3 bench/report.py OUT_DIR [--quick]

Every ratio is between two things measured in this run, on this machine:
  rollout     Red-Black episodes/s at 1 / 16 / 256 concurrent episodes, with
              and without prefix reuse, and the token positions the model
              encodes per episode (forward FLOPs); bench/rollout_bench.
  training    the main job's training loop (rollout + credit + update) in
              troupe against the same loop written plainly in PyTorch
              (bench/red_black_reference.py, Debian's python3-torch, one
              thread each), in interleaved rounds; troupe's iteration split
              into generation, environment, credit and update.
  scaling     troupe's training episodes/s and peak memory as team size,
              model width and concurrent episodes grow.
  scoring     the update scoring each episode's calls as prefix trees (its
              conversations' shared prefixes once) against scoring every
              call on its own (trainer.tree_row_positions=0), interleaved, on
              the main job and, where runs/base_model/model exists, on
              red_black_base_model (text prompts) and qa_decompose (passages):
              positions the update encodes per episode, update seconds,
              episodes/s and where the iteration's time goes.
  transport   troupe's frames against raw libzmq; bench/transport_bench.
  retrieval   the QA retriever's index build, queries/s and recall@k.
--quick runs fewer iterations and rounds (a smoke run of the report itself);
--no-transport and --no-retrieval leave those out.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TROUPE = os.path.join(ROOT, "build", "workflows", "troupe")
MAIN_JOB = os.path.join(ROOT, "workflows", "shipped", "red_black.textproto")
REFERENCE_PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch


def last_json(text):
    """The last JSON object a benchmark printed: one line, or pretty-printed to the end."""
    lines = text.splitlines()
    for i in reversed(range(len(lines))):
        if lines[i].startswith("{"):
            for candidate in (lines[i], "\n".join(lines[i:])):
                try:
                    return json.loads(candidate)
                except ValueError:
                    pass
    raise RuntimeError("no JSON object in:\n" + text[-2000:])


def run(args, **kw):
    """Runs a command; returns (stdout, peak resident MiB of that process)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, **kw)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(" ".join(args) + " failed:\n" + out[-3000:])
    return out, usage.ru_maxrss / 1024.0


def troupe_training(iterations, extra, work, workflow=MAIN_JOB):
    """Trains a workflow (the main job) for `iterations` iterations; per-iteration means from its metrics."""
    out_dir = tempfile.mkdtemp(dir=work)
    _, peak = run([TROUPE, "train", workflow, "--out", out_dir, "--quiet", "--no-eval", "--set",
                   f"trainer.iterations={iterations}", "--set", "trainer.max_minutes=0"] + extra)
    rows = [json.loads(l) for l in open(os.path.join(out_dir, "metrics.jsonl")) if l.strip()]
    rows = rows[1:] if len(rows) > 2 else rows  # the first iteration warms allocators and caches
    mean = lambda k: statistics.mean(r[k] for r in rows)
    episodes = statistics.mean(r["episodes"] for r in rows)
    return {"iterations": iterations, "episodes_per_iteration": episodes,
            "episodes_per_s": episodes / mean("time/iteration_s"),
            "iteration_s": mean("time/iteration_s"), "generate_s": mean("time/generate_s"),
            "environment_s": mean("time/environment_s"), "credit_s": mean("time/credit_s"),
            "update_s": mean("time/update_s"),
            "encoded_positions_per_episode": mean("encoded_positions_per_episode"),
            "update_positions_per_episode": mean("update_positions_per_episode"), "peak_mib": peak}


def reference_training(iterations):
    out, peak = run([REFERENCE_PYTHON, os.path.join("bench", "red_black_reference.py"), str(iterations), "1"],
                    env=dict(os.environ, OMP_NUM_THREADS="1"))
    r = last_json(out)
    r["peak_mib"] = peak
    return r


def training(rounds, iterations, work):
    results = {"troupe": [], "reference": [], "ratio": []}
    for i in range(rounds):
        t = troupe_training(iterations, [], work)
        p = reference_training(iterations)
        results["troupe"].append(t)
        results["reference"].append(p)
        results["ratio"].append(t["episodes_per_s"] / p["episodes_per_s"])
        print(f"  round {i + 1}: troupe {t['episodes_per_s']:.2f} episodes/s, plain PyTorch "
              f"{p['episodes_per_s']:.2f}: {results['ratio'][-1]:.2f}x", flush=True)
    results["ratio_median"] = statistics.median(results["ratio"])
    return results


def scaling(iterations, work):
    rows = []
    d = "model[0].transformer."
    cases = [("team size", str(n), ["--set", f"game.param[0].int={n}", "--set", f"{d}max_len={96 + 20 * (n - 5)}"])
             for n in (5, 10, 15)]
    cases += [("model width", str(w), ["--set", f"{d}d_model={w}"]) for w in (64, 128)]
    cases += [("concurrent episodes", str(e), ["--set", f"trainer.episodes_per_iteration={e}"]) for e in (64, 128)]
    for axis, value, extra in cases:
        r = troupe_training(iterations, extra, work)
        r.update({"axis": axis, "value": value})
        rows.append(r)
        print(f"  {axis} {value}: {r['episodes_per_s']:.2f} episodes/s, peak {r['peak_mib']:.0f} MiB", flush=True)
    return rows


def scoring(rounds, iterations, work):
    """Prefix-tree scoring against per-call scoring, interleaved, per workflow."""
    cases = [("red_black (main job)", MAIN_JOB, [])]
    if os.path.isdir(os.path.join(ROOT, "runs", "base_model", "model")):
        cases += [("red_black_base_model", os.path.join(ROOT, "workflows", "shipped", "red_black_base_model.textproto"),
                   ["--set", "trainer.sft.episodes=0"]),
                  ("qa_decompose", os.path.join(ROOT, "workflows", "shipped", "qa_decompose.textproto"),
                   ["--set", "trainer.sft.episodes=0"])]
    rows = []
    for name, workflow, extra in cases:
        runs = {"trees": [], "per call": []}
        for _ in range(rounds):
            for mode, setting in (("trees", []), ("per call", ["--set", "trainer.tree_row_positions=0"])):
                runs[mode].append(troupe_training(iterations, extra + setting, work, workflow))
        row = {"workflow": name}
        for mode, rs in runs.items():
            row[mode] = {k: statistics.mean(r[k] for r in rs) for k in rs[0] if isinstance(rs[0][k], (int, float))}
        rows.append(row)
        t, p = row["trees"], row["per call"]
        print(f"  {name}: update {p['update_s']:.3f} s -> {t['update_s']:.3f} s, positions/episode "
              f"{p['update_positions_per_episode']:,.0f} -> {t['update_positions_per_episode']:,.0f}, episodes/s "
              f"{p['episodes_per_s']:.2f} -> {t['episodes_per_s']:.2f}", flush=True)
    return rows


def markdown(report):
    m = ["# troupe benchmark report", "",
         f"{report['machine']}; {report['date']}. Every ratio is measured within this run.", ""]
    r = report.get("rollout")
    if r:
        m += ["## Rollout (Red-Black main job, untrained model, model worker over inproc)", "",
              "| concurrent episodes | episodes/s | without prefix reuse | ratio | games stepped during generation "
              "| forward calls / round |",
              "|---:|---:|---:|---:|---:|---:|"]
        for n in (1, 16, 256):
            a, b = r[f"episodes_per_s_{n}"], r[f"episodes_per_s_{n}_no_prefix_reuse"]
            o = r.get(f"episodes_per_s_{n}_overlap_environment")
            overlap = f"{o:.1f} ({o / a:.2f}x)" if o and n > 1 else "n/a"
            m.append(f"| {n} | {a:.1f} | {b:.1f} | {a / b:.2f}x | {overlap} | {r[f'forward_calls_per_round_{n}']:.1f} |")
        p, q = r["encoded_positions_per_episode_256"], r["encoded_positions_per_episode_256_no_prefix_reuse"]
        flops = 2 * r["parameters"]
        m += ["", f"Forward work per episode: {q:,.0f} token positions ({flops * q / 1e9:.2f} GFLOP) when every call "
              f"encodes its prompt from the start; {p:,.0f} ({flops * p / 1e9:.2f} GFLOP) with prefix reuse, "
              f"{q / p:.1f}x fewer ({r['parameters']:,.0f} parameters; FLOPs ~ 2 x parameters x positions).", ""]
    t = report.get("training")
    if t:
        tr, ref = t["troupe"], t["reference"]
        mean = lambda rows, k: statistics.mean(x[k] for x in rows)
        m += ["## Training loop: troupe vs. the same loop written plainly in PyTorch", "",
              f"{len(tr)} interleaved rounds of {tr[0]['iterations']} iterations of 32 episodes each "
              "(the first iteration of each troupe run left out); one thread each.", "",
              "| | episodes/s | rollout s / iteration | credit s | update s | peak MiB |", "|---|---:|---:|---:|---:|---:|",
              f"| troupe | {mean(tr, 'episodes_per_s'):.2f} | {mean(tr, 'generate_s') + mean(tr, 'environment_s'):.3f} "
              f"| {mean(tr, 'credit_s'):.4f} | {mean(tr, 'update_s'):.3f} | {mean(tr, 'peak_mib'):.0f} |",
              f"| plain PyTorch | {mean(ref, 'episodes_per_s'):.2f} | {mean(ref, 'rollout_s_per_iteration'):.3f} "
              f"| {mean(ref, 'credit_s_per_iteration'):.4f} | {mean(ref, 'update_s_per_iteration'):.3f} "
              f"| {mean(ref, 'peak_mib'):.0f} |", "",
              f"troupe / plain PyTorch, episodes/s including training: **{t['ratio_median']:.2f}x** "
              f"(median of rounds; rounds {min(t['ratio']):.2f}-{max(t['ratio']):.2f}x). Target: 10x.", "",
              f"troupe's iteration: generation {mean(tr, 'generate_s'):.3f} s, environment (games, prompts, records) "
              f"{mean(tr, 'environment_s'):.3f} s, credit {mean(tr, 'credit_s'):.4f} s, update {mean(tr, 'update_s'):.3f} s.",
              ""]
    s = report.get("scaling")
    if s:
        m += ["## Scaling (troupe training, main job with one thing changed)", "",
              "| axis | value | episodes/s | generation s | environment s | update s | positions / episode | peak MiB |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for x in s:
            m.append(f"| {x['axis']} | {x['value']} | {x['episodes_per_s']:.2f} | {x['generate_s']:.3f} | "
                     f"{x['environment_s']:.3f} | {x['update_s']:.3f} | {x['encoded_positions_per_episode']:,.0f} | "
                     f"{x['peak_mib']:.0f} |")
        m.append("")
    sc = report.get("scoring")
    if sc:
        m += ["## The update: scoring along the conversation", "",
              "Each workflow trained with the update scoring an episode's calls as prefix trees (shared prefixes "
              "encoded once) and with every call scored on its own (`trainer.tree_row_positions=0`), interleaved; "
              "the same numbers either way (tests/workflows/tree_scoring_test.cc).", "",
              "| workflow | scoring | update positions / episode | update s | episodes/s | generation s "
              "| environment s | credit s |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
        for row in sc:
            for mode in ("per call", "trees"):
                x = row[mode]
                m.append(f"| {row['workflow']} | {mode} | {x['update_positions_per_episode']:,.0f} | {x['update_s']:.3f} "
                         f"| {x['episodes_per_s']:.2f} | {x['generate_s']:.3f} | {x['environment_s']:.3f} "
                         f"| {x['credit_s']:.4f} |")
        m.append("")
        for row in sc:
            t, p = row["trees"], row["per call"]
            m.append(f"- {row['workflow']}: {p['update_positions_per_episode'] / t['update_positions_per_episode']:.1f}x "
                     f"fewer update positions, update {p['update_s'] / t['update_s']:.2f}x faster, episodes/s "
                     f"{t['episodes_per_s'] / p['episodes_per_s']:.2f}x.")
        m.append("")
    for name in ("transport", "retrieval"):
        if report.get(name):
            m += [f"## {name.capitalize()} (JSON as the benchmark prints it)", "", "```",
                  json.dumps(report[name], indent=1), "```", ""]
    return "\n".join(m)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    quick = "--quick" in sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="troupe-bench-")
    report = {"machine": f"{os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d %H:%M")}
    print("== rollout (bench/rollout_bench)", flush=True)
    report["rollout"] = last_json(run([os.path.join(ROOT, "build", "bench", "rollout_bench"), MAIN_JOB])[0])
    print("== training loop: troupe vs plain PyTorch", flush=True)
    report["training"] = training(1 if quick else 2, 3 if quick else 8, work)
    print("== scaling", flush=True)
    report["scaling"] = scaling(2 if quick else 3, work)
    print("== the update: prefix trees against per-call scoring", flush=True)
    report["scoring"] = scoring(1 if quick else 2, 3 if quick else 5, work)
    for name, binary in (("transport", "transport_bench"), ("retrieval", "retrieval_bench")):
        if f"--no-{name}" in sys.argv[2:]:
            continue
        print(f"== {name} (bench/{binary})", flush=True)
        try:
            report[name] = last_json(run([os.path.join(ROOT, "build", "bench", binary)])[0])
        except (RuntimeError, ValueError) as e:  # one benchmark failing keeps the others' figures
            report[name] = {"error": str(e)[-500:]}
            print(f"  {name} failed: {str(e)[-300:]}", flush=True)
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    text = markdown(report)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
