/* bytelevel.c - GPT-2's byte <-> code point map.
 *
 * Bytes that are printable in Latin-1 ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand
 * for themselves; the remaining 68 bytes (controls, space, 0x7F..0xA0, 0xAD)
 * take U+0100, U+0101, ... in byte order. So ' ' is U+0120 'Ġ', '\n' U+010A 'Ċ'. */
#include "tok_internal.h"

static int self_mapped(unsigned b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

/* The 68 remapped bytes are 0x00..0x20, 0x7F..0xA0 and 0xAD, in that order. */
uint32_t tok_byte_to_cp(unsigned char b) {
    if (self_mapped(b)) return b;
    if (b <= 0x20) return 256u + b;
    if (b <= 0xA0) return 256u + 33 + (b - 0x7Fu);
    return 256u + 67; /* 0xAD */
}

/* Inverse of the map for U+0000..U+0143 (-1: not a byte-level character),
 * written out because it is looked up for every character of every token and
 * merge at load. Checked against tok_byte_to_cp by the unit tests. */
static const int16_t CP_TO_BYTE[324] = {
    -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,
    -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  33,  34,  35,  36,  37,  38,  39,  40,  41,  42,  43,
    44,  45,  46,  47,  48,  49,  50,  51,  52,  53,  54,  55,  56,  57,  58,  59,  60,  61,  62,  63,  64,  65,
    66,  67,  68,  69,  70,  71,  72,  73,  74,  75,  76,  77,  78,  79,  80,  81,  82,  83,  84,  85,  86,  87,
    88,  89,  90,  91,  92,  93,  94,  95,  96,  97,  98,  99,  100, 101, 102, 103, 104, 105, 106, 107, 108, 109,
    110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, -1,  -1,  -1,  -1,  -1,
    -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,
    -1,  -1,  -1,  -1,  -1,  -1,  -1,  161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, -1,  174, 175,
    176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197,
    198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219,
    220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241,
    242, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255, 0,   1,   2,   3,   4,   5,   6,   7,
    8,   9,   10,  11,  12,  13,  14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,  28,  29,
    30,  31,  32,  127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145,
    146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 173,
};

int tok_cp_to_byte(uint32_t cp) { return cp < 324 ? CP_TO_BYTE[cp] : -1; }

/* Every mapped code point is below U+0144, so a byte-level character is either
 * one ASCII byte or a two-byte sequence with lead C2..C5: decoded inline (this
 * runs for every token and both halves of every merge at load). */
long tok_bytelevel_decode(const char *text, size_t len, char *out) {
    const unsigned char *u = (const unsigned char *)text;
    long o = 0;
    for (size_t i = 0; i < len;) {
        unsigned c = u[i];
        uint32_t cp;
        if (c < 0x80) {
            cp = c;
            i++;
        } else if (c >= 0xC2 && c <= 0xC5 && i + 1 < len && (u[i + 1] & 0xC0) == 0x80) {
            cp = ((c & 0x1Fu) << 6) | (u[i + 1] & 0x3Fu);
            i += 2;
        } else {
            return -1;
        }
        int b = tok_cp_to_byte(cp);
        if (b < 0) return -1;
        out[o++] = (char)b;
    }
    return o;
}
