#!/usr/bin/env python3
"""Rebuild the random-weight checkpoints with the exact Qwen3-0.6B, Qwen2.5-0.5B and Gemma-3-1B
configs, bit for bit, without torch (familylib.py says how the values are drawn).

Usage: build_family_models.py CACHE [NAME ...]     (run by `make family-models` in the tools venv)

Writes CACHE/families/<name>/ (config.json copied from tests/gen/<name>/config.json, bf16
model.safetensors) for name in qwen3-0.6b-random qwen2.5-0.5b-random gemma3-1b-random, and checks
each against tests/refs/families/fixtures.json (content sha256 of the weights, sha256 of config.json;
recorded by make_family_model_refs.py). A fixture whose `.stamp` equals its entry is not rebuilt.
Not part of `make fixtures` / `make test`: together they are 4.2 GB.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import familylib as L  # noqa: E402
import fixturelib as F  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKSUMS = os.path.join(REPO, "tests", "refs", "families", "fixtures.json")


def config_path(name):
    return os.path.join(REPO, "tests", "gen", name, "config.json")


def load_checksums():
    if not os.path.exists(CHECKSUMS):
        return {}
    with open(CHECKSUMS) as f:
        return json.load(f)


def describe(out_dir):
    st = os.path.join(out_dir, "model.safetensors")
    return {"model.safetensors": {"content_sha256": F.content_hash(st), "size": os.path.getsize(st)},
            "config.json": {"sha256": F.sha256_file(os.path.join(out_dir, "config.json"))}}


def stamp_ok(out_dir, expected):
    stamp = os.path.join(out_dir, ".stamp")
    if expected is None or not os.path.exists(stamp):
        return False
    with open(stamp) as f:
        if json.load(f) != expected:
            return False
    st = os.path.join(out_dir, "model.safetensors")
    cfg = os.path.join(out_dir, "config.json")
    return (os.path.exists(st) and os.path.getsize(st) == expected["model.safetensors"]["size"]
            and os.path.exists(cfg) and F.sha256_file(cfg) == expected["config.json"]["sha256"])


def build_one(cache, name):
    out = os.path.join(cache, "families", name)
    os.makedirs(out, exist_ok=True)
    stamp = os.path.join(out, ".stamp")
    if os.path.exists(stamp):
        os.unlink(stamp)
    src = config_path(name)
    if not os.path.exists(src):
        raise SystemExit("family-models: %s is missing (make family-model-refs writes it)" % src)
    with open(src, "rb") as f:
        raw = f.read()
    cfg = json.loads(raw)
    L.write_model(os.path.join(out, "model.safetensors"), cfg, name)
    with open(os.path.join(out, "config.json"), "wb") as f:
        f.write(raw)
    return out


def verify(out_dir, name, expected):
    got = describe(out_dir)
    if expected is None:
        raise SystemExit("family-models: no checksum for %s in %s (make family-model-refs records it)"
                         % (name, os.path.relpath(CHECKSUMS, REPO)))
    if got != expected:
        for key in sorted(set(got) | set(expected)):
            if got.get(key) != expected.get(key):
                print("family-models: MISMATCH %s/%s: built %s, committed %s"
                      % (name, key, got.get(key), expected.get(key)), file=sys.stderr)
        raise SystemExit("family-models: %s does not match %s" % (name, os.path.relpath(CHECKSUMS, REPO)))
    with open(os.path.join(out_dir, ".stamp"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    print("family-models: %s verified (content sha256 %s)"
          % (name, expected["model.safetensors"]["content_sha256"][:16]), file=sys.stderr)


def build(cache, names=L.MODELS, check=True):
    sums = load_checksums()
    dirs = {}
    for name in names:
        if name not in L.MODELS:
            raise SystemExit("family-models: unknown model %s (known: %s)" % (name, " ".join(L.MODELS)))
        out = os.path.join(cache, "families", name)
        dirs[name] = out
        if check and stamp_ok(out, sums.get(name)):
            print("family-models: %s up to date" % name, file=sys.stderr)
            continue
        t = time.time()
        build_one(cache, name)
        print("family-models: built %s in %.1f s" % (name, time.time() - t), file=sys.stderr)
        if check:
            verify(out, name, sums.get(name))
    return dirs


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: build_family_models.py CACHE [NAME ...]")
    build(sys.argv[1], tuple(sys.argv[2:]) or L.MODELS)


if __name__ == "__main__":
    main()
