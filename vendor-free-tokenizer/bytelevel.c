/* bytelevel.c - GPT-2's byte <-> code point map.
 *
 * Bytes that are printable in Latin-1 ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand
 * for themselves; the remaining 68 bytes (controls, space, 0x7F..0xA0, 0xAD)
 * take U+0100, U+0101, ... in byte order. So ' ' is U+0120 'Ġ', '\n' U+010A 'Ċ'. */
#include "tok_internal.h"

static int self_mapped(unsigned b)
{
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

/* The 68 remapped bytes are 0x00..0x20, 0x7F..0xA0 and 0xAD, in that order. */
uint32_t tok_byte_to_cp(unsigned char b)
{
    if (self_mapped(b))
        return b;
    if (b <= 0x20)
        return 256u + b;
    if (b <= 0xA0)
        return 256u + 33 + (b - 0x7Fu);
    return 256u + 67; /* 0xAD */
}

int tok_cp_to_byte(uint32_t cp)
{
    if (cp < 256)
        return self_mapped(cp) ? (int)cp : -1;
    uint32_t n = cp - 256;
    if (n < 33)
        return (int)n;
    if (n < 67)
        return (int)(0x7F + n - 33);
    return n == 67 ? 0xAD : -1;
}

long tok_bytelevel_decode(const char *text, size_t len, char *out)
{
    const unsigned char *u = (const unsigned char *)text;
    size_t i = 0;
    long o = 0;
    while (i < len) {
        uint32_t cp;
        size_t L = tok_utf8_len(u + i, len - i);
        if (L == 1)
            cp = u[i];
        else if (L == 2)
            cp = ((uint32_t)(u[i] & 0x1F) << 6) | (u[i + 1] & 0x3F);
        else
            return -1; /* every mapped code point is below U+0800 */
        int b = tok_cp_to_byte(cp);
        if (b < 0)
            return -1;
        out[o++] = (char)b;
        i += L;
    }
    return o;
}
