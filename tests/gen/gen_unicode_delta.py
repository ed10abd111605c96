#!/usr/bin/env python3
"""Writes vendor-free-tokenizer/unicode_delta.h.

1. The code points that the reference's regex engine (Oniguruma inside HF `tokenizers`, pinned in
requirements-tok.txt) puts in \\p{L} / \\p{N} but the system PCRE2 does not,
because PCRE2's Unicode tables are older (PCRE2 10.42 knows Unicode 14; the
reference knows Unicode 16: e.g. Egyptian Hieroglyphs Extended-A, U+13460..).
The tokenizer adds these ranges to \\p{L} / \\p{N} when it compiles a pattern.

2. The code points that the reference's normalizers (the unicode-normalization
crate inside `tokenizers`, Unicode 13 data) treat as plain starters (no
decomposition, combining class 0, no composition) but the system utf8proc
(2.8: Unicode 15) does not: e.g. U+1AC1..U+1ACE got combining classes in
Unicode 14. The normalizer treats them as barriers: the text around each is
normalized separately and the code point kept as it is, which is exactly what
an unassigned code point gets.

Usage: gen_unicode_delta.py   (with the Python of a venv holding `tokenizers`;
PCRE2 is called through ctypes from the system's libpcre2-8)
"""
import ctypes
import ctypes.util
import os

from tokenizers import Regex, pre_tokenizers

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "vendor-free-tokenizer", "unicode_delta.h")
PCRE2_UTF, PCRE2_UCP = 0x00080000, 0x00020000


def all_scalars():
    return [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def onig_set(prop):
    """Code points matching prop in Oniguruma: split a string of every scalar
    value (each after a separator that never matches) with behavior `removed`."""
    sep = "\x00"
    split = pre_tokenizers.Split(Regex(prop), "isolated")
    cps = [c for c in all_scalars() if c != 0]
    out = set()
    chunk = 50000
    for i in range(0, len(cps), chunk):
        part = cps[i:i + chunk]
        s = sep.join(chr(c) for c in part)
        for piece, (a, b) in split.pre_tokenize_str(s):
            if piece != sep and len(piece) == 1 and piece != "\x00":
                out.add(ord(piece))
    return out


def pcre2_set(prop):
    lib = ctypes.CDLL(ctypes.util.find_library("pcre2-8") or "libpcre2-8.so.0")
    lib.pcre2_compile_8.restype = ctypes.c_void_p
    lib.pcre2_compile_8.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32,
                                    ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p]
    lib.pcre2_match_data_create_8.restype = ctypes.c_void_p
    lib.pcre2_match_data_create_8.argtypes = [ctypes.c_uint32, ctypes.c_void_p]
    lib.pcre2_match_8.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t,
                                  ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p]
    ec, eo = ctypes.c_int(), ctypes.c_size_t()
    pat = ("^" + prop + "$").encode()
    code = lib.pcre2_compile_8(pat, len(pat), PCRE2_UTF | PCRE2_UCP, ctypes.byref(ec), ctypes.byref(eo), None)
    md = lib.pcre2_match_data_create_8(1, None)
    out = set()
    for c in all_scalars():
        b = chr(c).encode("utf-8")
        if lib.pcre2_match_8(code, b, len(b), 0, 0, md, None) >= 0:
            out.add(c)
    return out


def utf8proc_fn(name):
    lib = ctypes.CDLL(ctypes.util.find_library("utf8proc") or "libutf8proc.so.2")
    f = getattr(lib, name)
    f.restype = ctypes.c_void_p
    f.argtypes = [ctypes.c_char_p]
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]

    def call(s):
        p = f(s.encode("utf-8") + b"\0")
        out = ctypes.string_at(p).decode("utf-8")
        libc.free(p)
        return out
    return call


def normalization_barriers():
    """Code points on which HF and utf8proc disagree in a probe of their
    decomposition, combining class or composition."""
    from tokenizers import normalizers
    hf = {"NFD": normalizers.NFD(), "NFC": normalizers.NFC(), "NFKD": normalizers.NFKD(), "NFKC": normalizers.NFKC()}
    up = {k: utf8proc_fn("utf8proc_" + k) for k in hf}
    probes = []  # (code point, form, text)
    for c in all_scalars():
        if c == 0:
            continue
        ch = chr(c)
        for form in ("NFD", "NFKD"):
            probes.append((c, form, ch))
        probes.append((c, "NFD", "\u0345" + ch))   # reordered iff 0 < ccc < 240
        probes.append((c, "NFD", ch + "\u0334"))   # reordered iff ccc > 1
        probes.append((c, "NFC", "a" + ch))         # composes with a preceding letter
        probes.append((c, "NFC", ch + "\u0301"))   # composes with a following mark
    bad = set()
    sep = "\x00"  # code point 0 is never probed
    for form in hf:
        ps = [p for p in probes if p[1] == form]
        for i in range(0, len(ps), 20000):
            chunk = ps[i:i + 20000]
            joined = sep.join(p[2] for p in chunk)
            got_hf = hf[form].normalize_str(joined).split(sep)
            assert len(got_hf) == len(chunk)
            for p, h in zip(chunk, got_hf):
                if p[0] in bad:
                    continue
                if h != up[form](p[2]):
                    bad.add(p[0])
    return bad


def ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def as_class(rs):
    return "".join("\\\\x{%x}" % a if a == b else "\\\\x{%x}-\\\\x{%x}" % (a, b) for a, b in rs)


def main():
    import tokenizers
    lines = ["/* unicode_delta.h - generated by tests/gen/gen_unicode_delta.py (tokenizers %s); do not edit."
             % tokenizers.__version__,
             " * Code points in the reference regex engine's \\p{L} / \\p{N} that the system",
             " * PCRE2 (its Unicode tables are older) does not match, as class-body ranges. */",
             "#ifndef VFT_UNICODE_DELTA_H", "#define VFT_UNICODE_DELTA_H", ""]
    for prop, name in (("\\p{L}", "TOK_DELTA_L"), ("\\p{N}", "TOK_DELTA_N")):
        o, p = onig_set(prop), pcre2_set(prop)
        extra, missing = o - p, p - o
        print("%s: reference %d, PCRE2 %d, added %d, PCRE2-only %d" % (prop, len(o), len(p), len(extra), len(missing)))
        lines.append("#define %s \"%s\"" % (name, as_class(ranges(extra))))
    bar = normalization_barriers()
    print("normalization barriers: %d code points" % len(bar))
    rs = ranges(bar)
    lines.append("")
    lines.append("/* (first, last) code point ranges, sorted: normalization barriers. */")
    lines.append("#define TOK_NORM_BARRIERS \\")
    for i in range(0, len(rs), 6):
        lines.append("    " + " ".join("{0x%x, 0x%x}," % (a, b) for a, b in rs[i:i + 6]) + " \\")
    lines.append("")
    lines += ["", "#endif", ""]
    with open(OUT, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
