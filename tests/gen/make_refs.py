#!/usr/bin/env python3
"""Generate every stored reference with the real HF transformers (never with llmgen).

Usage: make_refs.py CACHE        (run by `make refs` in the venv of requirements-ref.txt)

Writes under tests/refs/ (each JSON records the tool versions and settings that made it):
  smollm2-gguf.json       SmolLM2-135M-Instruct loaded by transformers from the default Q4_1 GGUF
                          (dequantized to f32): prompts tokenized by HF, greedy 64 tokens, top-5 logits
                          of the first 8 steps, top-2 gap of every step
  smollm2-hf-f32.json     the same prompts on the f32 HF directory written by save_pretrained from that
                          GGUF (its ids must equal the GGUF's: asserted here)
  smollm2-hf-bf16.json    the same prompts on the bf16 directory, loaded with dtype float32
  tiny-*.json + .bin      tiny random Llama configs (fixtures written here into tests/fixtures/tiny-*/),
                          greedy 32 tokens with the full logits of every step
  llama-1b-random.json + .bin   the Llama-3.2-1B-shaped random checkpoint (built torch-free by
                          build_fixtures.py), loaded as float32: greedy ids, gaps, max |logit|, top-64
                          of every step, full logits of the first 2 steps
  fixtures.json           checksums of the large fixtures (checked by `make fixtures`)
Also writes tests/fixtures/smollm2-hf/ (small files transformers wrote next to the weights) and
tests/gen/llama-1b-random/config.json (LlamaConfig's own serialization).

Greedy decoding is a manual loop (one forward over the prompt, then one token at a time with the KV
cache, argmax of the last row, no EOS stop) so that step i's logits are exactly the row the token was
picked from. Logits binaries are raw little-endian float32, one row of vocab_size per step.

`make refs` runs `make fixtures` first; if the generator in fixturelib.py changed on purpose, run this
script directly (it rebuilds the large fixtures itself and records their new checksums).
"""
import json
import math
import os
import platform
import shutil
import sys
import time

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build_fixtures as B  # noqa: E402
import fixturelib as F  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
REFS = os.path.join(REPO, "tests", "refs")
FIXT = os.path.join(REPO, "tests", "fixtures")
THREADS = 2

SMOL_STEPS = 64
SMOL_TOP5_STEPS = 8
SMOL_PROMPTS = [
    ("plain-colors", False, "The three primary colors are"),
    ("chat-capital", True, "What is the capital of France?"),
    ("code-fib", False, 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'),
    ("list-shopping", False, "Here is a shopping list for a week of healthy meals:\n1."),
    ("chat-sky", True, "Explain why the sky is blue in two sentences."),
    ("qa-arith", False, "Question: A train travels 120 km in 2 hours. What is its average speed?\nAnswer:"),
    ("long-press", False,
     "The printing press, developed by Johannes Gutenberg around 1440, changed the way information "
     "spread across Europe. Before it, books were copied by hand, which made them rare and expensive. "
     "Within a few decades, printing shops appeared in more than two hundred cities, and millions of "
     "volumes were produced. Scholars could compare identical copies of a text, merchants could "
     "circulate price lists, and reformers could reach readers far beyond their own towns. Historians "
     "often argue that the most important consequence of the printing press was"),
    ("chat-poem", True, "Write a haiku about autumn leaves, then explain its imagery."),
]

# Tiny configs: (name, LlamaConfig kwargs, weight dtype, steps). Odd sizes on purpose.
TINY = [
    ("tiny-mha-f32", dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                          num_attention_heads=4, num_key_value_heads=4, head_dim=16,
                          tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                          rms_norm_eps=1e-5), "float32"),
    ("tiny-gqa-llama3-tied-f32", dict(vocab_size=384, hidden_size=96, intermediate_size=128,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      head_dim=24, tie_word_embeddings=True,
                                      rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0,
                                                       "factor": 4.0, "low_freq_factor": 1.0,
                                                       "high_freq_factor": 4.0,
                                                       "original_max_position_embeddings": 64},
                                      rms_norm_eps=1e-5), "float32"),
    ("tiny-gqa-llama3-bf16", dict(vocab_size=512, hidden_size=96, intermediate_size=200,
                                  num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
                                  head_dim=16, tie_word_embeddings=False,
                                  rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0,
                                                   "factor": 32.0, "low_freq_factor": 1.0,
                                                   "high_freq_factor": 4.0,
                                                   "original_max_position_embeddings": 8192},
                                  rms_norm_eps=1e-5), "bfloat16"),
    ("tiny-mqa-odd-tied-f32", dict(vocab_size=300, hidden_size=80, intermediate_size=136,
                                   num_hidden_layers=3, num_attention_heads=5, num_key_value_heads=1,
                                   head_dim=16, tie_word_embeddings=True,
                                   rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                                   rms_norm_eps=1e-6), "float32"),
    # Same kind of model, but config.json rewritten with the transformers 4.x key layout that most
    # published checkpoints still carry (rope_theta and rope_scaling at top level, torch_dtype);
    # the reference is transformers 5 loading that rewritten file.
    ("tiny-legacy-keys-f32", dict(vocab_size=320, hidden_size=64, intermediate_size=176,
                                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                  head_dim=16, tie_word_embeddings=False,
                                  rope_parameters={"rope_type": "llama3", "rope_theta": 50000.0,
                                                   "factor": 8.0, "low_freq_factor": 1.0,
                                                   "high_freq_factor": 4.0,
                                                   "original_max_position_embeddings": 128},
                                  rms_norm_eps=1e-5), "float32"),
]
TINY_STEPS = 32
TINY_PROMPT_LEN = 12

LLAMA_1B_CONFIG = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                       num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                       max_position_embeddings=131072, rms_norm_eps=1e-5, tie_word_embeddings=True,
                       bos_token_id=128000, eos_token_id=[128001, 128008, 128009],
                       rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                        "original_max_position_embeddings": 8192},
                       dtype="bfloat16")
LLAMA_1B_STEPS = 12
LLAMA_1B_PROMPT_LEN = 16
LLAMA_1B_TOPK = 64
LLAMA_1B_FULL_ROWS = 2


def log(msg):
    print("refs: " + msg, file=sys.stderr, flush=True)


def versions():
    import gguf
    import safetensors
    import tokenizers
    import accelerate
    from importlib.metadata import version
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "gguf": version("gguf"), "numpy": np.__version__,
            "safetensors": safetensors.__version__, "tokenizers": tokenizers.__version__,
            "accelerate": accelerate.__version__, "machine": platform.machine(),
            "torch_threads": torch.get_num_threads()}


def settings(**kw):
    s = {"decode": "greedy: manual loop, forward + argmax (first index on ties), KV cache, no EOS stop",
         "compute_dtype": "float32", "torch_deterministic": True}
    s.update(kw)
    return s


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    log("wrote %s" % os.path.relpath(path, REPO))


def rel(path):
    return os.path.relpath(path, REPO)


@torch.no_grad()
def greedy(model, prompt_ids, steps):
    """Yield (step, logits row as float32 tensor, chosen id) for `steps` greedy steps."""
    out = model(input_ids=torch.tensor([prompt_ids]), use_cache=True)
    for i in range(steps):
        row = out.logits[0, -1].float()
        nxt = int(torch.argmax(row))
        yield i, row, nxt
        if i + 1 < steps:
            out = model(input_ids=torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)


def top2_gap(row):
    v = torch.topk(row, 2).values
    return float(v[0] - v[1])


def topk_pairs(row, k):
    t = torch.topk(row, k)
    return [[int(i), float(v)] for v, i in zip(t.values, t.indices)]


def run_greedy(model, prompt_ids, steps, top5_steps=0, keep_rows=None, topk=0):
    """One reference case: ids, gaps, max |logit|, optional top-k and kept full rows."""
    case = {"prompt_ids": list(prompt_ids), "ids": [], "gap": [], "max_abs_logit": []}
    if top5_steps:
        case["top5"] = []
    if topk:
        case["top%d" % topk] = []
    rows = []
    for i, row, nxt in greedy(model, prompt_ids, steps):
        case["ids"].append(nxt)
        case["gap"].append(top2_gap(row))
        case["max_abs_logit"].append(float(row.abs().max()))
        if i < top5_steps:
            case["top5"].append(topk_pairs(row, 5))
        if topk:
            case["top%d" % topk].append(topk_pairs(row, topk))
        if keep_rows is None or i < keep_rows:
            rows.append(row.numpy().astype("<f4"))
    return case, rows


@torch.no_grad()
def f64_rel_err(model_f64, case, rows):
    """Max |f32 logit - f64 logit| / max |f64 logit| per kept step, teacher-forced on the f32 ids:
    the size of plain f32 rounding noise for this model, which bounds what any exact f32
    implementation can be asked to match."""
    seq = case["prompt_ids"] + case["ids"][:len(rows) - 1]
    logits = model_f64(input_ids=torch.tensor([seq])).logits[0]
    p = len(case["prompt_ids"])
    errs = []
    for i, r in enumerate(rows):
        ref = logits[p - 1 + i]
        errs.append(float((torch.from_numpy(r).double() - ref).abs().max() / ref.abs().max()))
    return errs


# ---- SmolLM2 --------------------------------------------------------------------------------------

def smol_prompts(tok):
    out = []
    for name, chat, text in SMOL_PROMPTS:
        if chat:
            enc = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                          tokenize=True)
            ids = list(enc["input_ids"])
        else:
            ids = list(tok(text)["input_ids"])
        out.append({"name": name, "chat": chat, "text": text, "prompt_ids": ids})
    return out


def smol_cases(model, prompts, top5):
    cases = []
    for p in prompts:
        case, _ = run_greedy(model, p["prompt_ids"], SMOL_STEPS, top5_steps=SMOL_TOP5_STEPS if top5 else 0,
                             keep_rows=0)
        case.pop("max_abs_logit")
        cases.append(dict(name=p["name"], chat=p["chat"], text=p["text"], **case))
    return cases


def save_hf_dirs(model, tok, work):
    """Write the GGUF model as HF directories exactly as REFERENCE-FACTS section 9 describes."""
    cfg = model.config.to_dict()
    cfg.pop("quantization_config", None)
    cfg.pop("_name_or_path", None)
    fresh = LlamaForCausalLM(LlamaConfig.from_dict(cfg))
    missing, unexpected = fresh.load_state_dict(model.state_dict(), strict=True)
    assert not missing and not unexpected, (missing, unexpected)
    fresh.eval()
    dirs = {}
    for dt, tdt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        d = os.path.join(work, "smollm2-hf-" + dt)
        shutil.rmtree(d, ignore_errors=True)
        fresh.to(tdt).save_pretrained(d)
        tok.save_pretrained(d)
        dirs[dt] = d
    return dirs


def commit_smol_small_files(dirs):
    """Copy the small files transformers wrote into tests/fixtures/smollm2-hf/."""
    base = os.path.join(FIXT, "smollm2-hf")
    written = {dt: sorted(f for f in os.listdir(d) if f != "model.safetensors") for dt, d in dirs.items()}
    expected = sorted(B.SMOL_SMALL + ["config.json"])
    for dt, files in written.items():
        if files != expected:
            raise SystemExit("refs: transformers wrote %s in %s; build_fixtures.SMOL_SMALL expects %s"
                             % (files, dirs[dt], expected))
    for f in B.SMOL_SMALL:
        a, b = (open(os.path.join(dirs[dt], f), "rb").read() for dt in ("f32", "bf16"))
        if a != b:
            raise SystemExit("refs: %s differs between the f32 and bf16 directories" % f)
        os.makedirs(base, exist_ok=True)
        shutil.copyfile(os.path.join(dirs["f32"], f), os.path.join(base, f))
    for dt in ("f32", "bf16"):
        os.makedirs(os.path.join(base, dt), exist_ok=True)
        shutil.copyfile(os.path.join(dirs[dt], "config.json"), os.path.join(base, dt, "config.json"))


def smollm2(cache, vers, sums):
    gdir = os.path.join(cache, "models")
    gname = B.GGUF_NAME
    tok = AutoTokenizer.from_pretrained(gdir, gguf_file=gname)
    model = AutoModelForCausalLM.from_pretrained(gdir, gguf_file=gname, dtype=torch.float32).eval()
    prompts = smol_prompts(tok)
    t = time.time()
    gguf_cases = smol_cases(model, prompts, top5=True)
    log("smollm2 gguf: %d prompts x %d steps in %.1f s" % (len(prompts), SMOL_STEPS, time.time() - t))
    source = {"gguf": "cache:models/" + gname, "gguf_sha256": F.sha256_file(os.path.join(gdir, gname))}
    write_json(os.path.join(REFS, "smollm2-gguf.json"), {
        "model": {"cache": "models/" + gname}, "vocab_size": model.config.vocab_size,
        "versions": vers, "source": source,
        "settings": settings(load="AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=float32)",
                             tokenizer="AutoTokenizer.from_pretrained(dir, gguf_file=...); chat prompts "
                                       "via apply_chat_template(add_generation_prompt=True)",
                             steps=SMOL_STEPS, top5_steps=SMOL_TOP5_STEPS),
        "cases": gguf_cases})

    # HF directories written by save_pretrained; the torch-free rebuild must match them.
    work = os.path.join(cache, "refwork")
    dirs = save_hf_dirs(model, tok, work)
    gguf_state = {k: v.clone() for k, v in model.state_dict().items()}
    del model
    commit_smol_small_files(dirs)
    built = B.build(cache, names=("smollm2-hf-f32", "smollm2-hf-bf16"), check=False)
    for dt in ("f32", "bf16"):
        name = "smollm2-hf-" + dt
        want = F.content_hash(os.path.join(dirs[dt], "model.safetensors"))
        entry = B.describe(built[name], name)
        if entry["model.safetensors"]["content_sha256"] != want:
            raise SystemExit("refs: torch-free %s (%s) differs from transformers' save_pretrained (%s)"
                             % (name, entry["model.safetensors"]["content_sha256"], want))
        sums[name] = entry
        log("%s: torch-free rebuild equals save_pretrained output (content %s)" % (name, want[:16]))

    results = {}
    for dt in ("f32", "bf16"):
        name = "smollm2-hf-" + dt
        m = AutoModelForCausalLM.from_pretrained(built[name], dtype=torch.float32).eval()
        if dt == "f32":
            st = m.state_dict()
            same = all(torch.equal(st[k], gguf_state[k]) for k in gguf_state if k in st)
            assert same, "f32 directory weights differ from the GGUF-loaded model"
        cases = smol_cases(m, prompts, top5=(dt == "f32"))
        vocab = m.config.vocab_size
        del m
        results[dt] = cases
        extra = {}
        if dt == "f32":
            agree = [a["ids"] == b["ids"] for a, b in zip(cases, gguf_cases)]
            extra["ids_equal_gguf"] = all(agree)
            if not all(agree):
                raise SystemExit("refs: f32 directory greedy ids differ from the GGUF's: %s" % agree)
        else:
            extra["ids_equal_f32"] = [sum(x == y for x, y in zip(a["ids"], b["ids"]))
                                      for a, b in zip(cases, results["f32"])]
        write_json(os.path.join(REFS, name + ".json"), dict(
            model={"cache": "fixtures/" + name}, vocab_size=vocab,
            versions=vers,
            source={"made_by": "save_pretrained of the GGUF-loaded model (fresh LlamaForCausalLM from its "
                               "config without quantization_config, load_state_dict)" +
                               (", .to(torch.bfloat16)" if dt == "bf16" else ""),
                    "content_sha256": sums[name]["model.safetensors"]["content_sha256"]},
            settings=settings(load="AutoModelForCausalLM.from_pretrained(dir, dtype=float32)",
                              steps=SMOL_STEPS), cases=cases, **extra))


# ---- tiny configs -------------------------------------------------------------------------------

def tiny_init(model, seed):
    """Weights with O(1) activations and well separated logits (the default 0.02 init would make
    every logit nearly equal and greedy ids meaningless). The residual branches (o_proj, down_proj)
    get gain 3 and tied embeddings std 0.3, otherwise the input embedding dominates the residual
    stream and a tied model predicts its own input token forever."""
    g = torch.Generator().manual_seed(seed)
    tied = model.config.tie_word_embeddings
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            r = torch.randn(p.shape, generator=g)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * r)
            elif "embed_tokens" in name:
                p.copy_(r * (0.3 if tied else 1.0))
            elif name == "lm_head.weight":
                p.copy_(r * (4.0 / math.sqrt(p.shape[1])))
            elif "o_proj" in name or "down_proj" in name:
                p.copy_(r * (3.0 / math.sqrt(p.shape[1])))
            else:
                p.copy_(r / math.sqrt(p.shape[1]))


def legacy_keys(path):
    """Rewrite a transformers 5 config.json with the transformers 4.x key layout."""
    with open(path) as f:
        c = json.load(f)
    rp = c.pop("rope_parameters")
    c["rope_theta"] = rp.pop("rope_theta")
    if rp.get("rope_type") != "default":
        c["rope_scaling"] = rp
    c["torch_dtype"] = c.pop("dtype")
    with open(path, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")


def tiny(vers):
    out = []
    for idx, (name, kw, dtype) in enumerate(TINY):
        torch.manual_seed(1000 + idx)
        cfg = LlamaConfig(max_position_embeddings=256, bos_token_id=1, eos_token_id=2, **kw)
        model = LlamaForCausalLM(cfg)
        tiny_init(model, 2000 + idx)
        d = os.path.join(FIXT, name)
        shutil.rmtree(d, ignore_errors=True)
        model.to(getattr(torch, dtype)).save_pretrained(d)
        if "legacy" in name:
            legacy_keys(os.path.join(d, "config.json"))
        del model
        m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
        rng = np.random.Generator(np.random.PCG64(3000 + idx))
        prompt = [int(x) for x in rng.integers(3, kw["vocab_size"], TINY_PROMPT_LEN)]
        case, rows = run_greedy(m, prompt, TINY_STEPS)
        m64 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64).eval()
        case["f64_rel_err"] = f64_rel_err(m64, case, rows)
        del m64
        binname = name + ".logits.bin"
        np.stack(rows).astype("<f4").tofile(os.path.join(REFS, binname))
        write_json(os.path.join(REFS, name + ".json"), dict(
            model={"repo": rel(d)}, vocab_size=kw["vocab_size"], versions=vers,
            source={"weights": "random (torch.Generator seed %d), saved by save_pretrained as %s%s"
                               % (2000 + idx, dtype,
                                  "; config.json then rewritten to transformers 4.x keys" if "legacy" in name else "")},
            settings=settings(load="AutoModelForCausalLM.from_pretrained(dir, dtype=float32)", steps=TINY_STEPS),
            logits={"file": binname, "rows": len(rows), "dtype": "float32 little-endian",
                    "row_i": "logits the i-th generated id was chosen from (row 0: prefill)"},
            cases=[dict(name="random-prompt", **case)]))
        sizes = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        log("%s: %d bytes of fixture, ids %s..." % (name, sizes, case["ids"][:8]))
        out.append(name)
    return out


# ---- the 1B-shaped random checkpoint --------------------------------------------------------------

def llama_1b(cache, vers, sums):
    cfg_dir = os.path.join(HERE, "llama-1b-random")
    os.makedirs(cfg_dir, exist_ok=True)
    LlamaConfig(**LLAMA_1B_CONFIG).save_pretrained(cfg_dir)
    t = time.time()
    d = B.build(cache, names=("llama-1b-random",), check=False)["llama-1b-random"]
    sums["llama-1b-random"] = B.describe(d, "llama-1b-random")
    log("llama-1b-random built torch-free in %.1f s" % (time.time() - t))

    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    rng = np.random.Generator(np.random.PCG64(4242))
    prompt = [128000] + [int(x) for x in rng.integers(0, 128000, LLAMA_1B_PROMPT_LEN - 1)]
    t = time.time()
    case, rows = run_greedy(m, prompt, LLAMA_1B_STEPS, topk=LLAMA_1B_TOPK)
    log("llama-1b-random: %d steps in %.1f s, ids %s" % (LLAMA_1B_STEPS, time.time() - t, case["ids"]))
    # f32 rounding noise of this model: the same sequence in float64 (teacher-forced, one forward).
    m64 = m.to(torch.float64)
    del m
    case["f64_rel_err"] = f64_rel_err(m64, case, rows)
    del m64
    log("llama-1b-random: f32 vs f64 rel err per step %s" % ["%.2e" % e for e in case["f64_rel_err"]])
    binname = "llama-1b-random.logits.bin"
    np.stack(rows[:LLAMA_1B_FULL_ROWS]).astype("<f4").tofile(os.path.join(REFS, binname))
    write_json(os.path.join(REFS, "llama-1b-random.json"), dict(
        model={"cache": "fixtures/llama-1b-random"}, vocab_size=LLAMA_1B_CONFIG["vocab_size"], versions=vers,
        source={"weights": "fixturelib.write_llama_1b (deterministic PCG64 per tensor, bf16)",
                "content_sha256": sums["llama-1b-random"]["model.safetensors"]["content_sha256"]},
        settings=settings(load="AutoModelForCausalLM.from_pretrained(dir, dtype=float32)",
                          steps=LLAMA_1B_STEPS, topk=LLAMA_1B_TOPK,
                          f64_rel_err="max|f32 - f64| / max|f64| per step, teacher-forced"),
        logits={"file": binname, "rows": LLAMA_1B_FULL_ROWS, "dtype": "float32 little-endian",
                "row_i": "logits the i-th generated id was chosen from (row 0: prefill)"},
        cases=[dict(name="random-prompt", **case)]))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_refs.py CACHE")
    cache = sys.argv[1]
    torch.set_num_threads(THREADS)
    torch.use_deterministic_algorithms(True)
    os.makedirs(REFS, exist_ok=True)
    vers = versions()
    sums = B.load_checksums()
    t0 = time.time()
    only = os.environ.get("REFS_ONLY", "smollm2,tiny,llama1b").split(",")
    if "tiny" in only:
        tiny(vers)
    if "smollm2" in only:
        smollm2(cache, vers, sums)
    if "llama1b" in only:
        llama_1b(cache, vers, sums)
    write_json(B.CHECKSUMS, sums)
    for name in sums:  # stamp the fixtures built above against the checksums just recorded
        d = os.path.join(cache, "fixtures", name)
        if os.path.exists(os.path.join(d, "model.safetensors")):
            B.verify(d, name, sums[name])
    log("done in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
