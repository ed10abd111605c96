#!/usr/bin/env python3
"""Rebuild the test fixtures that are too large for git, bit for bit, without torch.

Usage: build_fixtures.py CACHE          (run by `make fixtures` in the venv of requirements-tools.txt)

Writes
  CACHE/fixtures/llama-1b-random/   config.json + bf16 model.safetensors with the exact Llama-3.2-1B
                                    config and deterministic random weights (fixturelib.write_llama_1b)
  CACHE/fixtures/smollm2-hf-f32/    the default GGUF as an HF directory (what transformers'
  CACHE/fixtures/smollm2-hf-bf16/   save_pretrained writes), f32 and bf16

and checks each one against the checksums committed in tests/refs/fixtures.json (written by
make_refs.py from the directories the references were computed with): a content hash of the weights
(tensor names, dtypes, shapes, data) and the sha256 of every small file. Any mismatch is an error.
A fixture whose `.stamp` equals its committed entry is not rebuilt, so a second run takes a second.
"""
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixturelib as F  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKSUMS = os.path.join(REPO, "tests", "refs", "fixtures.json")
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_SMALL = ["tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja"]


def small_files(name):
    """{dest file name: source path in the repo} of the committed small files of a fixture."""
    if name == "llama-1b-random":
        return {"config.json": os.path.join(REPO, "tests", "gen", "llama-1b-random", "config.json")}
    sub = "f32" if name.endswith("f32") else "bf16"
    base = os.path.join(REPO, "tests", "fixtures", "smollm2-hf")
    files = {f: os.path.join(base, f) for f in SMOL_SMALL}
    files["config.json"] = os.path.join(base, sub, "config.json")
    return files


def load_checksums():
    if not os.path.exists(CHECKSUMS):
        return {}
    with open(CHECKSUMS) as f:
        return json.load(f)


def describe(out_dir, name):
    """The checksum entry of a built fixture directory (what fixtures.json stores)."""
    st = os.path.join(out_dir, "model.safetensors")
    entry = {"model.safetensors": {"content_sha256": F.content_hash(st), "size": os.path.getsize(st)}}
    for f in sorted(small_files(name)):
        entry[f] = {"sha256": F.sha256_file(os.path.join(out_dir, f))}
    return entry


def stamp_ok(out_dir, expected):
    """True when the directory was built and verified against exactly this entry before."""
    stamp = os.path.join(out_dir, ".stamp")
    if expected is None or not os.path.exists(stamp):
        return False
    with open(stamp) as f:
        if json.load(f) != expected:
            return False
    st = os.path.join(out_dir, "model.safetensors")
    return os.path.exists(st) and os.path.getsize(st) == expected["model.safetensors"]["size"] and all(
        os.path.exists(os.path.join(out_dir, f)) for f in expected if f != "model.safetensors")


def copy_small(out_dir, name):
    for dest, src in small_files(name).items():
        if not os.path.exists(src):
            raise SystemExit("fixtures: %s is missing (committed input of %s)" % (src, name))
        shutil.copyfile(src, os.path.join(out_dir, dest))


def verify(out_dir, name, expected):
    got = describe(out_dir, name)
    if expected is None:
        raise SystemExit("fixtures: no committed checksum for %s in %s; make_refs.py records it"
                         % (name, os.path.relpath(CHECKSUMS, REPO)))
    if got != expected:
        for key in sorted(set(got) | set(expected)):
            if got.get(key) != expected.get(key):
                print("fixtures: MISMATCH %s/%s: built %s, committed %s"
                      % (name, key, got.get(key), expected.get(key)), file=sys.stderr)
        raise SystemExit("fixtures: %s does not match tests/refs/fixtures.json (see above)" % name)
    with open(os.path.join(out_dir, ".stamp"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    print("fixtures: %s verified (content sha256 %s)"
          % (name, expected["model.safetensors"]["content_sha256"][:16]), file=sys.stderr)


def build_llama_1b(cache):
    out = os.path.join(cache, "fixtures", "llama-1b-random")
    os.makedirs(out, exist_ok=True)
    stamp = os.path.join(out, ".stamp")
    if os.path.exists(stamp):
        os.unlink(stamp)
    F.write_llama_1b(os.path.join(out, "model.safetensors"))
    copy_small(out, "llama-1b-random")
    return out


def build_smollm2(cache):
    outs = {}
    for dt in ("f32", "bf16"):
        outs[dt] = os.path.join(cache, "fixtures", "smollm2-hf-" + dt)
        os.makedirs(outs[dt], exist_ok=True)
        stamp = os.path.join(outs[dt], ".stamp")
        if os.path.exists(stamp):
            os.unlink(stamp)
    gguf = os.path.join(cache, "models", GGUF_NAME)
    if not os.path.exists(gguf):
        raise SystemExit("fixtures: %s missing (make model)" % gguf)
    F.write_gguf_as_hf(gguf, os.path.join(outs["f32"], "model.safetensors"),
                       os.path.join(outs["bf16"], "model.safetensors"))
    for dt, out in outs.items():
        copy_small(out, "smollm2-hf-" + dt)
    return outs


def build(cache, names=("llama-1b-random", "smollm2-hf-f32", "smollm2-hf-bf16"), check=True):
    """Build what is stale; verify against fixtures.json when check is set. Returns {name: dir}."""
    sums = load_checksums()
    dirs = {}
    for name in names:
        if name in dirs:  # built together with its sibling
            continue
        out = os.path.join(cache, "fixtures", name)
        dirs[name] = out
        if check and stamp_ok(out, sums.get(name)):
            print("fixtures: %s up to date" % name, file=sys.stderr)
            continue
        t = time.time()
        if name == "llama-1b-random":
            build_llama_1b(cache)
        elif name.startswith("smollm2-hf-"):
            other = "smollm2-hf-bf16" if name.endswith("f32") else "smollm2-hf-f32"
            build_smollm2(cache)  # writes both dtypes in one pass over the GGUF
            if other in names:
                dirs[other] = os.path.join(cache, "fixtures", other)
                if check:
                    verify(dirs[other], other, sums.get(other))
        else:
            raise SystemExit("fixtures: unknown fixture %s" % name)
        print("fixtures: built %s in %.1f s" % (name, time.time() - t), file=sys.stderr)
        if check:
            verify(out, name, sums.get(name))
    return dirs


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: build_fixtures.py CACHE")
    t = time.time()
    build(sys.argv[1])
    print("fixtures: all verified in %.1f s" % (time.time() - t), file=sys.stderr)


if __name__ == "__main__":
    main()
