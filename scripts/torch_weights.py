#!/usr/bin/env python3
"""torch_weights.py OUT [WEIGHTS] — the small model of the PyTorch reference implementation (the Python script named
by TORCH_SCRIPT, see docs/speed.md) with its seed-1 initial weights (or the weights it saved with --save), written
in attend's parameter layout to OUT/weights.bin (float32, little-endian) with OUT/meta.json: each tensor's shape and
offset, both vocabularies, the first 64 Multi30k training pairs (from the directory named by MULTI30K) as ids, and
PyTorch's loss and gradient norms on that batch without dropout. model.TestGradientsMatchPyTorch reads them
(scripts/torch-check.sh runs both). Needs Debian's python3-torch."""
import importlib.util, json, os, random, sys

import numpy as np
import torch


def need(name, what):
    """The value of the environment variable name, or exit 2 saying what it should name."""
    value = os.environ.get(name, "")
    if not value:
        sys.exit(f"torch_weights: set {name} to {what}")
    if not os.path.exists(value):
        sys.exit(f"torch_weights: {name}={value} does not exist")
    return value


if len(sys.argv) not in (2, 3):
    sys.exit("usage: torch_weights.py OUT [WEIGHTS]")
script = need("TORCH_SCRIPT", "the Python script of the PyTorch reference implementation (see docs/speed.md)")
data = need("MULTI30K", "the Multi30k directory (scripts/get-multi30k.sh DIR fetches it)")
spec = importlib.util.spec_from_file_location("reference", script)
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
out, load = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)

torch.manual_seed(1)
random.seed(1)
src, tgt = ref.read(data + "/train.de"), ref.read(data + "/train.en")
keep = [(s, t) for s, t in zip(src, tgt) if 0 < len(s) <= 50 and 0 < len(t) <= 50]
sv, tv = ref.Vocab([s for s, _ in keep]), ref.Vocab([t for _, t in keep])
pairs = [(sv.encode(s), tv.encode(t)) for s, t in keep]
model = ref.Seq2Seq(len(sv.itos), len(tv.itos), 128, 128, 256, 128)
if load:
    model.load_state_dict(torch.load(load))
p = {k: v.detach().numpy() for k, v in model.state_dict().items()}


def gates(w):
    """PyTorch's (4H, In) LSTM weight → attend's (4, In, H), one block per gate."""
    h = w.shape[0] // 4
    return np.stack([w[k * h:(k + 1) * h].T for k in range(4)])


def bias(name):
    """attend's one LSTM bias is PyTorch's b_ih + b_hh, (4, H)."""
    b = p[name.replace("*", "ih")] + p[name.replace("*", "hh")]
    return b.reshape(4, -1)


# attend's name → (its value, PyTorch's parameters whose gradients it gets)
layout = {
    "src_emb": (p["src_emb.weight"], ["src_emb.weight"]),
    "enc.fwd.w_ih": (gates(p["encoder.weight_ih_l0"]), ["encoder.weight_ih_l0"]),
    "enc.fwd.w_hh": (gates(p["encoder.weight_hh_l0"]), ["encoder.weight_hh_l0"]),
    "enc.fwd.b": (bias("encoder.bias_*_l0"), ["encoder.bias_ih_l0"]),
    "enc.bwd.w_ih": (gates(p["encoder.weight_ih_l0_reverse"]), ["encoder.weight_ih_l0_reverse"]),
    "enc.bwd.w_hh": (gates(p["encoder.weight_hh_l0_reverse"]), ["encoder.weight_hh_l0_reverse"]),
    "enc.bwd.b": (bias("encoder.bias_*_l0_reverse"), ["encoder.bias_ih_l0_reverse"]),
    "tgt_emb": (p["tgt_emb.weight"], ["tgt_emb.weight"]),
    "bridge.h.w": (p["bridge_h.weight"].T, ["bridge_h.weight"]),
    "bridge.h.b": (p["bridge_h.bias"], ["bridge_h.bias"]),
    "bridge.c.w": (p["bridge_c.weight"].T, ["bridge_c.weight"]),
    "bridge.c.b": (p["bridge_c.bias"], ["bridge_c.bias"]),
    "attn.w_h": (p["att_h.weight"].T, ["att_h.weight"]),
    "attn.w_s": (p["att_s.weight"].T, ["att_s.weight"]),
    "attn.b_s": (p["att_s.bias"], ["att_s.bias"]),
    "attn.v": (p["att_v.weight"][0], ["att_v.weight"]),
    "dec.w_ih": (gates(p["cell.weight_ih"]), ["cell.weight_ih"]),
    "dec.w_hh": (gates(p["cell.weight_hh"]), ["cell.weight_hh"]),
    "dec.b": (bias("cell.bias_*"), ["cell.bias_ih"]),
    "out.w": (p["out.weight"].T, ["out.weight"]),
    "out.b": (p["out.bias"], ["out.bias"]),
}

batch = pairs[:64]
model.eval()  # no dropout; gradients are still computed
s = ref.pad([x[0] for x in batch])
t = ref.pad([[ref.BOS] + x[1] + [ref.EOS] for x in batch])
logits = model(s, (s != ref.PAD).sum(1), t[:, :-1])
loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), t[:, 1:].reshape(-1),
                                         ignore_index=ref.PAD)
loss.backward()
grads = dict(model.named_parameters())
norm = lambda names: float(torch.sqrt(sum((grads[n].grad.double() ** 2).sum() for n in names)))

os.makedirs(out, exist_ok=True)
index = {}
with open(os.path.join(out, "weights.bin"), "wb") as f:
    for name, (value, torch_names) in layout.items():
        a = np.ascontiguousarray(value, dtype=np.float32)
        index[name] = {"shape": list(a.shape), "offset": f.tell() // 4, "grad_norm": norm(torch_names)}
        f.write(a.tobytes())
meta = {"tensors": index, "src_vocab": sv.itos, "tgt_vocab": tv.itos,
        "src": [x[0] for x in batch], "tgt": [x[1] for x in batch],
        "loss": loss.item(), "grad_norm": norm(list(grads)), "tokens": int((t[:, 1:] != ref.PAD).sum())}
with open(os.path.join(out, "meta.json"), "w") as f:
    json.dump(meta, f)
print(f"torch_weights: loss {meta['loss']:.6f}, gradient norm {meta['grad_norm']:.6f} on {meta['tokens']} target words")
