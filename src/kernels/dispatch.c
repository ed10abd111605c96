/* dispatch.c - choose the kernel table by what this CPU (and its OS) supports.
 *
 * Detection is a handful of CPUID / XGETBV instructions and keeps no state:
 * the model calls kernels_select once at load and keeps the pointer. One
 * binary serves every x86-64: the ISA files are compiled with their own
 * flags and are only entered after these checks pass. */
#include "kernels.h"

#include <string.h>

/* The ISA files' tables, defined only for the architecture they target. */
const kernels *kernels_avx2_table(void);
const kernels *kernels_avx512_table(int level);
const kernels *kernels_neon_table(void);

#if defined(__x86_64__)
#include <cpuid.h>

/* XCR0 bits: the OS saves SSE + YMM state (AVX) and opmask + ZMM state (AVX-512).
 * A CPU can report AVX-512 while the OS (or hypervisor) does not enable it. */
enum { XCR0_AVX = 0x6, XCR0_AVX512 = 0xe6 };

static unsigned long long xcr0(void) {
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

typedef struct {
    int avx2; /* AVX2 + FMA + F16C with YMM state enabled */
    int avx512; /* the above + AVX-512 F/BW/VL/DQ with ZMM state enabled */
    int vnni;   /* AVX512-VNNI (vpdpbusd) for the int8-activation kernels */
    int gfni;   /* GFNI (vgf2p8affineqb), used by the VNNI table's Q6_K kernels */
    int bf16;   /* AVX512-BF16 (vdpbf16ps): fast mode's attention */
} x86_features;

static x86_features x86_detect(void) {
    x86_features f = {0, 0, 0, 0, 0};
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    int osxsave = (c & bit_OSXSAVE) != 0, fma = (c & bit_FMA) != 0, f16c = (c & bit_F16C) != 0;
    if (!osxsave) return f;
    unsigned long long x = xcr0();
    if (__get_cpuid_max(0, NULL) < 7 || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    f.avx2 = (x & XCR0_AVX) == XCR0_AVX && fma && f16c && (b & bit_AVX2);
    /* VNNI, GFNI and BF16 are optional: each only speeds up kernels that give the same bits without it */
    unsigned int need512 = bit_AVX512F | bit_AVX512BW | bit_AVX512VL | bit_AVX512DQ;
    f.avx512 = f.avx2 && (x & XCR0_AVX512) == XCR0_AVX512 && (b & need512) == need512;
    f.vnni = f.avx512 && (c & bit_AVX512VNNI);
    f.gfni = f.avx512 && (c & bit_GFNI);
    f.bf16 = f.avx512 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)); /* leaf 7.1 EAX[5] */
    return f;
}

const kernels *kernels_avx2(void) { return x86_detect().avx2 ? kernels_avx2_table() : NULL; }
const kernels *kernels_avx512(void) {
    x86_features f = x86_detect();
    return f.avx512 ? kernels_avx512_table(f.vnni ? 1 + f.gfni + (f.gfni && f.bf16) : 0) : NULL;
}
const kernels *kernels_neon(void) { return NULL; }

#elif defined(__aarch64__)

/* Advanced SIMD (and f16 <-> f32 conversion) is part of the AArch64 baseline. */
const kernels *kernels_avx2(void) { return NULL; }
const kernels *kernels_avx512(void) { return NULL; }
const kernels *kernels_neon(void) { return kernels_neon_table(); }

#else

const kernels *kernels_avx2(void) { return NULL; }
const kernels *kernels_avx512(void) { return NULL; }
const kernels *kernels_neon(void) { return NULL; }

#endif

const kernels *kernels_select(const char *force) {
    if (force) {
        if (!strcmp(force, "scalar")) return kernels_scalar();
        if (!strcmp(force, "avx2")) return kernels_avx2();
        if (!strcmp(force, "avx512")) return kernels_avx512();
        if (!strcmp(force, "neon")) return kernels_neon();
        return NULL;
    }
    const kernels *k;
    if ((k = kernels_avx512())) return k;
    if ((k = kernels_avx2())) return k;
    if ((k = kernels_neon())) return k;
    return kernels_scalar();
}
