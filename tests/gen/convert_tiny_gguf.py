#!/usr/bin/env python3
"""llama.cpp's convert_hf_to_gguf.py on a tiny checkpoint that has no tokenizer.

Usage: convert_tiny_gguf.py LLAMA_CPP_DIR MODEL_DIR OUT.gguf OUTTYPE     (OUTTYPE: f32 | q8_0)

LLAMA_CPP_DIR is the llama.cpp tree vendored by the pinned llama-cpp-python sdist (`make peer` unpacks
it under .cache/peer/); its own gguf-py and its `conversion` package are imported from there, never the
gguf wheel of a venv. The model class is the converter's own choice for the checkpoint's
`architectures` (get_model_architecture / get_model_class, exactly as convert_hf_to_gguf.main does), so
the hyperparameter keys, tensor names and tensor transformations (Q/K row permutation of the llama-like
architectures, Gemma's stored 1 + w norms, Phi-3's fused tensors and rope factor tensors) are the
converter's. One step is replaced: set_vocab writes tokenizer.ggml.model = "none" (the converter's own
_set_vocab_none), since the random checkpoints have no tokenizer (llmgen runs them with --prompt-ids);
and a checkpoint without MTP layers converts as with the converter's --no-mtp.

Gemma 3's tensor step opens the tokenizer to drop embedding rows past the real vocabulary; the
conversion runs on a copy of MODEL_DIR with a tokenizer.json that lists exactly vocab_size tokens (so
no row is dropped) and nothing else of a tokenizer.

Prints the written key-value pairs and tensors (name, type, shape) as JSON on stdout.
"""
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: convert_tiny_gguf.py LLAMA_CPP_DIR MODEL_DIR OUT.gguf f32|q8_0")
    llama_cpp, model_dir, out, outtype = sys.argv[1:]
    sys.path.insert(0, os.path.join(llama_cpp, "gguf-py"))
    sys.path.insert(0, llama_cpp)
    import gguf  # the sdist's gguf-py
    import torch
    from conversion import ModelBase, ModelType, get_model_architecture, get_model_class

    if not os.path.abspath(gguf.__file__).startswith(os.path.abspath(llama_cpp)):
        sys.exit("convert_tiny_gguf: imported gguf from %s, not from %s" % (gguf.__file__, llama_cpp))
    ftype = {"f32": gguf.LlamaFileType.ALL_F32, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[outtype]

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / Path(model_dir).name
        shutil.copytree(model_dir, src, ignore=shutil.ignore_patterns("*.gguf"))
        with open(src / "config.json") as f:
            cfg = json.load(f)
        vocab = cfg.get("vocab_size") or cfg["text_config"]["vocab_size"]
        with open(src / "tokenizer.json", "w") as f:  # read only by Gemma 3's row trimming
            json.dump({"model": {"vocab": {"t%d" % i: i for i in range(vocab)}}, "added_tokens": []}, f)

        hparams = ModelBase.load_hparams(src, False)
        arch = get_model_architecture(hparams, ModelType.TEXT)
        base = get_model_class(arch, mmproj=False)

        class NoTokenizer(base):
            model_arch = base.model_arch  # the converter requires each class to name its arch
            # the converter's --no-mtp for a checkpoint without MTP layers (Qwen3.5's tiny ones), which
            # it would otherwise count from the config and fail to find
            if getattr(base, "supports_mtp_export", False) and not hparams.get("mtp_num_hidden_layers"):
                no_mtp = True

            def set_vocab(self):
                self._set_vocab_none()

        with torch.inference_mode():
            m = NoTokenizer(src, ftype, Path(out), is_big_endian=False, use_temp_file=False, eager=False,
                            metadata_override=None, model_name=None, split_max_tensors=0, split_max_size=0,
                            dry_run=False, small_first_shard=False, remote_hf_model_id=None)
            m.write()

    r = gguf.GGUFReader(out)
    kv = {}
    for name, field in r.fields.items():
        if name.startswith("GGUF."):
            continue
        v = field.contents()
        kv[name] = v
    tensors = [[t.name, t.tensor_type.name, [int(x) for x in t.shape]] for t in r.tensors]
    json.dump({"converter_class": base.__name__, "hf_architecture": arch, "kv": kv, "tensors": tensors},
              sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
