"""What the reference scripts of tests/data/*/make_reference.py share: the
safetensors writer and the files each variant's folder holds (config.json,
model.safetensors, expected.safetensors with input_ids and float32 logits)."""
import json
import os
import struct

import torch


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        dtype = {torch.float32: "F32", torch.int64: "I64"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def write_variant(folder, config, weights, forward):
    """Random input ids for the config's vocabulary, their logits by `forward`, and the three files."""
    ids = torch.randint(0, config["vocab_size"], (2, 9))
    with torch.no_grad():
        logits = forward(weights, config, ids)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(folder, "model.safetensors"), weights)
    write_safetensors(os.path.join(folder, "expected.safetensors"), {"input_ids": ids, "logits": logits.float()})
