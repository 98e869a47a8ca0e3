"""petra's checkpoints (safetensors) for the PyTorch PETRA (petra_peer.py): read one, start a model
from its weights, measure how far a model's weights are from it."""
import json
import struct
import sys

import numpy as np
import torch


def fail(message):
    print("petra_peer: " + message, file=sys.stderr)
    sys.exit(2)


def read_safetensors(path):
    """{name: float32 tensor} of a safetensors file (F32 entries only)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        size = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + size])
        out = {}
        for name, entry in header.items():
            if name == "__metadata__" or entry.get("dtype") != "F32":
                continue
            begin, end = entry["data_offsets"]
            out[name] = torch.from_numpy(np.frombuffer(raw, np.float32, (end - begin) // 4, 8 + size + begin)
                                         .reshape(entry["shape"]).copy())
    except (OSError, ValueError, KeyError, TypeError, AttributeError, struct.error) as e:
        fail("%s is not a readable safetensors file: %s" % (path, e))
    return out


def petra_named(model, saved, kind):
    """[(petra's name, tensor here)] of the model's parameters (kind "param") or BN running buffers
    ("buffer"). A model whose blocks carry `petra_name` (revvit_peer.py's) is paired by name: block
    name, '.', the PyTorch name inside the block, which must name every tensor of that kind in the
    checkpoint. Otherwise (revnet_peer.py's) by position: both list them in the same order (stem,
    blocks, head)."""
    names = [n for n in saved if n.startswith(kind + "/")]
    if all(hasattr(block, "petra_name") for block in model):
        mine = [(kind + "/" + block.petra_name + "." + n, t) for block in model
                for n, t in (block.named_parameters() if kind == "param" else block.named_buffers())]
        missing = sorted(set(n for n, _ in mine) - set(names))
        extra = sorted(set(names) - set(n for n, _ in mine))
        if missing or extra:
            fail("the checkpoint's %s tensors are not this model's: missing %s, not here %s"
                 % (kind, missing[:4] + (["..."] if len(missing) > 4 else []),
                    extra[:4] + (["..."] if len(extra) > 4 else [])))
        return mine
    if kind == "param":
        mine = list(model.parameters())
    else:
        mine = [b for name, b in model.named_buffers() if not name.endswith("num_batches_tracked")]
    if len(names) != len(mine):
        fail("the checkpoint holds %d %s tensors, this model %d" % (len(names), kind, len(mine)))
    return list(zip(names, mine))


def load_weights(model, path):
    saved = read_safetensors(path)
    with torch.no_grad():
        for name, t in petra_named(model, saved, "param"):
            if tuple(saved[name].shape) != tuple(t.shape):
                fail("%s in %s has shape %s, here %s" % (name, path, list(saved[name].shape), list(t.shape)))
            t.copy_(saved[name])


def compare_weights(model, path, exempt=()):
    """Per tensor of petra's checkpoint: max |petra − here| / max |petra|; their median, and the
    worst of them but for the tensors whose names end in one of `exempt` (reported apart)."""
    saved = read_safetensors(path)
    worst, name_of_worst, per = 0.0, "", {}
    for name, t in petra_named(model, saved, "param") + petra_named(model, saved, "buffer"):
        ref = saved[name]
        if tuple(ref.shape) != tuple(t.shape):
            fail("%s in %s has shape %s, here %s" % (name, path, list(ref.shape), list(t.shape)))
        rel = float((ref - t.detach()).abs().max() / max(float(ref.abs().max()), 1e-12))
        per[name] = rel
        if rel > worst and not name.endswith(tuple(exempt)):
            worst, name_of_worst = rel, name
    out = {"max_relative_difference": worst, "worst_tensor": name_of_worst,
           "median_relative_difference": float(np.median(list(per.values())))}
    if exempt:
        out["exempt_max_relative_difference"] = max([v for n, v in per.items() if n.endswith(tuple(exempt))],
                                                    default=0.0)
    return out
