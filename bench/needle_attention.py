#!/usr/bin/env python3
"""Where does a model look when it answers a needle question?

The needle probe (`troupe lm probe`) asks for a capital stated in one of several
invented countries' passages. This script builds items of the same form, has
`troupe lm score` cut each into tokens, runs the model folder's Llama weights in
PyTorch (bench/llama_reference_model.py; its log-probabilities are checked
against troupe's), and reports, for every layer and head, the share of the last
position's attention (the ":" of "Answer:") that falls on

  right    the first token of the asked country's capital (what must be copied),
  other    the first tokens of the other countries' capitals,
  country  the asked country's name where its passages begin it,
  name:    the ":" tokens right after "name" (the field's cue),
  language the first tokens of the countries' languages (each; the relation not asked for),

averaged over the items, beside each head's attention on the previous token.
A head that puts its weight on `right` is a lookup head; one that spreads it over
`right` and `other` alike finds the field but not the country. With --head
LAYER HEAD it also reports what that head writes at the answer position: its
output's norm as a share of the residual stream's there, its logit for the
right capital's first token (above the mean of all tokens, and above the best
other capital's) read through the final norm at the whole residual stream's
scale, as the model reads it, how often the model's greedy first answer
token is one of the capitals', and whether the head's value at the right
capital's first token, read the same way, names that token: first among all
tokens, above the other capitals' first tokens, and its mean rank (a lookup
that looks at the right place writes the answer only where its value there
names it). With --subject LAYER HEAD it reports what a
subject head binds for the lookup to match: its weight, at the answer position,
on the asked country's name in the question (its last token before "?"), and the
cosine between what it writes there and what it writes at the right capital's
first token, and at the other capitals' (a lookup can tell the asked capital
apart only where the first is the larger); with both, and the subject head
below the --head one, the value check again with the subject head's write
taken out of the stream at the capital. Usage:

  python3 bench/needle_attention.py MODEL_DIR [--items 30] [--countries 3] [--seed 5] [--head LAYER HEAD]
                                    [--subject LAYER HEAD]

Needs Debian's python3-torch and a built troupe (TROUPE names another binary).
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys

try:
    import torch
except ImportError:
    sys.exit("needle_attention.py needs Debian's python3-torch: apt-get install python3-torch")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference_model as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYLLABLES = ["ka", "zor", "vi", "quel", "lin", "bra", "kor", "tal", "stum", "dou", "fei", "lor", "mes", "nar",
             "thu", "rel", "vos", "pen", "dri", "sel", "gau", "mir", "tos", "bel"]


def read_safetensors(path):
    """name -> float32 tensor, from a safetensors file (8-byte header size, JSON header, raw data)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            sys.exit(f"needle_attention: {name} is {t['dtype']}; only float32 folders are read")
        lo, hi = t["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[lo:hi]), dtype=torch.float32).reshape(t["shape"])
    return out


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    s = ref.Sizes(vocab=c["vocab_size"], hidden=c["hidden_size"], intermediate=c["intermediate_size"],
                  layers=c["num_hidden_layers"], heads=c["num_attention_heads"], kv_heads=c["num_key_value_heads"],
                  theta=c.get("rope_theta", 10000.0), eps=c.get("rms_norm_eps", 1e-6))
    w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    m = ref.Model(s)
    m.embed.weight.data = w["model.embed_tokens.weight"]
    m.norm.weight.data = w["model.norm.weight"]
    for i, layer in enumerate(m.layers):
        p = f"model.layers.{i}."
        for mine, theirs in (("q", "self_attn.q_proj"), ("k", "self_attn.k_proj"), ("v", "self_attn.v_proj"),
                             ("o", "self_attn.o_proj"), ("gate", "mlp.gate_proj"), ("up", "mlp.up_proj"),
                             ("down", "mlp.down_proj")):
            getattr(layer, mine).weight.data = w[p + theirs + ".weight"]
        layer.n1.weight.data = w[p + "input_layernorm.weight"]
        layer.n2.weight.data = w[p + "post_attention_layernorm.weight"]
    return m.eval(), s


def attention_maps(model, s, ids):
    """[layer][head] -> attention weights of every position (T x T), as the reference model computes them."""
    for layer in model.layers:
        layer.keep_weights = True
    logits = model(torch.tensor([ids]), 0)
    return [layer.weights[0] for layer in model.layers], torch.log_softmax(logits[0], -1)


def written_by(model, s, layer, head, at):
    """What `head` of `layer` added to the residual stream at position `at` in the last forward pass."""
    D = s.head_dim
    o = model.layers[layer].o.weight[:, head * D:(head + 1) * D]
    return o @ model.layers[layer].merged[0, at, head * D:(head + 1) * D]


def as_logits(model, s, written, stream):
    """Logits [V] of `written` read through the final norm at the scale of the residual stream `stream`."""
    return (model.norm.weight * written * torch.rsqrt(stream.pow(2).mean() + s.eps)) @ model.embed.weight.T


def head_write(model, s, layer, head, at):
    """(share of the residual stream's norm, logits [V]) of what `head` of `layer` wrote at position `at`
    in the last forward pass, its logits read through the final norm at the whole residual stream's scale."""
    written = written_by(model, s, layer, head, at)
    x = model.residual[0, at]
    return (written.norm() / x.norm()).item(), as_logits(model, s, written, x)


def value_logits(model, s, layer, head, x, scale_of):
    """Logits [V] of what `head` of `layer` would write from a value read at a position whose layer input is
    `x` (through the head's value and output columns), at the final norm's scale of the stream `scale_of`."""
    D, lay = s.head_dim, model.layers[layer]
    kv = head * s.kv_heads // s.heads
    v = lay.v.weight[kv * D:(kv + 1) * D] @ lay.n1(x[None])[0]
    return as_logits(model, s, lay.o.weight[:, head * D:(head + 1) * D] @ v, scale_of)


def name(rng):
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


def item(rng, countries):
    """(prompt, asked country, its capital, the other capitals, every country's language): passages in the
    needle probe's form."""
    names = []  # a list, not a set: a set's order of strings changes with each process's hash seed
    while len(names) < 2 * countries:
        candidate = name(rng)
        if candidate not in names:
            names.append(candidate)
    pairs = [(names[2 * c], names[2 * c + 1]) for c in range(countries)]
    passages, languages = [], []
    for country, capital in pairs:
        passages.append(f"{country} - Government - Capital: geographic coordinates: {rng.randrange(70)} "
                        f"{rng.randrange(60)} N, {rng.randrange(170)} {rng.randrange(60)} E; name: {capital}; "
                        f"time difference: UTC+{rng.randrange(12) + 1}")
        languages.append(name(rng) + "ish")
        passages.append(f"{country} - People and Society - Languages: {languages[-1]} (official) 80%, English 20%")
    rng.shuffle(passages)
    asked, capital = pairs[rng.randrange(countries)]
    prompt = "".join(p + "\n" for p in passages) + f"\nQuestion: What is the capital of {asked}?\nAnswer:"
    return prompt, asked, capital, [c for _, c in pairs if c != capital], languages


def tokens(troupe, model_dir, text):
    out = subprocess.run([troupe, "lm", "score", "--model", model_dir, "--json", "--threads", "1"], input=text,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["tokens"]


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("model_dir")
    a.add_argument("--items", type=int, default=30)
    a.add_argument("--countries", type=int, default=3)
    a.add_argument("--seed", type=int, default=5)
    a.add_argument("--head", type=int, nargs=2, metavar=("LAYER", "HEAD"), help="report what this head writes")
    a.add_argument("--subject", type=int, nargs=2, metavar=("LAYER", "HEAD"), help="report what this head binds")
    args = a.parse_args()
    troupe = os.environ.get("TROUPE", os.path.join(ROOT, "build", "workflows", "troupe"))
    torch.set_num_threads(1)
    model, s = load(args.model_dir)
    rng = random.Random(args.seed)
    layer_input = {}  # with --head: that layer's input in the last forward pass
    if args.head:
        model.layers[args.head[0]].register_forward_pre_hook(lambda m, a: layer_input.__setitem__("x", a[0]))
    value_checks = {"as it is": [0, 0, 0]}  # with --head: first, above the others, summed rank
    if args.head and args.subject and args.subject[0] < args.head[0]:
        value_checks["without the subject's write"] = [0, 0, 0]
    shares = torch.zeros(s.layers, s.heads, 6)  # right, other, country, name:, language, previous token
    right_answers, greedy_language, worst_gap = 0, 0, 0.0
    write_share, above_mean, above_other, greedy_capital = 0.0, 0.0, 0.0, 0  # with --head
    on_name, same_right, same_other = 0.0, 0.0, 0.0  # with --subject
    for _ in range(args.items):
        prompt, asked, capital, others, languages = item(rng, args.countries)
        toks = tokens(troupe, args.model_dir, prompt + " " + capital)
        ids = [t["id"] for t in toks]
        texts = [t["text"] for t in toks]
        answer_at = len(tokens(troupe, args.model_dir, prompt))  # the answer's first token
        with torch.no_grad():
            maps, logprobs = attention_maps(model, s, ids)
        # The reference model against troupe: the same log-probabilities of every token.
        gap = max(abs(logprobs[i - 1, ids[i]].item() - toks[i]["logprob"]) for i in range(1, len(ids)))
        worst_gap = max(worst_gap, gap)
        last = answer_at - 1
        greedy = logprobs[last].argmax().item()
        right_answers += int(greedy == ids[answer_at])

        def starts(word, after):
            """Positions whose token begins `word` right after text ending in `after`."""
            out, text = [], ""
            for i, t in enumerate(texts[:answer_at]):
                if text.endswith(after) and "".join(texts[i:i + 12]).lstrip().startswith(word):
                    out.append(i)
                text += t
            return out

        right = starts(capital, "name:")
        other = [p for c in others for p in starts(c, "name:")]
        language = [p for n in languages for p in starts(n, "Languages:")]
        capital_first = {ids[p] for p in right + other}
        greedy_language += int(greedy in {ids[p] for p in language} and greedy not in capital_first)
        country = starts(asked, "\n") + ([0] if "".join(texts[:12]).startswith(asked) else [])
        cue = [i for i in range(1, answer_at) if texts[i] == ":" and texts[i - 1].strip() == "name"]
        if args.head:
            share, logits = head_write(model, s, args.head[0], args.head[1], last)
            right_id, other_ids = ids[answer_at], [ids[p] for p in other]
            write_share += share
            above_mean += (logits[right_id] - logits.mean()).item()
            above_other += (logits[right_id] - max(logits[i] for i in other_ids)).item()
            greedy_capital += int(greedy in [right_id] + other_ids)
            at = right[0]
            inputs = {"as it is": layer_input["x"][0, at]}
            if "without the subject's write" in value_checks:
                inputs["without the subject's write"] = inputs["as it is"] - written_by(model, s, *args.subject, at)
            for key, x in inputs.items():
                with torch.no_grad():
                    v = value_logits(model, s, args.head[0], args.head[1], x, model.residual[0, last])
                rank = (v > v[right_id]).sum().item()
                check = value_checks[key]
                check[0] += int(rank == 0)
                check[1] += int(v[right_id] > max(v[i] for i in other_ids))
                check[2] += rank
        if args.subject:
            layer, head = args.subject
            at_cue = written_by(model, s, layer, head, last)
            cos = lambda p: torch.nn.functional.cosine_similarity(at_cue, written_by(model, s, layer, head, p), dim=0)
            question_mark = max(i for i in range(answer_at) if texts[i].startswith("?"))
            on_name += maps[layer][head, last, question_mark - 1].item()
            same_right += sum(cos(p).item() for p in right) / len(right)
            same_other += sum(cos(p).item() for p in other) / len(other)
        for layer in range(s.layers):
            for head in range(s.heads):
                row = maps[layer][head, last]
                shares[layer, head, 0] += row[right].sum()
                shares[layer, head, 1] += row[other].sum() / max(1, len(others))
                shares[layer, head, 2] += row[country].sum()
                shares[layer, head, 3] += row[cue].sum()
                shares[layer, head, 4] += row[language].sum() / len(languages)
                shares[layer, head, 5] += maps[layer][head].diagonal(-1).mean()
    shares /= args.items
    print(f"{args.items} items of {args.countries} countries; greedy first answer token right in {right_answers}; "
          f"a language's and no capital's (the wrong relation) in {greedy_language}; largest log-probability gap to troupe {worst_gap:.2e}")
    if args.head:
        n = args.items
        print(f"layer {args.head[0]} head {args.head[1]} at the answer: its output {write_share / n:.3f} of the residual "
              f"stream's norm; its logit for the right first token {above_mean / n:+.2f} above the mean, "
              f"{above_other / n:+.2f} above the best other capital's; greedy answer a capital's in {greedy_capital}")
        for key, (first, above, rank) in value_checks.items():
            print(f"  its value at the right capital's first token ({key}) names that token first in {first}, "
                  f"above the other capitals' in {above}, mean rank {rank / n:.1f}")
    if args.subject:
        n = args.items
        print(f"layer {args.subject[0]} head {args.subject[1]} at the answer: {on_name / n:.3f} of its weight on the "
              f"asked country's last token in the question; cosine of its output there and at the right capital "
              f"{same_right / n:.3f}, at each other capital {same_other / n:.3f}")
    print("| layer | head | right capital | another capital (each) | asked country | name: | a language (each) "
          "| previous token |")
    print("|---|---|---|---|---|---|---|---|")
    for layer in range(s.layers):
        for head in range(s.heads):
            v = shares[layer, head]
            print(f"| {layer} | {head} | {v[0]:.3f} | {v[1]:.3f} | {v[2]:.3f} | {v[3]:.3f} | {v[4]:.3f} | {v[5]:.3f} |")


if __name__ == "__main__":
    main()
