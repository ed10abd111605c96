#!/usr/bin/env python3
"""Write the fuzz seed corpus (tests/fuzz/corpus/<target>/) deterministically.

Standard library only. Seeds are small valid inputs (plus a few near-misses) so
the fuzzer starts deep inside each parser instead of at its magic number. The corpus
directories also hold inputs found by fuzzing (hash-named, merged in with
`fuzz_X -merge=1 tests/fuzz/corpus/fuzz_X NEW_DIR`); this script leaves those alone.
Usage: python3 tests/fuzz/make_seeds.py   (from the repository root)
"""
import json
import os
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- GGUF -------------------------------------------------------------------------
U32, I32, F32, BOOL, STR, ARR = 4, 5, 6, 7, 8, 9


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gkv(key, typ, val):
    out = gstr(key) + struct.pack("<I", typ)
    if typ == U32:
        out += struct.pack("<I", val)
    elif typ == I32:
        out += struct.pack("<i", val)
    elif typ == F32:
        out += struct.pack("<f", val)
    elif typ == BOOL:
        out += struct.pack("<B", val)
    elif typ == STR:
        out += gstr(val)
    elif typ == ARR:
        et, items = val
        out += struct.pack("<IQ", et, len(items))
        for it in items:
            out += gstr(it) if et == STR else struct.pack("<i" if et == I32 else "<f", it)
    return out


# ggml type ids and (block elems, block bytes)
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q8_0": (8, 32, 34),
        "BF16": (30, 1, 2), "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110),
        "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "IQ4_NL": (20, 32, 18),
        "IQ4_XS": (23, 256, 136), "MXFP4": (39, 32, 17)}


def gguf(version=3, kvs=None, tensors=(), align=32):
    kvs = kvs or []
    infos, blobs, off = b"", b"", 0
    for name, typ, ne in tensors:
        tid, be, bb = GGML[typ]
        n = 1
        for x in ne:
            n *= x
        size = n // be * bb
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", x) for x in ne)
        infos += struct.pack("<IQ", tid, off)
        blob = bytes((i * 37 + 11) & 0x3F for i in range(size))  # small finite values
        pad = (-size) % align
        blobs += blob + b"\0" * pad
        off += size + pad
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * ((-len(head)) % align)
    return head + blobs


def llama_kvs(vocab, arch="llama"):
    return [
        gkv("general.architecture", STR, arch),
        gkv(arch + ".context_length", U32, 64),
        gkv(arch + ".embedding_length", U32, 32),
        gkv(arch + ".block_count", U32, 1),
        gkv(arch + ".feed_forward_length", U32, 64),
        gkv(arch + ".attention.head_count", U32, 4),
        gkv(arch + ".attention.head_count_kv", U32, 2),
        gkv(arch + ".rope.freq_base", F32, 10000.0),
        gkv(arch + ".attention.layer_norm_rms_epsilon", F32, 1e-5),
        gkv("tokenizer.ggml.model", STR, "gpt2"),
        gkv("tokenizer.ggml.tokens", ARR, (STR, vocab)),
        gkv("tokenizer.ggml.token_type", ARR, (I32, [1] * len(vocab))),
        gkv("tokenizer.ggml.merges", ARR, (STR, ["a b", "ab c"])),
        gkv("tokenizer.ggml.eos_token_id", U32, 0),
        gkv("tokenizer.ggml.add_bos_token", BOOL, 0),
    ]


def gguf_seeds():
    vocab = ["<eos>", "a", "b", "c", "ab", "abc", "\u0120", "d"]
    ts = [("token_embd.weight", "Q8_0", (32, 8)), ("blk.0.attn_norm.weight", "F32", (32,)),
          ("blk.0.attn_q.weight", "Q4_0", (32, 32)), ("blk.0.attn_k.weight", "Q4_1", (32, 16)),
          ("blk.0.attn_v.weight", "F16", (32, 16)), ("blk.0.attn_output.weight", "BF16", (32, 32)),
          ("output_norm.weight", "F32", (32,))]
    put("fuzz_gguf", "llama_v3", gguf(3, llama_kvs(vocab), ts))
    put("fuzz_gguf", "llama_v2", gguf(2, llama_kvs(vocab), ts[:3]))
    put("fuzz_gguf", "align64", gguf(3, [gkv("general.alignment", U32, 64)], ts[:2], align=64))
    put("fuzz_gguf", "empty", gguf(3))
    put("fuzz_gguf", "kv_only", gguf(3, [gkv("a", STR, "b"), gkv("n", ARR, (F32, [1.0, 2.0]))]))
    # every block type of the quantization-type table, rows of 256 (and 32 / 64 where the block allows)
    kq = [("k.%s" % t, t, (256, 2)) for t in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS")]
    kq += [("s.%s" % t, t, (64, 3)) for t in ("Q5_0", "Q5_1", "IQ4_NL")]
    put("fuzz_gguf", "kquants", gguf(3, [gkv("general.architecture", STR, "llama")], kq))
    # expert layers: a qwen3moe file (expert keys, router and merged expert stacks) and Mixtral as llama
    moe = llama_kvs(vocab, "qwen3moe")
    moe += [gkv("qwen3moe.expert_count", U32, 4), gkv("qwen3moe.expert_used_count", U32, 2),
            gkv("qwen3moe.expert_feed_forward_length", U32, 32)]
    ets = ts + [("blk.0.ffn_gate_inp.weight", "F32", (32, 4)), ("blk.0.ffn_gate_exps.weight", "Q8_0", (32, 32, 4)),
                ("blk.0.ffn_up_exps.weight", "Q8_0", (32, 32, 4)), ("blk.0.ffn_down_exps.weight", "Q4_0", (32, 32, 4))]
    put("fuzz_gguf", "qwen3moe", gguf(3, moe, ets))
    put("fuzz_gguf", "mixtral_llama", gguf(3, llama_kvs(vocab) + [gkv("llama.expert_count", U32, 4),
                                                                 gkv("llama.expert_used_count", U32, 2)], ets))
    # gpt-oss: YaRN and window keys, sinks, q/k/v/o and expert biases, MXFP4 expert stacks
    go = llama_kvs(vocab, "gpt-oss")
    go += [gkv("gpt-oss.expert_count", U32, 4), gkv("gpt-oss.expert_used_count", U32, 2),
           gkv("gpt-oss.expert_feed_forward_length", U32, 32), gkv("gpt-oss.attention.sliding_window", U32, 8),
           gkv("gpt-oss.rope.scaling.type", STR, "yarn"), gkv("gpt-oss.rope.scaling.factor", F32, 4.0),
           gkv("gpt-oss.rope.scaling.original_context_length", U32, 32),
           gkv("gpt-oss.rope.scaling.yarn_beta_fast", F32, 32.0), gkv("gpt-oss.rope.scaling.yarn_beta_slow", F32, 1.0)]
    gts = [t for t in ts if t[0] != "blk.0.attn_norm.weight"] + [
        ("blk.0.attn_norm.weight", "F32", (32,)), ("blk.0.post_attention_norm.weight", "F32", (32,)),
        ("blk.0.attn_q.bias", "F32", (32,)), ("blk.0.attn_k.bias", "F32", (16,)), ("blk.0.attn_v.bias", "F32", (16,)),
        ("blk.0.attn_output.bias", "F32", (32,)), ("blk.0.attn_sinks.weight", "F32", (4,)),
        ("blk.0.ffn_gate_inp.weight", "F32", (32, 4)), ("blk.0.ffn_gate_inp.bias", "F32", (4,)),
        ("blk.0.ffn_gate_exps.weight", "MXFP4", (32, 32, 4)), ("blk.0.ffn_up_exps.weight", "MXFP4", (32, 32, 4)),
        ("blk.0.ffn_down_exps.weight", "MXFP4", (32, 32, 4)), ("blk.0.ffn_gate_exps.bias", "F32", (32, 4)),
        ("blk.0.ffn_up_exps.bias", "F32", (32, 4)), ("blk.0.ffn_down_exps.bias", "F32", (32, 4))]
    put("fuzz_gguf", "gpt_oss", gguf(3, go, gts))


# ---- safetensors ------------------------------------------------------------------
def safetensors(entries, meta=None):
    header, data = {}, b""
    for name, dt, shape, size in entries:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + size]}
        data += bytes((i * 7) & 0x3F for i in range(size))
    if meta is not None:
        header["__metadata__"] = meta
    h = json.dumps(header).encode()
    h += b" " * ((-len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + data


def st_seeds():
    put("fuzz_safetensors", "three", safetensors(
        [("a.weight", "F32", [2, 3], 24), ("b", "BF16", [4], 8), ("c", "F16", [1, 1, 2], 4)], {"format": "pt"}))
    put("fuzz_safetensors", "ints", safetensors(
        [("i8", "I8", [3], 3), ("u8", "U8", [2, 2], 4), ("i64", "I64", [1], 8), ("b", "BOOL", [2], 2),
         ("f64", "F64", [1], 8), ("i32", "I32", [0], 0)]))
    put("fuzz_safetensors", "empty", safetensors([]))
    put("fuzz_safetensors", "scalar", safetensors([("s", "F32", [], 4)]))


# ---- config.json ------------------------------------------------------------------
def config_seeds():
    fx = os.path.join(ROOT, "tests", "fixtures")
    base = None
    for d in sorted(os.listdir(fx)):
        p = os.path.join(fx, d, "config.json")
        if os.path.exists(p):
            shutil.copyfile(p, os.path.join(OUT, "fuzz_config", d + ".json"))
            base = base or json.load(open(p))
    # MLX affine checkpoints: a global quantization block plus per-layer overrides
    q = dict(base, quantization={"group_size": 64, "bits": 4, "mode": "affine",
                                 "model.layers.0.mlp.down_proj": {"group_size": 32, "bits": 8},
                                 "model.embed_tokens": False})
    q["quantization_config"] = q["quantization"]
    put("fuzz_config", "mlx_affine.json", json.dumps(q))
    # Qwen3.5 (Gated DeltaNet): the linear layers by interval instead of layer_types, class defaults
    put("fuzz_config", "qwen35_interval.json", json.dumps(
        {"model_type": "qwen3_5_text", "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4,
         "intermediate_size": 96, "vocab_size": 320, "head_dim": 32, "full_attention_interval": 3,
         "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
         "linear_value_head_dim": 24, "linear_conv_kernel_dim": 4}))
    # LFM2 (short convs): the conv layers by full_attn_idxs, the MLP width by its aliases and adjustment
    put("fuzz_config", "lfm2_idxs.json", json.dumps(
        {"model_type": "lfm2", "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4,
         "num_key_value_heads": 2, "block_ff_dim": 272, "vocab_size": 256, "full_attn_idxs": [1, 4],
         "conv_L_cache": 3, "block_multiple_of": 32, "block_ffn_dim_multiplier": 1.0, "tie_embedding": True,
         "norm_eps": 1e-5}))


# ---- tokenizer.json ---------------------------------------------------------------
def tokenizer_json(pre, decoder, model_extra=None, normalizer=None, added=()):
    vocab = {"<|endoftext|>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "abc": 5, "\u0120": 6, "\u0120a": 7, "d": 8}
    model = {"type": "BPE", "vocab": vocab, "merges": ["a b", "ab c", "\u0120 a"], "dropout": None,
             "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
             "fuse_unk": False, "byte_fallback": False}
    model.update(model_extra or {})
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 0, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}] + list(added),
        "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": None, "decoder": decoder,
        "model": model}, ensure_ascii=False)


def tok_seeds():
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    put("fuzz_tokenizer", "bytelevel.json", tokenizer_json(bl, bl))
    split = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"},
         "behavior": "Isolated", "invert": False}, dict(bl, use_regex=False)]}
    put("fuzz_tokenizer", "llama3_split.json", tokenizer_json(split, bl))
    sp_dec = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    norm = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                {"type": "Replace", "pattern": {"String": " "},
                                                 "content": "\u2581"}]}
    put("fuzz_tokenizer", "sentencepiece.json",
        tokenizer_json(None, sp_dec, {"byte_fallback": True, "fuse_unk": True, "unk_token": "<|endoftext|>"},
                       norm))
    put("fuzz_tokenizer", "nfc_digits.json", tokenizer_json(
        {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, bl]}, bl, None,
        {"type": "NFC"}, [{"id": 8, "content": "d", "single_word": False, "lstrip": True, "rstrip": False,
                           "normalized": True, "special": False}]))


# ---- chat templates ---------------------------------------------------------------
CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
          "<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
          "{% endif %}")
LLAMA3 = ("{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
          "'<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
          "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}")
LLAMA2 = ("{% if messages[0]['role'] == 'system' %}{% set system_message = '<<SYS>>\\n' + messages[0]['content'] "
          "+ '\\n<</SYS>>\\n\\n' %}{% endif %}{% for message in messages %}{% if message['role'] == 'user' %}"
          "{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}{% endfor %}")
MISTRAL = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
           "message['content'] + ' [/INST]' }}{% endif %}{% endfor %}")


def chat_seeds():
    # first line of each seed: the system message (empty = none), then a NUL, then the template
    for name, t in [("chatml", CHATML), ("llama3", LLAMA3), ("llama2", LLAMA2), ("mistral", MISTRAL),
                    ("garbage", "{% for %}{{")]:
        put("fuzz_chat", name, b"Be brief.\n" + b"\0" + t.encode())
        put("fuzz_chat", name + "_nosys", b"\0" + t.encode())


# Constructs of the interpreter's subset, one seed each, so the fuzzer starts from every
# statement, filter and test; plus the repository's real templates (tests/fixtures/tokenizers/chat).
JINJA_SNIPPETS = {
    "loop": "{% for m in messages if m.role != 'x' %}{{ loop.index }}/{{ loop.length }}{{ loop.first }}"
            "{{ loop.last }}{{ loop.previtem is defined }}{% if loop.index0 is even %}{% continue %}{% endif %}"
            "{{ m['content'] | trim }}{% else %}none{% endfor %}",
    "namespace": "{%- set ns = namespace(found=false, n=0) -%}{%- for m in messages -%}{%- set ns.n = ns.n + 1 -%}"
                 "{%- if m.role == 'system' %}{% set ns.found = true %}{% break %}{% endif -%}{%- endfor -%}"
                 "{{ ns.found }} {{ ns.n }}",
    "macro": "{% macro render(x, sep=', ') -%}{{ x | join(sep) }}{%- endmacro %}{{ render([1, 2, 3]) }}"
             "{% call(y) render(['a']) %}{{ caller }}{% endcall %}",
    "filters": "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list | tojson }}"
               "{{ d | tojson(indent=2, sort_keys=true) }}{{ d | dictsort }}{{ 'a,b' .split(',') | first | upper }}"
               "{{ f | round }}{{ n | string | length }}{{ '  x ' | trim }}{{ 'x' | default('y', true) }}"
               "{{ d.a | last | items | list }}{{ 'Hello World' | lower | replace('o', '0') | indent(2, true) }}",
    "tests": "{{ n is number }}{{ d is mapping }}{{ 'x' is string }}{{ none is none }}{{ d.a is iterable }}"
             "{{ n is divisibleby 3 }}{{ undefined_var is not defined }}{{ [1] is sequence }}",
    "exprs": "{{ (n * 2 + 1) // 3 % 2 ** 3 }}{{ -f / 2 }}{{ 'a' ~ n ~ none }}{{ [1, 2, 3][1:] }}{{ 'abc'[::-1] }}"
             "{{ {'k': 'v'}.get('k') }}{{ 'x' if n > 2 else 'y' }}{{ 1 < n <= 3 }}{{ 'b' in 'abc' }}"
             "{{ not (n == 3 and f != 1.5 or false) }}{{ messages[-1].content.startswith(' ') }}",
    "blocks": "  {%- set s -%}\n  body {{ n }}\n{%- endset %}\n{% filter upper %}{{ s }}{% endfilter %}\n"
              "{# comment #}\n    {% if true %}\nline\n    {% endif %}\n{% raw %}{{ not }}{% endraw %}"
              "{% generation %}gen{% endgeneration %}",
    "strings": "{{ '\\n\\t\\u00e9\\x41' }}{{ \"it's\" }}{{ 'a' 'b' }}{{ '{}-{}'.format(1, 'x') }}"
               "{{ 'x'.rstrip('x') }}{{ 'a b  c'.split() }}{{ strftime_now('%d %b %Y') }}{{ range(3) | list }}"
               "{{ raise_exception('no') if n == 4 else '' }}",
}


def jinja_seeds():
    for name, t in JINJA_SNIPPETS.items():
        put("fuzz_jinja", name, t.encode())
    put("fuzz_jinja", "vars", b"{{ messages | tojson }}{{ x.y[0] }}\0" +
        json.dumps({"messages": [{"role": "user", "content": "\u00e9\n"}], "x": {"y": [1.25e-7, True, None]}}).encode())
    put("fuzz_jinja", "garbage", b"{% for %}{{ a | }}{% endif %}{{")
    chat_dir = os.path.join(ROOT, "tests", "fixtures", "tokenizers", "chat")
    for f in sorted(os.listdir(chat_dir)):
        if f.endswith(".jinja"):
            with open(os.path.join(chat_dir, f), "rb") as fh:
                put("fuzz_jinja", "fixture-" + f[:-len(".jinja")], fh.read())


# ---- batch JSONL ------------------------------------------------------------------
def batch_seeds():
    put("fuzz_batch", "two_lines", '{"id": "a", "prompt": "Hello"}\n{"prompt_ids": [1, 2, 3], "max_tokens": 4}\n')
    put("fuzz_batch", "sampling", json.dumps({"prompt": "x", "temp": 0.7, "top_k": 40, "top_p": 0.9, "min_p": 0.05,
                                              "repeat_penalty": 1.1, "seed": 7, "chat": True, "system": "s",
                                              "stop": ["\n", "."], "ignore_eos": False}) + "\n")
    put("fuzz_batch", "bad", '{"prompt": 3}\n[1,2]\n{"max_tokens": -1, "prompt": ""}\n\n{')
    put("fuzz_batch", "duplicate_ids", '{"id": "a", "prompt": "x"}\n{"id": 1, "prompt_ids": [1]}\n{"prompt": "y"}\n'
                                       '{"id": "a", "prompt": "z"}\n{"id": [1, {"b": 2, "a": 1}], "prompt": "w"}\n'
                                       '{"id": [1, {"a": 1, "b": 2}], "prompt": "v"}\n{"id": 1.0, "prompt": "u"}\n')
    put("fuzz_batch", "messages", json.dumps({"id": "m", "messages": [{"role": "system", "content": "Be brief."},
                                                                      {"role": "user", "content": "Hi"},
                                                                      {"role": "assistant", "content": "Hello"},
                                                                      {"role": "user", "content": "Bye"}],
                                              "max_tokens": 4}) + "\n" +
        '{"messages": [], "prompt": "x"}\n{"messages": [{"role": "user"}]}\n{"messages": [{"role": "user", '
        '"content": "a\\u0000b"}]}\n{"messages": [{"role": "user", "content": "x"}], "chat": true}\n'
        '{"messages": [{"role": "user", "content": "x"}], "system": "s"}\n')


def verify_seeds():
    """`llmgen verify` reference lines (verify_refs.c): valid ones of each kind and near-misses."""
    seeds = {
        "ok_text": '{"id": "a", "prompt": "The sky is", "expected_ids": [1, 2, 3], "top2_gap": [0.5, 0.0001, 2]}\n',
        "ok_ids_model": '{"id": 7, "model": "../../fixtures/tiny-mha-f32", "prompt_ids": [5, 6], "expected_ids": [9], '
                        '"source": {"tool": "x"}}\n',
        "ok_chat": '{"id": ["x", 1], "prompt": "Hi", "chat": true, "expected_ids": [2, 2]}\n',
        "two_lines": '{"id": 1, "prompt": "x", "expected_ids": [1]}\n'
                     '{"id": 2, "prompt_ids": [1], "expected_ids": [1, 2], "top2_gap": [1, 2]}\n',
        "bad_gap_len": '{"id": 1, "prompt_ids": [1], "expected_ids": [1, 2], "top2_gap": [1]}\n',
        "bad_both": '{"id": 1, "prompt": "x", "prompt_ids": [1], "expected_ids": [1]}\n',
        "bad_negative": '{"id": 1, "prompt_ids": [-1], "expected_ids": [1], "top2_gap": [-0.5]}\n',
        "bad_chat_ids": '{"id": 1, "prompt_ids": [1], "chat": true, "expected_ids": [1]}\n',
        "bad_surrogate": '{"id": 1, "prompt": "\\ud800", "expected_ids": [1]}\n',
        "bad_not_json": '{"id": 1, "prompt": \n[1,2]\n',
    }
    for name, data in seeds.items():
        put("fuzz_verify", name, data)


def prompt_cache_seeds():
    """--prompt-cache files (prompt_cache.c). First byte even: the body after the header the harness supplies
    (u32 pos, pos i32 ids, u64 n + n cache bytes); odd: a whole file. The cache of the harness's
    session (tests/fixtures/tiny-mha-f32: 3 layers, 4 kv heads, head_dim 16, f32, exact mode) holds
    per layer and head ceil(pos / 64) key blocks of 16 x 64 values and pos x 16 values."""
    def cache_bytes(pos):
        return 3 * 4 * (-(-pos // 64) * 16 * 64 * 4 + pos * 16 * 4)

    def body(pos, ids=None, n=None, fill=b"\0"):
        ids = list(range(1, pos + 1)) if ids is None else ids
        n = cache_bytes(pos) if n is None else n
        return b"\0" + struct.pack("<I", pos) + struct.pack("<%di" % len(ids), *ids) + struct.pack("<Q", n) + fill * n

    put("fuzz_prompt_cache", "empty", body(0))
    put("fuzz_prompt_cache", "three", body(3))
    put("fuzz_prompt_cache", "full", body(16, fill=b"\x01"))
    put("fuzz_prompt_cache", "bad_id", body(2, ids=[1, 99999]))
    put("fuzz_prompt_cache", "bad_len", body(3, n=cache_bytes(3) - 4))
    put("fuzz_prompt_cache", "too_long", body(17))
    put("fuzz_prompt_cache", "raw_magic", b"\x01LLMGENKV" + struct.pack("<II", 1, 4) + b"abcd" + b"\0" * 20)
    put("fuzz_prompt_cache", "raw_short", b"\x01LLMGENKV")


def grammar_seeds():
    """GBNF texts (a NUL then text to match) and JSON Schemas: the cases of tests/gen/grammar_cases.json
    and a few near-misses."""
    cases = json.load(open(os.path.join(ROOT, "tests", "gen", "grammar_cases.json"), encoding="utf-8"))
    for g in cases["grammars"]:
        put("fuzz_grammar", g["name"], g["gbnf"].encode() + b"\0" + g["prompt"].encode())
    put("fuzz_grammar", "json-ish", 'root ::= "{" ws ( s ws ":" ws v ("," ws s ws ":" ws v)* )? "}"\n'
        'v ::= s | [0-9]+ | root\ns ::= "\\"" [^"\\\\]* "\\""\nws ::= [ \\t\\n]*\n'.encode()
        + b'\0{"a": {"b": 12}}')
    put("fuzz_grammar", "unicode", 'root ::= [\\u00e0-\\u00ff\\U0001F600]+ . "\\x41"?'.encode() + "\0éé😀A".encode())
    put("fuzz_grammar", "left-rec", b'root ::= a\na ::= a "x" | "y"\0yx')
    put("fuzz_grammar", "repeat", b'root ::= ("ab" | [c-d]){2,5} "-"{0,3} x?\nx ::= "\\n"\0abcd--\n')
    put("fuzz_grammar", "bad-escape", b'root ::= "\\q"')
    for s in cases["schemas"]:
        put("fuzz_json_schema", s["name"], json.dumps(s["schema"], ensure_ascii=False).encode())
    put("fuzz_json_schema", "bad-keyword", b'{"type": "integer", "minimum": 1}')
    put("fuzz_json_schema", "bad-json", b'{"type": "object", "properties": {')
    put("fuzz_json_schema", "bad-pattern", b'{"type": "string", "pattern": "a(?=b)"}')


def main():
    for t in ["fuzz_gguf", "fuzz_safetensors", "fuzz_config", "fuzz_tokenizer", "fuzz_chat", "fuzz_batch", "fuzz_jinja",
              "fuzz_verify", "fuzz_prompt_cache", "fuzz_grammar", "fuzz_json_schema"]:
        os.makedirs(os.path.join(OUT, t), exist_ok=True)
    gguf_seeds()
    st_seeds()
    config_seeds()
    tok_seeds()
    chat_seeds()
    jinja_seeds()
    prompt_cache_seeds()
    batch_seeds()
    verify_seeds()
    grammar_seeds()


if __name__ == "__main__":
    main()
