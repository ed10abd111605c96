#!/usr/bin/env python3
"""Bad model files give one clear line on stderr and a non-zero exit, never output or a crash.

Builds each damaged model in a temporary directory (a tiny GGUF written here, and copies of the
tests/fixtures/tiny-mha-f32 safetensors model with one thing broken), runs
    ./llmgen -m PATH --prompt-ids 1,2 -n 1 --ids
and asserts: exit code 2 ("bad model file"), nothing on stdout, and exactly one line on stderr
that names the damaged file. Standard library only; needs ./llmgen built.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join("tests", "fixtures", "tiny-mha-f32")
DEFAULT_MODEL = os.path.join(".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
EXIT_MODEL = 2

# ---- a tiny GGUF writer ------------------------------------------------------------------------


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_kv_u32(k, v):
    return gguf_str(k) + struct.pack("<II", 4, v)


def gguf_kv_f32(k, v):
    return gguf_str(k) + struct.pack("<If", 6, v)


def gguf_kv_str(k, v):
    return gguf_str(k) + struct.pack("<I", 8) + gguf_str(v)


def tiny_gguf(arch="llama", types=(0, 0), magic=b"GGUF", version=3, embd_ne0=32):
    """A 1-layer llama GGUF with two F32 tensors (ggml types and the embedding's row length overridable)."""
    kvs = [gguf_kv_str("general.architecture", arch), gguf_kv_u32("llama.embedding_length", 32),
           gguf_kv_u32("llama.block_count", 1), gguf_kv_u32("llama.attention.head_count", 2),
           gguf_kv_u32("llama.attention.head_count_kv", 2), gguf_kv_u32("llama.feed_forward_length", 64),
           gguf_kv_u32("llama.context_length", 128), gguf_kv_u32("llama.vocab_size", 16),
           gguf_kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5)]
    tensors = [("token_embd.weight", [embd_ne0, 16]), ("output_norm.weight", [32])]
    out = magic + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    offset = 0
    sizes = []
    for (name, ne), t in zip(tensors, types):
        out += gguf_str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", t, offset)
        n = 4
        for d in ne:
            n *= d
        sizes.append(n)
        offset += (n + 31) // 32 * 32
    out += b"\0" * (-len(out) % 32)
    for n in sizes:
        out += b"\0" * n + b"\0" * (-n % 32)
    return out


# ---- safetensors helpers -----------------------------------------------------------------------


def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack_from("<Q", data, 0)[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_st(path, header, blob, hlen=None):
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h) if hlen is None else hlen) + h + blob)


def model_dir(tmp, name, edit_header=None, edit_config=None, hlen=None, drop=None, fixture=FIXTURE):
    """Copy the tiny fixture into tmp/name, then break one thing. Returns the directory."""
    d = os.path.join(tmp, name)
    shutil.copytree(fixture, d, ignore=shutil.ignore_patterns("*.gguf"))
    if edit_header or hlen is not None:
        header, blob = read_st(os.path.join(d, "model.safetensors"))
        if edit_header:
            edit_header(header)
        write_st(os.path.join(d, "model.safetensors"), header, blob, hlen)
    if edit_config:
        cfg = json.load(open(os.path.join(d, "config.json")))
        text = edit_config(cfg)
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(text if isinstance(text, str) else json.dumps(cfg))
    if drop:
        os.remove(os.path.join(d, drop))
    return d


def first_two(header):
    names = sorted(k for k in header if k != "__metadata__")
    return header[names[0]], header[names[1]]


def out_of_range(h):
    a, _ = first_two(h)
    a["data_offsets"] = [a["data_offsets"][0] + 10**9, a["data_offsets"][1] + 10**9]


def overlapping(h):
    a, b = first_two(h)
    size = b["data_offsets"][1] - b["data_offsets"][0]
    b["data_offsets"] = [a["data_offsets"][0], a["data_offsets"][0] + size]


def unknown_dtype(h):
    first_two(h)[0]["dtype"] = "F8_E4M3"


def wrong_size(h):
    a, _ = first_two(h)
    a["shape"] = [a["shape"][0] + 1] + a["shape"][1:]


def drop_key(key):
    def edit(cfg):
        del cfg[key]
    return edit


MOE_FIXTURE = os.path.join("tests", "fixtures", "tiny-qwen3moe-f32")
HYBRID = os.path.join("tests", "fixtures", "tiny-qwen35-gdn-f32")
LFM2 = os.path.join("tests", "fixtures", "tiny-lfm2-f32")
MOE_EXPERT = "model.layers.1.mlp.experts.3.up_proj.weight"
GEMMA4 = os.path.join("tests", "fixtures", "tiny-gemma4-f32")


def drop_expert(h):
    del h[MOE_EXPERT]


def transpose_expert(h):
    t = h["model.layers.2.mlp.experts.0.down_proj.weight"]
    t["shape"] = t["shape"][::-1]


GPTOSS_FIXTURE = os.path.join("tests", "fixtures", "tiny-gptoss-mxfp4")


def reshape(name, shape):
    """A tensor given another shape of the same size: its bytes stay valid, its meaning does not."""
    def edit(h):
        h[name]["shape"] = shape
    return edit


def drop_tensor(name):
    def edit(h):
        del h[name]
    return edit


def set_key(key, value):
    def edit(cfg):
        cfg[key] = value
    return edit


def gguf_set_u32(data, key, value):
    """The GGUF bytes with the u32 value of metadata key `key` replaced."""
    k = gguf_str(key) + struct.pack("<I", 4)
    i = data.index(k) + len(k)
    return data[:i] + struct.pack("<I", value) + data[i + 4:]


def gguf_set_dim(data, tensor, dim, value):
    """The GGUF bytes with ne[dim] of tensor `tensor`'s info replaced (a smaller one keeps its data in the file)."""
    k = gguf_str(tensor)
    i = data.index(k) + len(k) + 4 + 8 * dim
    return data[:i] + struct.pack("<Q", value) + data[i + 8:]
def gguf_set_arr_u32(data, key, i, value):
    """The GGUF bytes with entry i of the 32-bit integer array of metadata key `key` replaced."""
    k = gguf_str(key) + struct.pack("<I", 9)
    at = data.index(k) + len(k) + 4 + 8 + 4 * i  # the element type, the count, then the elements
    return data[:at] + struct.pack("<I", value) + data[at + 4:]


def set_arch(cfg):
    cfg["model_type"] = "gpt2"  # mistral, qwen2, ... are supported now (src/model/arch.c)
    cfg["architectures"] = ["GPT2LMHeadModel"]


# ---- the checks --------------------------------------------------------------------------------


def run_case(name, model, names_file, failures):
    cmd = ["./llmgen", "-m", model, "--prompt-ids", "1,2", "-n", "1", "--ids"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    except subprocess.TimeoutExpired:
        failures.append("%s: timed out" % name)
        print("FAIL  %-34s timed out" % name)
        return
    err = p.stderr.decode("utf-8", "replace")
    lines = err.split("\n")
    problems = []
    if p.returncode == 0:
        problems.append("exit code 0")
    elif p.returncode != EXIT_MODEL:
        problems.append("exit code %d, expected %d (bad model file)" % (p.returncode, EXIT_MODEL))
    if p.returncode < 0:
        problems.append("killed by signal %d" % -p.returncode)
    if p.stdout:
        problems.append("stdout not empty: %r" % p.stdout[:200])
    if not (len(lines) == 2 and lines[1] == "" and lines[0]):
        problems.append("stderr is not exactly one line: %r" % err[:400])
    if names_file not in err:
        problems.append("stderr does not name %s" % names_file)
    if name == "text-file-6-bytes" and ("not a GGUF" not in err or "truncated" in err):
        problems.append("a 6-byte text file is not called 'not a GGUF file': %r" % err)
    if problems:
        failures.append("%s: %s" % (name, "; ".join(problems)))
        print("FAIL  %-34s %s" % (name, "; ".join(problems)))
    else:
        print("ok    %-34s %s" % (name, lines[0]))


def main():
    os.chdir(REPO)
    if not os.access("./llmgen", os.X_OK):
        print("./llmgen is not built: run `make llmgen` first")
        return 1
    if not os.path.isdir(FIXTURE):
        print("%s is missing" % FIXTURE)
        return 1
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = []

        def gguf_case(name, data):
            path = os.path.join(tmp, name + ".gguf")
            with open(path, "wb") as f:
                f.write(data)
            cases.append((name, path, path))

        good = tiny_gguf()
        gguf_case("gguf-truncated-metadata", good[:100])
        gguf_case("gguf-truncated-data", good[:-40])
        gguf_case("gguf-empty", b"")
        gguf_case("text-file-6-bytes", b"hello\n")  # must say "not a GGUF", not "truncated" (issue 19)
        gguf_case("gguf-bad-magic", tiny_gguf(magic=b"GGUG"))
        gguf_case("gguf-version-1", tiny_gguf(version=1))
        gguf_case("gguf-unknown-type-q4k", tiny_gguf(types=(12, 0)))
        gguf_case("gguf-unknown-type-99", tiny_gguf(types=(0, 99)))
        gguf_case("gguf-unsupported-arch", tiny_gguf(arch="gpt2"))
        gguf_case("gguf-absurd-count", good[:8] + struct.pack("<Q", 1 << 60) + good[16:])
        if os.path.exists(DEFAULT_MODEL):
            with open(DEFAULT_MODEL, "rb") as f:
                gguf_case("default-model-truncated", f.read(1 << 20))

        def dir_case(name, names, tensor=False, **kw):
            d = model_dir(tmp, name, **kw)
            cases.append((name, d, names if tensor else os.path.join(d, names) if names else d))

        dir_case("st-header-length-past-end", "model.safetensors", hlen=1 << 40)
        dir_case("st-offsets-out-of-range", "model.safetensors", edit_header=out_of_range)
        dir_case("st-overlapping-offsets", "model.safetensors", edit_header=overlapping)
        dir_case("st-unknown-dtype", "model.safetensors", edit_header=unknown_dtype)
        dir_case("st-wrong-byte-size", "model.safetensors", edit_header=wrong_size)
        dir_case("dir-without-config", None, drop="config.json")
        dir_case("config-missing-hidden-size", "config.json", edit_config=drop_key("hidden_size"))
        dir_case("config-missing-vocab-size", "config.json", edit_config=drop_key("vocab_size"))
        dir_case("config-unsupported-arch", "config.json", edit_config=set_arch)
        dir_case("config-bad-json", "config.json", edit_config=lambda c: json.dumps(c)[:-2])
        # a hybrid model (Gated DeltaNet layers): a linear layer without one of its state tensors, head
        # counts that do not divide, a conv kernel of 0, and one the conv weight does not have
        hyb = dict(fixture=HYBRID)
        dir_case("hybrid-missing-a-log", "model.layers.0.linear_attn.A_log", True,
                 edit_header=drop_tensor("model.layers.0.linear_attn.A_log"), **hyb)
        dir_case("hybrid-missing-conv", "model.layers.2.linear_attn.conv1d.weight", True,
                 edit_header=drop_tensor("model.layers.2.linear_attn.conv1d.weight"), **hyb)
        dir_case("hybrid-heads-do-not-divide", "config.json", edit_config=set_key("linear_num_value_heads", 3), **hyb)
        dir_case("hybrid-conv-kernel-0", "config.json", edit_config=set_key("linear_conv_kernel_dim", 0), **hyb)
        dir_case("hybrid-conv-kernel-3", "model.layers.0.linear_attn.conv1d.weight", True,
                 edit_config=set_key("linear_conv_kernel_dim", 3), **hyb)
        # LFM2 (short convolutions in layers 0, 2, 3): a conv layer without its conv weight, a kernel the
        # weight does not have, a GGUF whose per-layer kv-head counts disagree; LFM2-MoE without an
        # expert layer's routing bias
        lfm = dict(fixture=LFM2)
        dir_case("lfm2-missing-conv", "model.layers.2.conv.conv.weight", True,
                 edit_header=drop_tensor("model.layers.2.conv.conv.weight"), **lfm)
        dir_case("lfm2-conv-kernel-4", "model.layers.0.conv.conv.weight", True,
                 edit_config=set_key("conv_L_cache", 4), **lfm)
        with open(os.path.join(LFM2, "model.f32.gguf"), "rb") as f:
            lfm_gguf = f.read()
        gguf_case("lfm2-gguf-kv-heads-disagree", gguf_set_arr_u32(lfm_gguf, "lfm2.attention.head_count_kv", 4, 1))
        cases[-1] = cases[-1][:2] + ("lfm2.attention.head_count_kv",)
        dir_case("lfm2moe-missing-expert-bias", "model.layers.2.feed_forward.expert_bias", True,
                 edit_header=drop_tensor("model.layers.2.feed_forward.expert_bias"),
                 fixture=os.path.join("tests", "fixtures", "tiny-lfm2moe-f32"))
        # expert layers (tests/fixtures/tiny-qwen3moe-f32: 6 experts, 2 used per token)
        dir_case("moe-expert-tensor-missing", MOE_EXPERT, True, edit_header=drop_expert, fixture=MOE_FIXTURE)
        dir_case("moe-expert-wrong-shape", "model.layers.2.mlp.experts.0.down_proj.weight", True, edit_header=transpose_expert,
                 fixture=MOE_FIXTURE)
        dir_case("moe-used-above-count", "config.json", edit_config=set_key("num_experts_per_tok", 7),
                 fixture=MOE_FIXTURE)
        dir_case("moe-router-rows", "model.layers.0.mlp.gate.weight", True, edit_config=set_key("num_local_experts", 7),
                 fixture=MOE_FIXTURE)
        with open(os.path.join(MOE_FIXTURE, "model.f32.gguf"), "rb") as f:
            moe = f.read()
        gguf_case("moe-gguf-used-above-count", gguf_set_u32(moe, "qwen3moe.expert_used_count", 7))
        gguf_case("moe-gguf-router-rows", gguf_set_u32(moe, "qwen3moe.expert_count", 5))
        cases[-1] = cases[-1][:2] + ("blk.0.ffn_gate_inp.weight",)
        # gpt-oss (tests/fixtures/tiny-gptoss-mxfp4: OpenAI's MXFP4 layout, 6 experts of 32, 4 heads): MXFP4 rows
        # not a multiple of 32, scales that do not match their blocks, sinks and biases of the wrong shape
        go = dict(fixture=GPTOSS_FIXTURE)
        gu = "model.layers.0.mlp.experts.gate_up_proj_blocks"
        dir_case("gptoss-mxfp4-rows-not-32", gu, True, edit_config=set_key("intermediate_size", 48), **go)
        sc = "model.layers.1.mlp.experts.down_proj_scales"
        dir_case("gptoss-mxfp4-scales-mismatch", sc, True, edit_header=reshape(sc, [6, 1, 64]), **go)
        sk = "model.layers.0.self_attn.sinks"
        dir_case("gptoss-sinks-shape", sk, True, edit_header=reshape(sk, [2, 2]), **go)
        ob = "model.layers.2.self_attn.o_proj.bias"
        dir_case("gptoss-o-bias-shape", ob, True, edit_header=reshape(ob, [8, 8]), **go)
        rb = "model.layers.3.mlp.router.bias"
        dir_case("gptoss-router-bias-shape", rb, True, edit_header=reshape(rb, [2, 3]), **go)
        gguf_case("gguf-mxfp4-row-not-32", tiny_gguf(types=(39, 0), embd_ne0=48))
        cases[-1] = cases[-1][:2] + ("token_embd.weight",)
        with open(os.path.join(GPTOSS_FIXTURE, "model.mxfp4.gguf"), "rb") as f:
            go_gguf = f.read()
        gguf_case("gptoss-gguf-sinks-shape", gguf_set_dim(go_gguf, "blk.1.attn_sinks.weight", 0, 2))
        cases[-1] = cases[-1][:2] + ("blk.1.attn_sinks.weight",)
        gguf_case("gptoss-gguf-expert-bias-shape", gguf_set_dim(go_gguf, "blk.2.ffn_down_exps.bias", 1, 3))
        cases[-1] = cases[-1][:2] + ("blk.2.ffn_down_exps.bias",)
        # Gemma 4 (tests/fixtures/tiny-gemma4-f32: layers s s f s s f, the last two kv-shared, per-layer inputs
        # of 16): a shared layer whose type no earlier layer has, per-layer shapes the tensors do not have, a
        # per-layer table of another width; in config.json and in the converter's GGUF
        g4 = dict(fixture=GEMMA4)
        dir_case("gemma4-shared-without-producer", "config.json", edit_config=set_key(
            "layer_types", ["full_attention"] * 4 + ["sliding_attention", "full_attention"]), **g4)
        dir_case("gemma4-head-dim-disagrees", "model.layers.2.self_attn.q_proj.weight", True,
                 edit_config=set_key("per_layer_config", {"2": {"head_dim": 48}, "5": {"head_dim": 48}}), **g4)
        dir_case("gemma4-per-layer-table-size", "model.embed_tokens_per_layer.weight", True,
                 edit_config=set_key("hidden_size_per_layer_input", 8), **g4)
        with open(os.path.join(GEMMA4, "model.f32.gguf"), "rb") as f:
            g4f = f.read()
        gguf_case("gemma4-gguf-shared-without-producer", gguf_set_u32(g4f, "gemma4.attention.shared_kv_layers", 4))
        gguf_case("gemma4-gguf-head-dim-disagrees", gguf_set_u32(g4f, "gemma4.attention.key_length_swa", 16))
        cases[-1] = cases[-1][:2] + ("blk.0.attn_q.weight",)
        gguf_case("gemma4-gguf-per-layer-table-size", gguf_set_u32(g4f, "gemma4.embedding_length_per_layer_input", 8))
        cases[-1] = cases[-1][:2] + ("per_layer_token_embd.weight",)
        d = model_dir(tmp, "st-truncated")
        st = os.path.join(d, "model.safetensors")
        size = os.path.getsize(st)
        with open(st, "r+b") as f:
            f.truncate(size - 1)
        cases.append(("st-truncated", d, st))

        for name, model, names_file in cases:
            run_case(name, model, names_file, failures)
    if failures:
        print("%d of %d bad-file cases failed" % (len(failures), len(cases)))
        return 1
    print("all %d bad-file cases refused cleanly" % len(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
