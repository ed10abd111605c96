#!/usr/bin/env python3
"""Reference filtered distributions for llmgen's sampler, from transformers' own logits processors.

For each case: random float32 logits (fixed numpy seed), a history of ids and sampling
parameters. The processor list is the one transformers' GenerationMixin._get_logits_processor
builds for that GenerationConfig (on a throwaway 1-layer Llama, so the order and the on/off rules
are transformers' own, not ours); the stored distribution is softmax(processed scores).
tests/unit/test_sampler_ref.c compares llmgen's sampler_probs with it.

Usage (needs the reference venv, see tests/gen/requirements-ref.txt):
    .cache/venv-ref/bin/python tests/gen/make_sampler_refs.py
Writes tests/refs/sampler/sampler_ref.json (versions recorded inside). Never run by CI.
"""
import json
import os
import platform

import numpy as np
import torch
import transformers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "tests", "refs", "sampler", "sampler_ref.json")

# name, vocab, logit scale, quantum (0 = none; > 0 rounds logits to make ties), history, params
CASES = [
    ("temperature", 1000, 3.0, 0, [], dict(temperature=0.7)),
    ("top_k", 1000, 3.0, 0, [], dict(temperature=1.0, top_k=40)),
    ("top_k_ties", 1000, 3.0, 0.5, [], dict(temperature=1.0, top_k=25)),
    ("top_p", 1000, 3.0, 0, [], dict(temperature=0.8, top_p=0.9)),
    ("top_p_wide", 4096, 1.5, 0, [], dict(temperature=1.0, top_p=0.5)),
    ("min_p", 1000, 3.0, 0, [], dict(temperature=1.0, min_p=0.05)),
    ("hot_min_p", 1000, 3.0, 0, [], dict(temperature=1.5, min_p=0.1)),
    ("penalty_only", 1000, 3.0, 0, [3, 7, 7, 11, 500, 999, 0], dict(temperature=1.0, repetition_penalty=1.3)),
    ("all_filters", 4096, 4.0, 0, [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597],
     dict(temperature=0.8, top_k=50, top_p=0.95, min_p=0.02, repetition_penalty=1.1)),
    ("k_then_p", 1000, 2.0, 0, [], dict(temperature=1.2, top_k=100, top_p=0.8)),
    ("greedy_penalty", 1000, 3.0, 0, None, dict(do_sample=False, repetition_penalty=2.0)),
]


def processors_for(params, vocab, n_history):
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1)
    model = LlamaForCausalLM(cfg)
    gc_args = dict(do_sample=True, top_k=0, top_p=1.0, min_p=None, temperature=1.0, repetition_penalty=1.0)
    gc_args.update(params)
    gc = GenerationConfig(**gc_args)
    return model._get_logits_processor(generation_config=gc, input_ids_seq_length=max(n_history, 1),
                                       encoder_input_ids=None, device="cpu", model_kwargs={})


def main():
    rng = np.random.default_rng(20261122)
    cases = []
    for name, vocab, scale, quantum, history, params in CASES:
        logits = (rng.standard_normal(vocab) * scale).astype(np.float32)
        if quantum:
            logits = (np.round(logits / quantum) * quantum).astype(np.float32)
        if history is None:  # greedy case: put the argmax in the history so the penalty matters
            history = [int(np.argmax(logits))]
        procs = processors_for(params, vocab, len(history))
        ids = torch.tensor([history if history else [0]], dtype=torch.long)
        scores = torch.from_numpy(logits.copy())[None, :]
        if not history:  # an empty history: no id was seen (the dummy id 0 above must not be penalized)
            procs = [p for p in procs if type(p).__name__ != "RepetitionPenaltyLogitsProcessor"]
        for p in procs:
            scores = p(ids, scores)
        if params.get("do_sample", True):
            probs = torch.softmax(scores, dim=-1)[0].double().numpy()
        else:
            probs = np.zeros(vocab)
            probs[int(torch.argmax(scores[0]))] = 1.0
        full = dict(temperature=0.0 if not params.get("do_sample", True) else params.get("temperature", 1.0),
                    top_k=params.get("top_k", 0), top_p=params.get("top_p", 1.0), min_p=params.get("min_p", 0.0),
                    repeat_penalty=params.get("repetition_penalty", 1.0))
        cases.append({"name": name, "vocab": vocab, "params": full, "history": history,
                      "processors": [type(p).__name__ for p in procs],
                      "kept": int((probs > 0).sum()),
                      "logits": [float(x) for x in logits], "probs": [float(x) for x in probs]})
        print("%-15s V=%-5d kept %-5d %s" % (name, vocab, cases[-1]["kept"], cases[-1]["processors"]))
    doc = {"generator": "tests/gen/make_sampler_refs.py",
           "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                        "numpy": np.__version__, "python": platform.python_version()},
           "note": "probs = softmax of the scores after transformers' logits processors (float32), 0 = removed",
           "cases": cases}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", os.path.relpath(OUT, REPO))


if __name__ == "__main__":
    main()
