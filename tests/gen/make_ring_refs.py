#!/usr/bin/env python3
"""Tiny sliding-window checkpoints whose sequences outgrow llmgen's ring buffer, with their HF
transformers references (make ring-refs; never run by CI).

Usage: make_ring_refs.py CACHE [NAME...]      (the venv of requirements-ref.txt)

llmgen keeps a sliding-window layer's cache in a ring of window + 190 positions rounded up to 64
(src/model/forward.c fwd_ring_size) once the context is longer than that. The family fixtures of
make_family_refs.py have a 256-position context and 12 + 32 tokens, so their rings never fill. These
have a 1024-position context, a window of 70 or 100 (a ring of 320) and a 600-token random prompt
with 48 greedy steps: prefill runs past the wrap at 320 in the chunk [256, 384) (llmgen prefills 128
tokens per call), whose rows read across it; decode crosses the second wrap at 640 (steps 41-47).

Everything else is make_family_refs.py's build(): save_pretrained of random weights (its
init_weights), the greedy manual loop of make_refs.py, the f32-vs-f64 and no-cache consistency
numbers, the GGUF conversion by the pinned llama.cpp sdist where the file keeps the semantics, and
the JSON layout of tests/refs/README.md. Files:
  tests/fixtures/tiny-<family>-ring-f32/        config.json, model.safetensors (+ model.f32.gguf)
  tests/refs/tiny-<family>-ring-f32.json        HF's ids, gaps, f64 / no-cache errors
             + .logits.bin                      every step's full logits
  tests/refs/ring-fixtures.json                 per fixture: what it exercises, sizes and sha256
tests/cli/check_refs.py runs them with the other tiny references; tests/cli/check_ring.py adds
thread-count, --parallel and --prompt-cache equality on them.
"""
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_family_refs as MF  # noqa: E402
import make_refs as R  # noqa: E402

PROMPT_LEN = 600
STEPS = 48
SUMMARY = os.path.join(R.REFS, "ring-fixtures.json")
SEED_BASE = 100  # build() seeds 5000 + idx, 6000 + idx, 7000 + idx: clear of make_family_refs' indices

# the entry layout of make_family_refs.FIXTURES
FIXTURES = [
    ("tiny-gemma3-ring-f32", "gemma3_text",
     dict(vocab_size=320, hidden_size=64, intermediate_size=96, num_hidden_layers=6, num_attention_heads=4,
          num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16, sliding_window=70,
          tie_word_embeddings=False, rms_norm_eps=1e-6, final_logit_softcapping=None,
          max_position_embeddings=1024,
          rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                           "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}),
     "float32", True, False, None,
     "a ring that wraps: default layer pattern (layers 0-4 sliding, window 70, layer 5 global), context "
     "1024, a 600-token prompt and 48 steps (llmgen's ring of 320 wraps in prefill and in decode); GQA 4/2, "
     "untied", dict(tied_std=0.2)),
    ("tiny-mistral-ring-f32", "mistral",
     dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=1, head_dim=16, sliding_window=100, tie_word_embeddings=False, rms_norm_eps=1e-5,
          max_position_embeddings=1024, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
     "float32", MF.NO_GGUF_MISTRAL_SWA, False, None,
     "a ring that wraps: sliding_window 100 on every layer, context 1024, a 600-token prompt and 48 steps "
     "(llmgen's ring of 320 wraps in prefill and in decode); MQA, untied"),
]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_ring_refs.py CACHE [NAME...]")
    cache, only = sys.argv[1], set(sys.argv[2:])
    torch.set_num_threads(R.THREADS)
    torch.use_deterministic_algorithms(True)
    MF.PROMPT_LEN, MF.STEPS = PROMPT_LEN, STEPS
    llama_cpp = MF.llama_cpp_tree(cache)
    vers = R.versions()
    vers["llama_cpp_sdist"] = os.path.relpath(llama_cpp, cache).split("/")[-3]
    summary = MF.R_load(SUMMARY).get("fixtures", {}) if os.path.exists(SUMMARY) else {}
    t0 = time.time()
    for i, entry in enumerate(FIXTURES):
        if only and entry[0] not in only:
            continue
        summary[entry[0]] = MF.build(SEED_BASE + i, entry, llama_cpp, vers)
    summary = {k: summary[k] for k in [e[0] for e in FIXTURES] if k in summary}
    R.write_json(SUMMARY, {"made_by": "tests/gen/make_ring_refs.py (make ring-refs)", "versions": vers,
                           "prompt_len": PROMPT_LEN, "steps": STEPS, "fixtures": summary})
    MF.log("ring fixtures done in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
