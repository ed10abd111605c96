#!/usr/bin/env python3
"""make bench: llmgen against llama.cpp on the same files, same machine, same run.

Usage: python3 tests/bench/bench.py          (run by `make bench` from the repository root; stdlib only)
       python3 tests/bench/bench.py --table .cache/bench/results.json   (that run's README table again)

Environment:
  BENCH_QUICK=1        3 rounds, models llama1b-q4_0 and smollm2 only (for quick iterations)
  BENCH_MODELS=a,b     models to run (keys below; default: all whose files exist)
  BENCH_REPS=N         measured rounds per model and thread count (default 5; at least 5 for the record)
  BENCH_THREADS=2,1    thread counts, in the order run (default 2,1: the headline figures first)
  BENCH_NO_DROP=1      do not drop the page cache before the time-to-first-token runs
  BENCH_NO_TOKENIZER=1 skip the tokenizer benchmark hook (tests/bench/bench_tokenizer.py)
  BENCH_PP, BENCH_TG   prompt sizes / decode steps (default 128,512 / 128): to test the harness only
  BENCH_NO_EXACT=1     skip the exact-mode (--exact) llmgen figures

What one run does, per model and thread count:
  - a warm-up round (short prompt, few steps, both engines; results discarded);
  - N rounds, each running the engines one after the other (A B A B ...):
      llmgen:    build/bench/llmgen_bench (its C API): load, prefill 128 and 512, decode 128
      llmgen --exact: the same in exact mode (f32 activations), for models whose default (fast) mode
                 differs from it (quantized weights); reported beside the default, never in the ratios
      llama.cpp: llama-bench -p 16,128,512 -n 128 -r 1 --no-warmup -o json (pp16 is its warm-up,
                 the same role as llmgen_bench's 16-token warm-up prefill; discarded)
      load time: llama.cpp's through build/bench/peer_run (model load + context, like llmgen_bench)
      time to first token: the wall time of a cold process, `./llmgen -m F --prompt-ids <16 ids> -n 1
                 --ids` and `peer_run` with the same ids, the page cache dropped before each when
                 this user may (root), so mmap and page-in from disk are included;
      peak RSS:  ru_maxrss of the benchmark processes (wait4), same work in both engines;
  - medians over the N rounds, and the ratio llmgen / llama.cpp of every median.
Bounds, measured in the same run by build/bench/membw and build/bench/int8peak (at the start and at
the end; the best pass counts):
  decode floor   = read bandwidth / weight bytes streamed per token (every 2-D weight once, the
                   lm_head included; the embedding lookup reads one row and is not counted).
                   The bandwidth of a shared host moves (30 to 56 GB/s at 2 threads in one hour
                   here), so the probe also runs before every round, and the
                   share against that round's bandwidth (median over rounds) is printed beside
                   the strict one; the targets use the strict one (best pass)
  prefill ceiling = int8 dot peak / ops per prompt token (2 per weight of every linear layer, the
                   attention score and value products for a causal 512-token prompt, the lm_head
                   once per prompt)
and llmgen's share of each. One table goes to stdout, then the same medians as the README's
Performance table (markdown), everything (samples included) to .cache/bench/results.json.
Exit status 1 when an llmgen run failed.
"""
import json
import math
import os
import platform
import random
import statistics
import struct
import subprocess
import sys
import threading
import time

CACHE = ".cache"
OUT_DIR = os.path.join(CACHE, "bench")
BENCH_BIN = os.path.join("build", "bench")
PEER_BIN = os.path.join(CACHE, "peer", "build", "bin")
PEER_INFO = os.path.join(CACHE, "peer", "BUILD-INFO")
# Prompt sizes and decode steps; BENCH_PP / BENCH_TG change them only to test the harness itself.
PP_SIZES = tuple(int(x) for x in os.environ.get("BENCH_PP", "128,512").split(","))
TG = int(os.environ.get("BENCH_TG", "128"))
TTFT_PROMPT = 16
TIMEOUT = 3600  # seconds for one benchmark process; a hung engine must not hang `make bench`

# key: (path, engines, description). Engines: llama.cpp runs only what it can read.
MODELS = [
    ("smollm2-q4_1", os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"), True,
     "SmolLM2-135M-Instruct Q4_1 (default model)"),
    ("llama1b-q4_0", os.path.join(OUT_DIR, "llama-1b-random.Q4_0.gguf"), True, "Llama-3.2-1B config Q4_0"),
    ("llama1b-q4_1", os.path.join(OUT_DIR, "llama-1b-random.Q4_1.gguf"), True, "Llama-3.2-1B config Q4_1"),
    ("llama1b-q8_0", os.path.join(OUT_DIR, "llama-1b-random.Q8_0.gguf"), True, "Llama-3.2-1B config Q8_0"),
    ("llama1b-f16", os.path.join(OUT_DIR, "llama-1b-random.F16.gguf"), True, "Llama-3.2-1B config F16"),
    # llama-quantize outputs of `make quant-models` (K-quants with their Q5_0 / Q8_0 fallbacks)
    ("smollm2-q4_k_m", os.path.join(CACHE, "quant", "SmolLM2-135M-Instruct.Q4_K_M.gguf"), True,
     "SmolLM2-135M-Instruct Q4_K_M (requantized)"),
    ("llama1b-q4_k_m", os.path.join(CACHE, "quant", "llama-1b-random.Q4_K_M.gguf"), True,
     "Llama-3.2-1B config Q4_K_M"),
    ("llama1b-q6_k", os.path.join(CACHE, "quant", "llama-1b-random.Q6_K.gguf"), True, "Llama-3.2-1B config Q6_K"),
    ("llama1b-bf16-st", os.path.join(CACHE, "fixtures", "llama-1b-random"), False,
     "Llama-3.2-1B config bf16 safetensors"),
    # MLX affine 4-bit and 8-bit, group 64: written by `llmgen quantize` (see mlx_hook below).
    ("llama1b-mlx4-g64", os.path.join(OUT_DIR, "llama-1b-random-mlx4-g64"), False,
     "Llama-3.2-1B config MLX 4-bit g64"),
    ("llama1b-mlx8-g64", os.path.join(OUT_DIR, "llama-1b-random-mlx8-g64"), False,
     "Llama-3.2-1B config MLX 8-bit g64"),
    # Other families at their real sizes (random weights, exact published configs): convert_hf_to_gguf.py
    # and llama-quantize of `make family-bench-models` (tests/bench/make_family_gguf.py)
    ("qwen3-0.6b-q4_0", os.path.join(OUT_DIR, "qwen3-0.6b-random.Q4_0.gguf"), True, "Qwen3-0.6B config Q4_0"),
    ("qwen3-0.6b-q8_0", os.path.join(OUT_DIR, "qwen3-0.6b-random.Q8_0.gguf"), True, "Qwen3-0.6B config Q8_0"),
    ("qwen3-0.6b-q4_k_m", os.path.join(OUT_DIR, "qwen3-0.6b-random.Q4_K_M.gguf"), True,
     "Qwen3-0.6B config Q4_K_M"),
    ("gemma3-1b-q4_0", os.path.join(OUT_DIR, "gemma3-1b-random.Q4_0.gguf"), True, "Gemma-3-1B config Q4_0"),
    ("gemma3-1b-q8_0", os.path.join(OUT_DIR, "gemma3-1b-random.Q8_0.gguf"), True, "Gemma-3-1B config Q8_0"),
    ("gemma3-1b-q4_k_m", os.path.join(OUT_DIR, "gemma3-1b-random.Q4_K_M.gguf"), True,
     "Gemma-3-1B config Q4_K_M"),
]
# Issue 17's targets for the family files (2 threads, default mode): decode and prefill vs llama.cpp.
FAMILY_TARGETS = {k: (1.1, 1.5) for k in ("qwen3-0.6b-q4_0", "qwen3-0.6b-q8_0", "qwen3-0.6b-q4_k_m",
                                          "gemma3-1b-q4_0", "gemma3-1b-q8_0", "gemma3-1b-q4_k_m")}
QUICK_MODELS = ("llama1b-q4_0", "smollm2-q4_1")


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


# ---- running processes --------------------------------------------------------------------------

def run(cmd, timeout=TIMEOUT):
    """Run cmd to completion; return (exit status, stdout, last stderr lines, wall seconds, peak RSS KiB).

    The child is reaped with a blocking wait4, so the peak RSS is its own (ru_maxrss) and the wall
    time ends when it exits; a timer kills it after `timeout` seconds."""
    out_path, err_path = os.path.join(OUT_DIR, ".stdout"), os.path.join(OUT_DIR, ".stderr")
    with open(out_path, "w+b") as out, open(err_path, "w+b") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        timer.cancel()
        p.returncode = rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace")
        tail = " | ".join(err.read().decode(errors="replace").strip().splitlines()[-3:])
    if rc == -9 and wall >= timeout:
        tail = "timed out after %d s" % timeout
    return rc, text, tail, wall, ru.ru_maxrss


def drop_caches_allowed():
    if os.environ.get("BENCH_NO_DROP"):
        return False
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")
        return True
    except OSError:
        return False


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("1")


# ---- model files: bytes per token and ops per token ----------------------------------------------

# ggml type id -> (block size, bytes per block)
# ggml type id: (values per block, bytes per block), as src/quant/quant.c's table (Q8_0 was 36 here before
# 2026-11-24: the SmolLM2 floors of earlier runs counted its Q8_0 embedding 6% too large).
GGML_TYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
              10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 20: (32, 18),
              23: (256, 136), 30: (1, 2)}
GGUF_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gguf_read(path):
    """(metadata {key: value for scalars and strings}, [(name, shape in HF order, bytes)])."""
    with open(path, "rb") as f:
        def rd(fmt):
            return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))

        def rd_str():
            (n,) = rd("Q")
            return f.read(n).decode(errors="replace")

        def rd_val(t):
            if t == 8:
                return rd_str()
            if t == 9:
                et, n = rd("IQ")
                if et in GGUF_SCALAR:
                    f.seek(GGUF_SCALAR[et] * n, 1)
                else:
                    for _ in range(n):
                        rd_val(et)
                return None
            fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}[t]
            return rd(fmt)[0]

        magic, _version, n_t, n_kv = rd("IIQQ")
        if magic != 0x46554747:
            raise ValueError("%s: not a GGUF file" % path)
        meta = {}
        for _ in range(n_kv):
            k = rd_str()
            (t,) = rd("I")
            meta[k] = rd_val(t)
        tensors = []
        for _ in range(n_t):
            name = rd_str()
            (nd,) = rd("I")
            ne = rd("%dQ" % nd)
            t, _off = rd("IQ")
            bs, ts = GGML_TYPES.get(t, (1, 0))
            count = math.prod(ne)
            tensors.append((name, tuple(reversed(ne)), count // bs * ts))
    return meta, tensors


def st_tensors(path):
    """[(name, shape, bytes)] of a safetensors file or directory (sharded or not)."""
    files = [path]
    if os.path.isdir(path):
        idx = os.path.join(path, "model.safetensors.index.json")
        if os.path.exists(idx):
            with open(idx) as f:
                files = sorted({os.path.join(path, v) for v in json.load(f)["weight_map"].values()})
        else:
            files = [os.path.join(path, "model.safetensors")]
    out = []
    for fp in files:
        with open(fp, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        for name, info in header.items():
            if name != "__metadata__":
                b, e = info["data_offsets"]
                out.append((name, tuple(info["shape"]), e - b))
    return out


def model_costs(path):
    """Weight bytes streamed per decoded token, ops per prompt token (512-token prefill), file bytes.

    Bytes come from the file's tensors: everything except the embedding table when the model has its
    own lm_head (a lookup reads one row), the embedding once as the lm_head when tied; of an expert
    layer's stacks, the k of E experts a token chose (k / E of their bytes; a decode step of one token). Quantized
    matrices count with their scales (MLX: weight + scales + biases). Ops come from the shapes."""
    if os.path.isdir(path) or path.endswith(".safetensors"):
        tensors = st_tensors(path)
        cfg_path = os.path.join(path if os.path.isdir(path) else os.path.dirname(path), "config.json")
        with open(cfg_path) as f:
            cfg = json.load(f)
        hidden, layers, heads = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
        kv, inter, vocab = cfg.get("num_key_value_heads", heads), cfg["intermediate_size"], cfg["vocab_size"]
        head_dim = cfg.get("head_dim") or hidden // heads
        emb, head = "model.embed_tokens.", "lm_head."
        experts = used = 0
    else:
        meta, tensors = gguf_read(path)
        a = meta.get("general.architecture", "llama") + "."  # the key prefix: llama. qwen3. gemma3. ...
        hidden, layers = meta[a + "embedding_length"], meta[a + "block_count"]
        heads = meta[a + "attention.head_count"]
        kv = meta.get(a + "attention.head_count_kv", heads)
        inter = meta[a + "feed_forward_length"]
        head_dim = meta.get(a + "attention.key_length") or hidden // heads
        vocab = meta.get(a + "vocab_size") or next(s[0] for n, s, _ in tensors if n == "token_embd.weight")
        emb, head = "token_embd.", "output."
        experts, used = meta.get(a + "expert_count", 0), meta.get(a + "expert_used_count", 0)
        inter = meta.get(a + "expert_feed_forward_length", inter) if experts else inter
    tied = not any(n.startswith(head) for n, _, _ in tensors)
    emb_bytes = sum(nb for n, _, nb in tensors if n.startswith(emb))
    total = sum(nb for _, _, nb in tensors)
    per_token = total if tied else total - emb_bytes
    # an expert layer: a token reads the k experts it chose of each stack (ffn_*_exps), not all of them
    exp_bytes = sum(nb for n, _, nb in tensors if "_exps." in n)
    if experts and used:
        per_token -= exp_bytes * (1 - used / experts)
    ffn = 3 * hidden * inter * (used if experts else 1)
    lin = layers * (hidden * heads * head_dim + 2 * hidden * kv * head_dim + heads * head_dim * hidden + ffn)
    n = max(PP_SIZES)
    attn_ops = 2 * 2 * layers * heads * head_dim * (n + 1) / 2  # QK^T and PV, causal mean per token
    ops = 2 * lin + attn_ops + 2 * vocab * hidden / n          # lm_head for the last position only
    kv_bytes = 2 * layers * kv * head_dim * 2  # K and V per position, bf16 in the default (fast) mode (forward.h)
    return {"file_bytes": total, "bytes_per_token": per_token, "linear_params": lin, "kv_bytes_per_pos": kv_bytes,
            "experts": experts, "experts_used": used, "expert_bytes": exp_bytes, "hidden": hidden,
            "lm_head_params": vocab * hidden, "tied": tied, "ops_per_prompt_token": ops}


# ---- machine probes ------------------------------------------------------------------------------

def probe(name, *args):
    rc, out, err, _, _ = run([os.path.join(BENCH_BIN, name)] + list(args))
    if rc:
        raise SystemExit("bench: %s failed: %s" % (name, err))
    return json.loads(out)


def machine_info():
    info = {"machine": platform.machine(), "kernel": platform.release()}
    try:
        with open("/proc/cpuinfo") as f:
            txt = f.read()
        for line in txt.splitlines():
            if line.startswith("model name") and "cpu" not in info:
                info["cpu"] = line.split(":", 1)[1].strip()
            if line.startswith("flags") and "flags" not in info:
                flags = line.split(":", 1)[1].split()
                info["flags"] = [x for x in flags if x.startswith(("avx", "amx", "fma", "f16c", "gfni"))]
        info["cpus"] = os.cpu_count()
    except OSError:
        pass
    return info


def versions():
    """llmgen's commit and the llama.cpp peer's BUILD-INFO (when `make peer` has built it)."""
    v = {"llmgen_commit": subprocess.run(["git", "describe", "--always", "--dirty"],
                                         capture_output=True, text=True).stdout.strip()}
    if os.path.exists(PEER_INFO):
        with open(PEER_INFO) as f:
            v["peer_build_info"] = f.read()
    return v


# ---- the engines ---------------------------------------------------------------------------------

def ids_csv(n, vocab, seed):
    r = random.Random(seed)
    return ",".join(str(r.randrange(vocab)) for _ in range(n))


def llmgen_sample(path, t, pp=PP_SIZES, tg=TG, warm=16, exact=False):
    cmd = [os.path.join(BENCH_BIN, "llmgen_bench"), path, "-t", str(t), "-p", ",".join(map(str, pp)),
           "-n", str(tg), "-w", str(warm)] + (["-x"] if exact else [])
    rc, out, err, wall, rss = run(cmd)
    if rc:
        return {"error": "llmgen_bench exit %d: %s" % (rc, err)}
    d = json.loads(out)
    res = {"load_s": d["load_s"], "maxrss_mb": rss / 1024.0, "kernels": d["kernels"],
           "weight_types": d["weight_types"]}
    for k, v in d["pp"].items():
        res["pp%s" % k] = v
    for k, v in d["tg"].items():
        res["tg%s" % k] = v
    return res


def llama_sample(path, t, pp=PP_SIZES, tg=TG):
    cmd = [os.path.join(PEER_BIN, "llama-bench"), "-m", path, "-t", str(t), "-p",
           ",".join(map(str, (16,) + tuple(pp))), "-n", str(tg), "-r", "1", "--no-warmup", "-o", "json"]
    rc, out, err, wall, rss = run(cmd)
    if rc:
        return {"error": "llama-bench exit %d: %s" % (rc, err)}
    res = {"maxrss_mb": rss / 1024.0}
    for rec in json.loads(out):
        if rec["n_prompt"] and rec["n_prompt"] in pp and not rec["n_gen"]:
            res["pp%d" % rec["n_prompt"]] = rec["avg_ts"]
        elif rec["n_gen"] and not rec["n_prompt"]:
            res["tg%d" % rec["n_gen"]] = rec["avg_ts"]
        res.setdefault("params", {k: rec.get(k) for k in ("n_batch", "n_ubatch", "type_k", "type_v",
                                                          "flash_attn", "use_mmap", "cpu_info",
                                                          "build_commit", "build_number", "backends")})
    return res


def llmgen_ttft(path, t, ids, drop):
    if drop:
        drop_caches()
    rc, out, err, wall, rss = run(["./llmgen", "-m", path, "--prompt-ids", ids, "-n", "1", "--ids",
                                       "--ignore-eos", "-t", str(t)])
    if rc:
        return {"error": "llmgen exit %d: %s" % (rc, err)}
    return {"ttft_s": wall, "ttft_maxrss_mb": rss / 1024.0, "first_id": out.strip()}


def peer_ttft(path, t, ids, drop):
    if drop:
        drop_caches()
    rc, out, err, wall, rss = run([os.path.join(BENCH_BIN, "peer_run"), "-m", path, "--prompt-ids", ids,
                                       "-n", "1", "-t", str(t)])
    if rc:
        return {"error": "peer_run exit %d: %s" % (rc, err)}
    d = json.loads(out)
    return {"ttft_s": wall, "ttft_maxrss_mb": rss / 1024.0, "first_id": ",".join(map(str, d["ids"]))}


def peer_load(path, t, ids):
    rc, out, err, wall, rss = run([os.path.join(BENCH_BIN, "peer_run"), "-m", path, "--prompt-ids", ids,
                                       "-n", "1", "-t", str(t)])
    if rc:
        return {"error": "peer_run exit %d: %s" % (rc, err)}
    return {"load_s": json.loads(out)["load_s"]}


# ---- hooks for files other people's tools write --------------------------------------------------

def mlx_hook(key_path, bits=4):
    """MLX affine 4-bit (or 8-bit) g64 from the bf16 fixture, written by `llmgen quantize`.
    Returns a note when it cannot be made; the model is then skipped."""
    if os.path.exists(os.path.join(key_path, "config.json")):
        return None
    src = os.path.join(CACHE, "fixtures", "llama-1b-random")
    if not os.path.isdir(src):
        return "bf16 fixture missing"
    rc, out, err, _, _ = run(["./llmgen", "quantize", src, key_path, "--bits", str(bits), "--group-size", "64"])
    if rc:
        return "`llmgen quantize` not available yet (%s)" % err[:120]
    return None


def tokenizer_hook(results):
    """---- TOKENIZER BENCHMARK HOOK ----
    When tests/bench/bench_tokenizer.py exists (the tokenizer's own benchmark: encode MB/s against HF
    tokenizers, load time of the largest vocabulary; owned by the tokenizer), run it here with
        PY tests/bench/bench_tokenizer.py --json .cache/bench/results-tokenizer.json
    where PY is $BENCH_TOKENIZER_PYTHON, else .cache/venv-bench/bin/python, else this interpreter.
    Its stdout (its own table) is passed through; the JSON it writes is merged into results.json
    under "tokenizer". It needs build/tok_driver, which `make bench` builds first."""
    script = os.path.join("tests", "bench", "bench_tokenizer.py")
    if not os.path.exists(script):
        results["tokenizer"] = {"skipped": "tests/bench/bench_tokenizer.py not present"}
        return
    py = os.environ.get("BENCH_TOKENIZER_PYTHON")
    if not py:
        venv = os.path.join(CACHE, "venv-bench", "bin", "python")
        py = venv if os.path.exists(venv) else sys.executable
    out_json = os.path.join(OUT_DIR, "results-tokenizer.json")
    if os.path.exists(out_json):
        os.unlink(out_json)
    log("tokenizer benchmark: %s %s" % (py, script))
    sys.stdout.flush()
    rc = subprocess.call([py, script, "--json", out_json])
    entry = {"exit_status": rc}
    if os.path.exists(out_json):
        with open(out_json) as f:
            entry["results"] = json.load(f)
    results["tokenizer"] = entry


# ---- statistics and the table --------------------------------------------------------------------

PP_KEY, TG_KEY = "pp%d" % max(PP_SIZES), "tg%d" % TG  # the figures the bounds are about
METRICS = [("pp%d" % n, "prefill %d" % n, "t/s", True) for n in PP_SIZES] + [  # key, label, unit, higher better
    (TG_KEY, "decode %d" % TG, "t/s", True),
    ("ttft_s", "TTFT 16 (cold)", "s", False),
    ("load_s", "load", "s", False),
    ("maxrss_mb", "peak RSS", "MB", False),
]


def medians(samples):
    """{metric: {"median": m, "samples": [...]}} over rounds (errors skipped)."""
    out = {}
    keys = {k for s in samples for k, v in s.items() if isinstance(v, (int, float))}
    for k in sorted(keys):
        vals = [s[k] for s in samples if isinstance(s.get(k), (int, float))]
        out[k] = {"median": statistics.median(vals), "samples": vals}
    return out


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "s":
        return "%.3f" % v
    if unit == "MB":
        return "%.0f" % v
    return "%.1f" % v if v < 1000 else "%.0f" % v


def print_table(results):
    rows = []
    hdr = ("model", "thr", "metric", "llmgen", "llama.cpp", "ratio", "llmgen --exact")
    for m in results["models"]:
        for t, r in sorted(m["threads"].items(), key=lambda kv: int(kv[0])):
            for key, label, unit, _ in METRICS:
                a = r["llmgen"].get(key, {}).get("median")
                b = r["llama.cpp"].get(key, {}).get("median")
                ratio = a / b if a and b else None
                x = r.get("llmgen_exact", {}).get(key, {}).get("median") if key != "ttft_s" else None
                rows.append((m["key"], t, "%s (%s)" % (label, unit), fmt(a, unit), fmt(b, unit),
                             "%.2f" % ratio if ratio else "-", fmt(x, unit)))
            b = r["bounds"]
            pct = lambda k: "%.0f%%" % (100 * b[k]) if b.get(k) else "-"  # noqa: E731
            rows.append((m["key"], t, "share of decode floor (%.1f t/s)" % b["decode_floor_tps"],
                         pct("llmgen_decode_share"), pct("llama_decode_share"), "", pct("exact_decode_share")))
            if b.get("bandwidth_rounds_gbs"):
                rows.append((m["key"], t, "  same, each round's bandwidth (median %.1f GB/s)"
                             % statistics.median(b["bandwidth_rounds_gbs"]), pct("llmgen_decode_share_rounds"),
                             pct("llama_decode_share_rounds"), "", pct("exact_decode_share_rounds")))
            rows.append((m["key"], t, "share of prefill ceiling (%.1f t/s)" % b["prefill_ceiling_tps"],
                         pct("llmgen_prefill_share"), pct("llama_prefill_share"), "", pct("exact_prefill_share")))
    widths = [max(len(str(x[i])) for x in rows + [hdr]) for i in range(len(hdr))]
    line = "  ".join("%-*s" % (widths[i], hdr[i]) for i in range(len(hdr)))
    print(line)
    print("-" * len(line))
    prev = None
    for r in rows:
        if prev and (r[0], r[1]) != prev:
            print()
        prev = (r[0], r[1])
        print("  ".join(("%-*s" if i < 3 else "%*s") % (widths[i], r[i]) for i in range(len(hdr))))
    print()
    p = results["probes"]
    print("read bandwidth (%s, 1 GiB, best pass): %s GB/s (1 thread), %s GB/s (2 threads)"
          % (p["membw"]["isa"], p["bandwidth_gbs"]["1"], p["bandwidth_gbs"]["2"]))
    print("int8 dot peak (%s, registers only, 2 ops per byte pair): %s GOPS (1 thread), %s GOPS (2 threads)"
          % (p["int8peak"]["isa"], p["int8_gops"]["1"], p["int8_gops"]["2"]))
    if "block32_gops" in p["int8peak"]:
        b32 = p["int8peak"]["block32_gops"]
        print("  with the f32 step every 32 values (cvt, mul, fma per 8 vpdpbusd, the activation scale"
              " broadcast from memory), no other memory traffic: %s / %s GOPS"
              " = %.0f%% of the peak: the ceiling for formats with a scale per 32 values"
              % (b32["1"], b32["2"], 100.0 * b32["2"] / p["int8_gops"]["2"]))
    for m in results["models"]:
        c = m["costs"]
        print("%-18s %8.1f MB streamed per decoded token, %.2f G ops per prompt token (%d-token prefill), "
              "file %.1f MB" % (m["key"], c["bytes_per_token"] / 1e6, c["ops_per_prompt_token"] / 1e9,
                                max(PP_SIZES), c["file_bytes"] / 1e6))
    loads = [x for m in results["models"] for r in m["threads"].values()
             for x in r.get("loadavg_before_rounds", [])]
    if loads:
        print("load average before the rounds: median %.1f, max %.1f on %s CPUs%s"
              % (statistics.median(loads), max(loads), os.cpu_count(),
                 " (the benchmark's own threads count; above the thread count, other work shared the cores)"))
    print("ratios are llmgen / llama.cpp (> 1 is better for t/s, < 1 is better for s and MB); "
          "TTFT page cache dropped: %s" % ("yes" if results["settings"]["ttft_page_cache_dropped"] else "no"))


def markdown_table(results):
    """The README's Performance table: one row per model and thread count, llmgen / llama.cpp = ratio."""
    def num(v):
        return "%.0f" % v if v >= 100 else "%.1f" % v if v >= 10 else "%.2f" % v

    def cell(a, b, unit=""):
        if a is None:
            return "-"
        if b is None:
            return num(a) + unit
        return "%s / %s%s = %.2f" % (num(a), num(b), unit, a / b)

    def pct(v):
        return "%.0f%%" % (100 * v) if v else "-"

    lines = ["| model | thr | prefill %d t/s | decode %d t/s | decode share of floor, strict / per round "
             "| TTFT %d, cold | peak RSS MB | `--exact` pp%d / decode t/s |" % (max(PP_SIZES), TG, TTFT_PROMPT,
                                                                            max(PP_SIZES)),
             "|---|---|---|---|---|---|---|---|"]
    for m in results["models"]:
        for t, r in sorted(m["threads"].items(), key=lambda kv: -int(kv[0])):
            def med(eng, k):
                return r.get(eng, {}).get(k, {}).get("median")
            b = r["bounds"]
            x_pp, x_tg = med("llmgen_exact", PP_KEY), med("llmgen_exact", TG_KEY)
            lines.append("| %s | %s | %s | %s | %s / %s | %s | %s | %s |" % (
                m["description"], t, cell(med("llmgen", PP_KEY), med("llama.cpp", PP_KEY)),
                cell(med("llmgen", TG_KEY), med("llama.cpp", TG_KEY)),
                pct(b.get("llmgen_decode_share")), pct(b.get("llmgen_decode_share_rounds")),
                cell(med("llmgen", "ttft_s"), med("llama.cpp", "ttft_s"), " s"),
                cell(med("llmgen", "maxrss_mb"), med("llama.cpp", "maxrss_mb")),
                "%s / %s" % (num(x_pp), num(x_tg)) if x_pp and x_tg else "-"))
    return "\n".join(lines)


# ---- the issue targets, checked on this run's medians ---------------------------------------------

def targets(results):
    """[(what, measured, target, ok)] for every speed target that this run's models can check.

    At 2 threads, default mode. RSS: file + KV cache (bf16, llmgen_bench context) + 10%."""
    by = {m["key"]: m for m in results["models"]}
    ctx = max(max(PP_SIZES), TG)

    def get(key, t, eng, metric):
        r = by.get(key, {}).get("threads", {}).get(str(t))
        return r and r[eng].get(metric, {}).get("median")

    def bound(key, t, k):
        r = by.get(key, {}).get("threads", {}).get(str(t))
        return r and r["bounds"].get(k)

    out = []

    def check(what, val, op, goal, fmt_="%.2f"):
        if val is None:
            return
        ok = val >= goal if op == ">=" else val <= goal
        out.append({"what": what, "measured": fmt_ % val, "target": "%s %s" % (op, fmt_ % goal), "ok": ok})

    def ratio(key, metric, t=2):
        a, b = get(key, t, "llmgen", metric), get(key, t, "llama.cpp", metric)
        return a / b if a and b else None

    for key in ("llama1b-q4_0", "smollm2-q4_1"):
        small = key == "smollm2-q4_1"
        check("%s decode / llama.cpp" % key, ratio(key, TG_KEY), ">=", 2.5 if small else 1.25)
        if not small:  # the floor target is the 1B model's; the small model is overhead-bound
            check("%s decode share of floor" % key, bound(key, 2, "llmgen_decode_share"), ">=", 0.85)
        check("%s prefill %d / llama.cpp" % (key, max(PP_SIZES)), ratio(key, PP_KEY), ">=", 3.5 if small else 1.3)
        check("%s prefill share of int8 peak" % key, bound(key, 2, "llmgen_prefill_share"), ">=", 0.85)
        check("%s TTFT / llama.cpp" % key, ratio(key, "ttft_s"), "<=", 1.0)
    a1, a2 = get("smollm2-q4_1", 1, "llmgen", TG_KEY), get("smollm2-q4_1", 2, "llmgen", TG_KEY)
    if a1 and a2:
        check("smollm2-q4_1 decode 2 threads / 1 thread", a2 / a1, ">=", 1.6)
    # K-quant files (issue targets): decode and prefill against llama.cpp, decode against the floor
    for key, dec, floor, pre in (("llama1b-q4_k_m", 1.15, 0.88, 1.8), ("llama1b-q6_k", None, 0.88, 1.3),
                                 ("smollm2-q4_k_m", 1.6, None, 3.0)):
        if dec:
            check("%s decode / llama.cpp" % key, ratio(key, TG_KEY), ">=", dec)
        if floor:
            check("%s decode share of floor" % key, bound(key, 2, "llmgen_decode_share"), ">=", floor)
        check("%s prefill %d / llama.cpp" % (key, max(PP_SIZES)), ratio(key, PP_KEY), ">=", pre)
    for key, (dec, pre) in FAMILY_TARGETS.items():
        check("%s decode / llama.cpp" % key, ratio(key, TG_KEY), ">=", dec)
        check("%s prefill %d / llama.cpp" % (key, max(PP_SIZES)), ratio(key, PP_KEY), ">=", pre)
    for key in ("llama1b-q4_0", "llama1b-mlx4-g64", "llama1b-mlx8-g64", "llama1b-q4_k_m", "llama1b-q6_k",
                "smollm2-q4_k_m"):
        rss, m = get(key, 2, "llmgen", "maxrss_mb"), by.get(key)
        if rss and m:
            c = m["costs"]
            check("%s peak RSS (MB)" % key, rss, "<=", 1.1 * (c["file_bytes"] + c["kv_bytes_per_pos"] * ctx) / 2**20,
                  "%.0f")
    bf = get("llama1b-bf16-st", 2, "llmgen", TG_KEY)
    for key, goal in (("llama1b-mlx4-g64", 3.0), ("llama1b-mlx8-g64", None)):
        v = get(key, 2, "llmgen", TG_KEY)
        if v and bf:
            if goal:
                check("%s decode / bf16 decode (llmgen)" % key, v / bf, ">=", goal)
            else:
                out.append({"what": "%s decode / bf16 decode (llmgen)" % key, "measured": "%.2f" % (v / bf),
                            "target": "(reported)", "ok": True})
        if key.endswith("mlx4-g64"):
            check("%s decode share of floor" % key, bound(key, 2, "llmgen_decode_share"), ">=", 0.70)
        elif bound(key, 2, "llmgen_decode_share"):
            out.append({"what": "%s decode share of floor" % key, "target": "(reported)", "ok": True,
                        "measured": "%.2f" % bound(key, 2, "llmgen_decode_share")})
    return out


def print_targets(rows):
    if not rows:
        return
    print("targets (2 threads, default mode):")
    w = max(len(r["what"]) for r in rows)
    for r in rows:
        print("  %-*s  %8s  (target %s)  %s" % (w, r["what"], r["measured"], r["target"],
                                                 "met" if r["ok"] else "MISSED"))
    print()


# ---- main ----------------------------------------------------------------------------------------

def bench_model(key, path, peer_ok, desc, threads, reps, drop, results):
    costs = model_costs(path)
    log("%s: %s (%.1f MB per token)" % (key, path, costs["bytes_per_token"] / 1e6))
    entry = {"key": key, "description": desc, "path": path, "costs": costs, "threads": {}}
    peer = peer_ok and os.path.exists(os.path.join(PEER_BIN, "llama-bench")) and \
        os.path.exists(os.path.join(BENCH_BIN, "peer_run"))
    ttft_ids = ids_csv(TTFT_PROMPT, 32000, 16)
    # Exact mode differs from the default only where weights are quantized (GGUF Q4/Q8, MLX affine).
    exact = os.environ.get("BENCH_NO_EXACT") != "1" and not key.endswith(("f16", "bf16-st"))
    for t in threads:
        log("%s, %d thread(s): warm-up" % (key, t))
        llmgen_sample(path, t, pp=(16,), tg=4, warm=0)
        if peer:
            llama_sample(path, t, pp=(16,), tg=4)
        a_rounds, b_rounds, x_rounds, loads, bw_rounds = [], [], [], [], []
        for r in range(reps):
            # Other work on the machine disturbs both engines (llama.cpp's OpenMP threads most):
            # the 1-minute load average before each round is kept with the results.
            loads.append(os.getloadavg()[0])
            # this host's bandwidth moves between runs: a quick probe beside every round
            bw_rounds.append(probe("membw")["gbs"][str(t)])
            a = llmgen_sample(path, t)
            b = llama_sample(path, t) if peer else {}
            if exact:
                x_rounds.append(llmgen_sample(path, t, exact=True))
            if peer:
                b.update(peer_load(path, t, ttft_ids))
            a.update(llmgen_ttft(path, t, ttft_ids, drop))
            if peer:
                b.update(peer_ttft(path, t, ttft_ids, drop))
            a_rounds.append(a)
            b_rounds.append(b)
            errs = [x["error"] for x in (a, b) if "error" in x]
            log("%s t=%d round %d/%d (load %.1f): llmgen %s %s %s | llama.cpp %s %s%s"
                % (key, t, r + 1, reps, loads[-1], PP_KEY, fmt(a.get(PP_KEY), ""), fmt(a.get(TG_KEY), ""),
                   fmt(b.get(PP_KEY), ""), fmt(b.get(TG_KEY), ""), ("  ERRORS: " + "; ".join(errs)) if errs else ""))
        A, B = medians(a_rounds), medians(b_rounds)
        X = medians(x_rounds) if exact else {}
        bw = results["probes"]["bandwidth_gbs"][str(t)] * 1e9
        peak = results["probes"]["int8_gops"][str(t)] * 1e9
        floor = bw / costs["bytes_per_token"]
        ceiling = peak / costs["ops_per_prompt_token"]
        med = lambda d, k: d.get(k, {}).get("median")  # noqa: E731
        bounds = {"bandwidth_gbs": bw / 1e9, "decode_floor_tps": floor, "int8_gops": peak / 1e9,
                  "prefill_ceiling_tps": ceiling}
        if med(A, TG_KEY):
            bounds["llmgen_decode_share"] = med(A, TG_KEY) / floor
        if med(B, TG_KEY):
            bounds["llama_decode_share"] = med(B, TG_KEY) / floor
        if med(A, PP_KEY):
            bounds["llmgen_prefill_share"] = med(A, PP_KEY) / ceiling
        if med(B, PP_KEY):
            bounds["llama_prefill_share"] = med(B, PP_KEY) / ceiling
        if med(X, TG_KEY):
            bounds["exact_decode_share"] = med(X, TG_KEY) / floor
        if med(X, PP_KEY):
            bounds["exact_prefill_share"] = med(X, PP_KEY) / ceiling
        # the same share against the bandwidth probed in each round, median over rounds
        bounds["bandwidth_rounds_gbs"] = bw_rounds
        for name, rounds in (("llmgen", a_rounds), ("llama", b_rounds), ("exact", x_rounds)):
            per = [x[TG_KEY] * costs["bytes_per_token"] / (g * 1e9)
                   for x, g in zip(rounds, bw_rounds) if x.get(TG_KEY)]
            if per:
                bounds[name + "_decode_share_rounds"] = statistics.median(per)
        ratios = {k: med(A, k) / med(B, k) for k in A if med(B, k)}
        entry["threads"][str(t)] = {
            "llmgen": A, "llama.cpp": B, "llmgen_exact": X, "ratio": ratios, "bounds": bounds, "loadavg_before_rounds": loads,
            "errors": [x["error"] for x in a_rounds + b_rounds + x_rounds if "error" in x],
            "first_ids": {"llmgen": sorted({x.get("first_id") for x in a_rounds if x.get("first_id")}),
                          "llama.cpp": sorted({x.get("first_id") for x in b_rounds if x.get("first_id")})},
            "llmgen_info": {k: a_rounds[0].get(k) for k in ("kernels", "weight_types")},
            "llama_params": next((x["params"] for x in b_rounds if "params" in x), None),
        }
    results["models"].append(entry)


def main():
    if sys.argv[1:2] == ["--table"] and len(sys.argv) == 3:  # print a saved run's README table again
        with open(sys.argv[2]) as f:
            print(markdown_table(json.load(f)))
        return 0
    t_start = time.time()
    quick = os.environ.get("BENCH_QUICK") == "1"
    reps = int(os.environ.get("BENCH_REPS", "3" if quick else "5"))
    threads = [int(x) for x in os.environ.get("BENCH_THREADS", "2,1").split(",")]
    wanted = os.environ.get("BENCH_MODELS")
    wanted = wanted.split(",") if wanted else (list(QUICK_MODELS) if quick else None)
    os.makedirs(OUT_DIR, exist_ok=True)
    known = {k for k, _, _, _ in MODELS}
    for w in wanted or []:
        if w not in known:
            raise SystemExit("bench: unknown model %s (known: %s)" % (w, ", ".join(sorted(known))))

    drop = drop_caches_allowed()
    results = {"settings": {"reps": reps, "threads": threads, "quick": quick, "pp": PP_SIZES, "tg": TG,
                            "ttft_prompt": TTFT_PROMPT, "ttft_page_cache_dropped": drop},
               "machine": machine_info(), "models": [], "skipped": {}, "probes": {}}
    results["versions"] = versions()
    if "peer_build_info" not in results["versions"]:
        log("no llama.cpp peer (%s missing): llmgen only. `make peer` builds it." % PEER_INFO)

    log("probes: read bandwidth and int8 peak")
    bw0, pk0 = probe("membw"), probe("int8peak")

    todo = []
    for key, path, peer_ok, desc in MODELS:
        if wanted is not None and key not in wanted:
            continue
        if key in ("llama1b-mlx4-g64", "llama1b-mlx8-g64"):
            note = mlx_hook(path, 8 if key == "llama1b-mlx8-g64" else 4)
            if note:
                results["skipped"][key] = note
                log("%s skipped: %s" % (key, note))
                continue
        if not os.path.exists(path):
            results["skipped"][key] = "%s missing (make model / make bench-models / make family-bench-models)" % path
            log("%s skipped: %s missing" % (key, path))
            continue
        todo.append((key, path, peer_ok, desc))

    # Bounds use the best pass of the start probe; the end probe is added after the runs.
    results["probes"] = {"membw": bw0, "int8peak": pk0,
                         "bandwidth_gbs": dict(bw0["gbs"]), "int8_gops": dict(pk0["gops"])}
    for key, path, peer_ok, desc in todo:
        bench_model(key, path, peer_ok, desc, threads, reps, drop, results)
        # A full run is long: keep what is measured so far (bounds from the start probe until the end).
        with open(os.path.join(OUT_DIR, "results.partial.json"), "w") as f:
            json.dump(results, f, indent=1)

    bw1, pk1 = probe("membw"), probe("int8peak")
    results["probes"]["membw_end"], results["probes"]["int8peak_end"] = bw1, pk1
    # Report the bounds with the best of both probes: recompute shares if the end probe was higher.
    for t in ("1", "2"):
        results["probes"]["bandwidth_gbs"][t] = max(bw0["gbs"][t], bw1["gbs"][t])
        results["probes"]["int8_gops"][t] = max(pk0["gops"][t], pk1["gops"][t])
    for m in results["models"]:
        for t, r in m["threads"].items():
            b = r["bounds"]
            bw = results["probes"]["bandwidth_gbs"][t] * 1e9
            peak = results["probes"]["int8_gops"][t] * 1e9
            scale_f = (bw / m["costs"]["bytes_per_token"]) / b["decode_floor_tps"]
            scale_c = (peak / m["costs"]["ops_per_prompt_token"]) / b["prefill_ceiling_tps"]
            b["bandwidth_gbs"], b["int8_gops"] = bw / 1e9, peak / 1e9
            b["decode_floor_tps"] *= scale_f
            b["prefill_ceiling_tps"] *= scale_c
            for k in ("llmgen_decode_share", "llama_decode_share", "exact_decode_share"):
                if k in b:
                    b[k] /= scale_f
            for k in ("llmgen_prefill_share", "llama_prefill_share", "exact_prefill_share"):
                if k in b:
                    b[k] /= scale_c

    results["wall_seconds"] = time.time() - t_start
    print()
    print_table(results)
    if results["skipped"]:
        print("skipped: " + "; ".join("%s (%s)" % kv for kv in results["skipped"].items()))
    print()
    results["targets"] = targets(results)
    print_targets(results["targets"])
    if os.environ.get("BENCH_NO_TOKENIZER") != "1":
        tokenizer_hook(results)
    with open(os.path.join(OUT_DIR, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("README table (%s, %s):" % (results["machine"].get("cpu", "?"), time.strftime("%Y-%m-%d")))
    print()
    print(markdown_table(results))
    print()
    print("results: %s (%.0f s)" % (os.path.join(OUT_DIR, "results.json"), time.time() - t_start))
    failed = [e for m in results["models"] for r in m["threads"].values() for e in r["errors"]
              if e.startswith(("llmgen", "./llmgen"))]
    if failed:
        log("llmgen failed %d time(s); first: %s" % (len(failed), failed[0]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
