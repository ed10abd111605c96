#!/usr/bin/env python3
"""Gemma 4's layers that read another layer's cache, through every way a run can be cut up (run by
`make test`).

Usage: check_gemma4.py

On tests/refs/tiny-gemma4-f32's longest case (300 prompt ids, 32 greedy ids; check_refs.py compares them
with HF's: sliding window 24, llmgen's ring of 256 positions wrapped in prefill, kv-shared layers 4 and 5
reading layers 3 and 2), in --exact on the f32 directory and in fast mode on the converter's Q8_0 GGUF:

  KV memory     --stats -c 1024: 1.4 MiB (ring 256): the four layers that own a cache (three sliding rings
                of 256 positions, one full layer of 1024, f32), not the 2.5 MiB six would hold
  threads       -t 1 and -t 2 give the same ids and logits bytes (--dump-logits)
  prompt cache  caches saved after 100 and 260 prompt tokens reused by the full prompt: ids and logits
                bytes equal the uncached run (prefill rows cut at another place); a cache cut short is
                ignored with a one-line note
  draft         --draft-lookup (passes of drafts, the rejected part taken back) gives the greedy ids
  batch         four requests through --batch (prefix cache on), --no-prefix-cache, --parallel 2 and 4:
                the same ids and logprobs; the prefix cache reuses 260 tokens (their window still in the
                ring) and not 100 (overwritten)

The Q8_0 file's fast-vs-exact logits are gated by check_family_fast.py (its first case: 7.1e-2, bound 0.08,
32 of 32 ids equal). On this longest case they differ by 9.5e-2 over the 7 steps before the first
differing id: attention scale 1 lets the int8 / bf16 rounding of fast mode move the softmax more than in
the other families (with q / k norm weights of 0.3 instead of about 0.6, 1.4e-2 to 2.1e-2).

These are check_hybrid.py's checks (imported), on this fixture. Environment: LLMGEN (binary, default
./llmgen). Standard library only; exits 1 on any failure.
"""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_hybrid as H  # noqa: E402

NAME = "tiny-gemma4-f32"
KV_MIB = "1.4"  # (3 * 2 * 2 * 256 * 32 + 2 * 2 * 1024 * 64) * 4 bytes, f32 (--exact)


def main():
    if not os.access(H.LLMGEN, os.X_OK):
        print("check_gemma4: %s is not built (make llmgen)" % H.LLMGEN)
        return 1
    H.NAME = NAME
    with open(os.path.join(H.REFS, NAME + ".json")) as f:
        ref = json.load(f)
    case = ref["cases"][-1]
    model = os.path.join(H.REPO, ref["model"]["repo"])
    q8 = os.path.join(H.REPO, ref["gguf_q8_0"]["file"])
    with tempfile.TemporaryDirectory() as tmp:
        try:
            rc, _, err = H.run(["-m", model, "--prompt-ids", "1,2,3", "-n", "1", "--ids", "--stats", "-c", "1024",
                                "--exact"])
            m = re.search(r"KV cache ([0-9.]+) MiB \(ring (\d+)\)", err)
            H.check(rc == 0 and m and m.group(1) == KV_MIB and m.group(2) == "256",
                    "%s: --stats -c 1024: KV cache %s MiB, ring %s (want %s MiB: the kv-shared layers own none, "
                    "ring 256)" % (NAME, m.group(1) if m else "?", m.group(2) if m else "?", KV_MIB))
            H.check_model(NAME, model, case["prompt_ids"], case["ids"], ["--exact"], tmp)
            H.check_model(NAME + " q8_0 fast", q8, case["prompt_ids"], None, [], tmp)
        except (RuntimeError, ValueError, OSError, KeyError) as e:
            H.check(False, "%s: %s" % (NAME, e))
    print("check_gemma4: %s" % ("all passed" if not H.failures else "%d FAILED" % H.failures))
    return 1 if H.failures else 0


if __name__ == "__main__":
    sys.exit(main())
