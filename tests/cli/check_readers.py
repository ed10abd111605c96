#!/usr/bin/env python3
"""The C weight readers against an independent reading of the same real files.

Builds a small C driver (embedded below) against the objects of src/formats, src/model, src/base and src/quant,
then checks, for each file:
  - the default model GGUF (.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf, needs `make model`):
    every metadata key/value (ints, floats, strings, every element of every string array, numeric
    arrays by CRC-32), every tensor's name, dtype, HF-order shape, byte size, position and a CRC-32
    of its bytes, all against a plain-Python parse; and the config (SmolLM2 facts);
  - every safetensors model under tests/fixtures/ and .cache/fixtures/ (when built), plus a sharded
    copy of one fixture made here: names, dtypes, shapes, sizes, CRC-32 of each tensor's bytes, the
    shard each tensor comes from; config.json against the values in the file.
Standard library only. Exits non-zero on any mismatch.
"""
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
OBJS = ["build/src/%s.o" % m for m in ("formats/gguf", "formats/safetensors", "model/config", "model/config_json",
                                       "model/config_gguf", "model/arch", "base/util", "base/tensor", "quant/quant")]
# quant.o's type table names the packers of its layouts
OBJS += ["build/src/kernels/%s.o" % m for m in ("q8w_packed", "q5_packed", "q6k_packed", "q4k_packed")]

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/config.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "base/util.h"

static unsigned long crc_table[256];
static void crc_init(void) {
    for (unsigned long n = 0; n < 256; n++) {
        unsigned long c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320UL ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}
static unsigned long crc(unsigned long c, const void *p, size_t n) {
    const unsigned char *b = p;
    c ^= 0xffffffffUL;
    while (n--) c = crc_table[(c ^ *b++) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffUL;
}

static void print_tensor(const tensor *t, const void *base, const char *shard) {
    printf("T\t%s\t%s\t", t->name, dtype_name(t->type));
    for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? "," : "", (long long)t->shape[d]);
    printf("\t%zu\t%lld\t%lu\t%s\n", t->nbytes, (long long)((const char *)t->data - (const char *)base),
           crc(0, t->data, t->nbytes), shard);
}

static void print_config(const model_config *c) {
    printf("C\tdim=%d n_layers=%d n_heads=%d n_kv_heads=%d head_dim=%d hidden_dim=%d vocab_size=%d "
           "max_pos=%d rms_eps=%.9g rope_theta=%.9g rope_scaling=%d rope_factor=%.9g "
           "rope_low_freq_factor=%.9g rope_high_freq_factor=%.9g rope_orig_max_pos=%d "
           "tied_embeddings=%d rope_interleaved=%d bos_id=%d eos_ids=",
           c->dim, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim, c->hidden_dim, c->vocab_size,
           c->max_pos, c->rms_eps, c->rope_theta, (int)c->rope_scaling, c->rope_factor,
           c->rope_low_freq_factor, c->rope_high_freq_factor, c->rope_orig_max_pos,
           c->tied_embeddings, c->rope_interleaved, c->bos_id);
    for (int i = 0; i < c->n_eos; i++) printf("%s%d", i ? "," : "", c->eos_ids[i]);
    printf("\n");
}

static const size_t esize[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

/* stdin: one "key<TAB>gguf type" per line; prints the value the C reader gives. */
static void print_keys(const gguf_file *g) {
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        int type = atoi(tab + 1);
        const char *k = line;
        int64_t i;
        double f;
        gguf_str s;
        gguf_type et;
        uint64_t n;
        const void *data;
        if (!gguf_has_key(g, k)) printf("K\t%s\tabsent\n", k);
        else if (type == GGUF_FLOAT32 || type == GGUF_FLOAT64) {
            if (gguf_get_float(g, k, &f)) printf("K\t%s\terr\n", k);
            else printf("K\t%s\tf:%.17g\n", k, f);
        }
        else if (type == GGUF_STRING) {
            if (gguf_get_str(g, k, &s)) printf("K\t%s\terr\n", k);
            else {
                printf("K\t%s\ts:", k);
                for (uint64_t j = 0; j < s.len; j++) printf("%02x", (unsigned char)s.ptr[j]);
                printf("\n");
            }
        } else if (type == GGUF_ARRAY) {
            if (gguf_get_arr(g, k, &et, &n, &data)) { printf("K\t%s\terr\n", k); continue; }
            unsigned long c = 0;
            if (et == GGUF_STRING) {
                for (uint64_t j = 0; j < n; j++) {
                    if (gguf_get_arr_str(g, k, j, &s)) { c = 1; break; }
                    uint64_t len = s.len;
                    c = crc(c, &len, 8);
                    c = crc(c, s.ptr, s.len);
                }
            } else if ((unsigned)et < 13 && esize[et]) {
                c = crc(0, data, n * esize[et]);
            }
            printf("K\t%s\ta:%d:%llu:%lu\n", k, (int)et, (unsigned long long)n, c);
        } else if (gguf_get_int(g, k, &i)) {
            printf("K\t%s\terr\n", k);
        } else {
            printf("K\t%s\ti:%lld\n", k, (long long)i);
        }
    }
}

int main(int argc, char **argv) {
    char err[ERR_LEN];
    crc_init();
    if (argc != 3) return 1;
    if (!strcmp(argv[1], "gguf")) {
        gguf_file *g;
        if (gguf_open(argv[2], &g, err)) { fprintf(stderr, "%s\n", err); return 2; }
        printf("V\t%u\n", gguf_version(g));
        const void *base = gguf_tensor(g, 0)->data;
        for (int i = 0; i < gguf_n_tensors(g); i++)
            if ((const char *)gguf_tensor(g, i)->data < (const char *)base) base = gguf_tensor(g, i)->data;
        for (int i = 0; i < gguf_n_tensors(g); i++) print_tensor(gguf_tensor(g, i), base, "-");
        model_config c;
        if (config_from_gguf(g, &c, err) || config_validate(&c, argv[2], err)) { fprintf(stderr, "%s\n", err); return 2; }
        print_config(&c);
        print_keys(g);
        gguf_close(g);
    } else if (!strcmp(argv[1], "st")) {
        st_file *f;
        if (st_open(argv[2], &f, err)) { fprintf(stderr, "%s\n", err); return 2; }
        for (int i = 0; i < st_n_tensors(f); i++) {
            const char *p = st_tensor_path(f, i), *slash = strrchr(p, '/');
            print_tensor(st_tensor(f, i), st_tensor(f, i)->data, slash ? slash + 1 : p);
            if (st_find_tensor(f, st_tensor(f, i)->name) != st_tensor(f, i)) printf("E\tfind %d\n", i);
        }
        st_close(f);
    } else if (!strcmp(argv[1], "cfg")) {
        model_config c;
        if (config_from_json(argv[2], &c, err) || config_validate(&c, argv[2], err)) { fprintf(stderr, "%s\n", err); return 2; }
        print_config(&c);
    }
    return 0;
}
"""

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg)


def build_driver(tmp):
    missing = [o for o in OBJS if not os.path.exists(o)]
    if missing:
        subprocess.run(["make", "-s"] + missing, check=True)
    src = os.path.join(tmp, "drv.c")
    with open(src, "w") as f:
        f.write(DRIVER)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "jansson"], stdout=subprocess.PIPE,
                           universal_newlines=True).stdout.split()
    exe = os.path.join(tmp, "drv")
    subprocess.run(["cc", "-std=c11", "-O1", "-D_GNU_SOURCE", "-Wall", "-Isrc", "-o", exe, src] + OBJS
                   + flags + ["-ljansson", "-lm"], check=True)
    return exe


def run_driver(exe, mode, path, stdin=""):
    p = subprocess.run([exe, mode, path], input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        fail("%s %s: driver exit %d: %s" % (mode, path, p.returncode, p.stderr.strip()))
        return None
    return p.stdout.splitlines()


def parse_config_line(lines):
    for line in lines:
        if line.startswith("C\t"):
            return dict(kv.split("=", 1) for kv in line[2:].split())
    return {}


# ---- an independent GGUF reading -------------------------------------------------------------

GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
                11: "<q", 12: "<d"}
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
              8: ("Q8_0", 32, 34), 30: ("BF16", 1, 2)}


def read_gguf(path):
    data = open(path, "rb").read()
    pos = [4]  # after the magic

    def take(fmt):
        v = struct.unpack_from(fmt, data, pos[0])
        pos[0] += struct.calcsize(fmt)
        return v[0]

    def string():
        n = take("<Q")
        s = data[pos[0]:pos[0] + n]
        pos[0] += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            start = pos[0]
            items = [value(et) for _ in range(n)]
            return (et, n, items, data[start:pos[0]])
        return take(GGUF_SCALARS[t])

    assert data[:4] == b"GGUF", "bad magic"
    version, n_tensors, n_kv = take("<I"), take("<Q"), take("<Q")
    kvs = {}
    for _ in range(n_kv):
        k = string().decode()
        t = take("<I")
        kvs[k] = (t, value(t))
    infos = []
    for _ in range(n_tensors):
        name = string().decode()
        nd = take("<I")
        ne = [take("<Q") for _ in range(nd)]
        infos.append((name, ne, take("<I"), take("<Q")))
    align = kvs.get("general.alignment", (4, 32))[1]
    start = (pos[0] + align - 1) // align * align
    tensors = []
    for name, ne, t, off in infos:
        tname, be, bb = GGML_TYPES[t]
        n = 1
        for d in ne[1:]:
            n *= d
        nbytes = ne[0] // be * bb * n
        a = start + off
        tensors.append((name, tname, list(reversed(ne)), nbytes, a, zlib.crc32(data[a:a + nbytes])))
    return version, kvs, tensors


def expected_value(t, v):
    if t in (6, 12):
        return "f:%.17g" % v
    if t == 8:
        return "s:" + v.hex()
    if t == 9:
        et, n, items, raw = v
        if et == 8:
            c = 0
            for s in items:
                c = zlib.crc32(struct.pack("<Q", len(s)), c)
                c = zlib.crc32(s, c)
        elif et == 9:
            c = 0  # nested arrays: the driver reports no checksum for them
        else:
            c = zlib.crc32(raw)
        return "a:%d:%d:%d" % (et, n, c)
    return "i:%d" % int(v)


def check_gguf(exe):
    if not os.path.exists(MODEL):
        fail("%s is missing: run `make model` first" % MODEL)
        return
    version, kvs, tensors = read_gguf(MODEL)
    stdin = "".join("%s\t%d\n" % (k, t) for k, (t, _) in kvs.items())
    lines = run_driver(exe, "gguf", MODEL, stdin)
    if lines is None:
        return
    got_v = [l.split("\t")[1] for l in lines if l.startswith("V\t")]
    if got_v != [str(version)]:
        fail("gguf version: C %s, Python %d" % (got_v, version))
    # tensors: same order, and positions relative to the first byte of tensor data
    base = min(t[4] for t in tensors)
    want = ["T\t%s\t%s\t%s\t%d\t%d\t%d\t-" % (n, tn, ",".join(map(str, sh)), nb, a - base, c)
            for n, tn, sh, nb, a, c in tensors]
    got = [l for l in lines if l.startswith("T\t")]
    if got != want:
        diff = [(g, w) for g, w in zip(got, want) if g != w][:3]
        fail("gguf tensors differ (C %d, Python %d); first: %s" % (len(got), len(want), diff))
    got_k = {l.split("\t")[1]: l.split("\t")[2] for l in lines if l.startswith("K\t")}
    bad = [(k, got_k.get(k), expected_value(t, v)) for k, (t, v) in kvs.items()
           if got_k.get(k) != expected_value(t, v)]
    if bad:
        fail("gguf metadata differs for %d keys, first: %s" % (len(bad), bad[:3]))
    # facts about the default model (REFERENCE-FACTS.md section 1), independent of both parsers
    types = {}
    for t in tensors:
        types[t[1]] = types.get(t[1], 0) + 1
    facts = [("tensor count", len(tensors), 272), ("metadata keys", len(kvs), 33),
             ("version", version, 3), ("tensor types", types, {"Q4_1": 210, "F32": 61, "Q8_0": 1})]
    cfg = parse_config_line(lines)
    want_cfg = {"dim": "576", "n_layers": "30", "n_heads": "9", "n_kv_heads": "3", "head_dim": "64",
                "hidden_dim": "1536", "vocab_size": "49152", "max_pos": "8192", "rope_theta": "100000",
                "rope_scaling": "0", "tied_embeddings": "1", "rope_interleaved": "1", "bos_id": "1",
                "eos_ids": "2", "rms_eps": "9.99999975e-06"}
    facts += [("config " + k, cfg.get(k), v) for k, v in want_cfg.items()]
    for what, got_f, want_f in facts:
        if got_f != want_f:
            fail("default model %s: got %s, expected %s" % (what, got_f, want_f))
    print("gguf %s: %d tensors, %d keys checked" % (MODEL, len(tensors), len(kvs)))


# ---- an independent safetensors reading ------------------------------------------------------

def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack_from("<Q", data, 0)[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        a = 8 + n + b
        out[name] = (e["dtype"], ",".join(map(str, e["shape"])), end - b, zlib.crc32(data[a:a + end - b]),
                     os.path.basename(path))
    return out


def check_st(exe, path, want):
    lines = run_driver(exe, "st", path)
    if lines is None:
        return
    got = {}
    for l in lines:
        if l.startswith("E\t"):
            fail("%s: st_find_tensor disagrees with st_tensor: %s" % (path, l))
        if l.startswith("T\t"):
            _, name, dt, shape, nb, _off, c, shard = l.split("\t")
            got[name] = (dt, shape, int(nb), int(c), shard)
    if got != want:
        diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))[:3]
        fail("%s: tensors differ, e.g. %s" % (path, [(k, got.get(k), want.get(k)) for k in diff]))
    else:
        print("safetensors %s: %d tensors match" % (path, len(got)))


def check_config(exe, path):
    lines = run_driver(exe, "cfg", path)
    if lines is None:
        return
    c = parse_config_line(lines)
    j = json.load(open(path))
    if "text_config" in j and "hidden_size" not in j:  # a multimodal wrapper: its text model (Qwen3.5)
        j = dict(j["text_config"], **{k: j[k] for k in ("tie_word_embeddings",) if k in j})
    rp = j.get("rope_scaling") or j.get("rope_parameters") or {}
    if "full_attention" in rp:  # Gemma 3 (transformers 5): one dict per layer type; the global layers' here
        rp = rp["full_attention"]
    theta = rp.get("rope_theta", j.get("rope_theta", 10000.0))
    scaling = {"llama3": 1, "linear": 2, "longrope": 3, "su": 3, "yarn": 4}.get(rp.get("rope_type", rp.get("type")), 0)
    eos = j.get("eos_token_id", 2)
    eos = eos if isinstance(eos, list) else [eos]
    want = {"dim": j["hidden_size"], "n_layers": j["num_hidden_layers"],
            "n_heads": j["num_attention_heads"],
            "n_kv_heads": j.get("num_key_value_heads") or j["num_attention_heads"],
            "head_dim": j.get("head_dim") or j["hidden_size"] // j["num_attention_heads"],
            "hidden_dim": j["intermediate_size"], "vocab_size": j["vocab_size"],
            "max_pos": j.get("max_position_embeddings", 2048),
            "tied_embeddings": int(bool(j.get("tie_word_embeddings", False))),
            "rope_scaling": scaling,
            "bos_id": j.get("bos_token_id", 1), "eos_ids": ",".join(map(str, eos))}
    if j.get("model_type") == "gemma4_text":  # per-layer shapes: the full layers' head_dim, the largest width
        full = [str(i) for i, t in enumerate(j["layer_types"]) if t == "full_attention"]
        plc = j.get("per_layer_config") or {}
        want["head_dim"] = plc.get(full[0], {}).get("head_dim", j.get("global_head_dim", 512))
        kvs = [want["n_kv_heads"]] + [plc.get(f, {}).get("num_key_value_heads", 0) for f in full]
        want["n_kv_heads"] = max(kvs)
        if j.get("use_double_wide_mlp") and j.get("num_kv_shared_layers"):
            want["hidden_dim"] *= 2
    if j.get("model_type") == "lfm2":  # Lfm2MLP's width: block_ff_dim wins, 2/3 of it, rounded up when scaled
        ff = j.get("block_ff_dim") or j["intermediate_size"]
        if j.get("block_auto_adjust_ff_dim", True):
            ff = int(2 * ff / 3)
            if j.get("block_ffn_dim_multiplier", 1.0) is not None:
                ff = int(j.get("block_ffn_dim_multiplier", 1.0) * ff)
                mo = j.get("block_multiple_of", 256)
                ff = mo * ((ff + mo - 1) // mo)
        want["hidden_dim"] = ff
    bad = [(k, c.get(k), str(v)) for k, v in want.items() if c.get(k) != str(v)]
    if abs(float(c.get("rope_theta", "nan")) - theta) > 1e-6 * theta:
        bad.append(("rope_theta", c.get("rope_theta"), theta))
    eps = j.get("rms_norm_eps", j.get("norm_eps", 1e-6))  # norm_eps: LFM2's name
    if abs(float(c.get("rms_eps", "nan")) - eps) > 1e-12:
        bad.append(("rms_eps", c.get("rms_eps"), eps))
    if want["rope_scaling"] == 1:
        if float(c["rope_factor"]) != rp["factor"]:
            bad.append(("rope_factor", c["rope_factor"], rp["factor"]))
        orig = rp.get("original_max_position_embeddings", want["max_pos"])
        if c["rope_orig_max_pos"] != str(orig):
            bad.append(("rope_orig_max_pos", c["rope_orig_max_pos"], orig))
    if bad:
        fail("%s: config differs: %s" % (path, bad))
    else:
        print("config %s: matches" % path)


def make_sharded(src, tmp):
    """Split one single-file fixture into two shards plus an index, as save_pretrained does."""
    data = open(src, "rb").read()
    n = struct.unpack_from("<Q", data, 0)[0]
    header = json.loads(data[8:8 + n])
    names = sorted(k for k in header if k != "__metadata__")
    halves = [names[:len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    want = {}
    for i, part in enumerate(halves):
        shard = "model-%05d-of-00002.safetensors" % (i + 1)
        blob, hdr = b"", {}
        for name in reversed(part):  # a different order than the source, on purpose
            e = header[name]
            b, end = e["data_offsets"]
            piece = data[8 + n + b:8 + n + end]
            hdr[name] = {"dtype": e["dtype"], "shape": e["shape"],
                         "data_offsets": [len(blob), len(blob) + len(piece)]}
            blob += piece
            weight_map[name] = shard
            want[name] = (e["dtype"], ",".join(map(str, e["shape"])), len(piece), zlib.crc32(piece), shard)
        h = json.dumps(hdr).encode()
        h += b" " * (-len(h) % 8)
        with open(os.path.join(tmp, shard), "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + blob)
    idx = os.path.join(tmp, "model.safetensors.index.json")
    with open(idx, "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
    return idx, want


def main():
    os.chdir(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_driver(tmp)
        check_gguf(exe)
        dirs = sorted(glob.glob("tests/fixtures/*/")) + sorted(glob.glob(".cache/fixtures/*/"))
        for d in dirs:
            st = os.path.join(d, "model.safetensors")
            if os.path.exists(st):
                check_st(exe, st, read_st(st))
            cfg = os.path.join(d, "config.json")
            if os.path.exists(cfg):
                check_config(exe, cfg)
        small = sorted(glob.glob("tests/fixtures/*/model.safetensors"))
        if small:
            idx, want = make_sharded(small[0], tmp)
            check_st(exe, idx, want)
        else:
            fail("no tests/fixtures/*/model.safetensors to shard")
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    print("readers agree with the independent parse")
    return 0


if __name__ == "__main__":
    sys.exit(main())
