/* fuzz_gguf.c - libFuzzer target: GGUF reader (header, metadata, tensor infos,
 * data offsets) and the GGUF config parser. Every accepted tensor view is read
 * end to end, so a view past the mapping is an ASan report; the first and last
 * rows of every quantized tensor go through the type table's dequantizer (any
 * block bytes are valid: a decoder must stay inside its row whatever they hold). */
#include "fuzz_util.h"

#include "model/config.h"
#include "formats/gguf.h"
#include "quant/quant.h"
#include "base/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file f;
    char err[ERR_LEN];
    if (fuzz_file_open(&f, data, size)) return 0;
    gguf_file *g;
    if (gguf_open(f.path, &g, err) == 0) {
        for (int i = 0; i < gguf_n_tensors(g); i++) {
            const tensor *t = gguf_tensor(g, i);
            fuzz_touch(t->data, t->nbytes);
            if (gguf_find_tensor(g, t->name) == NULL) abort(); /* every listed name must be found */
            int64_t cols = t->shape[t->ndim - 1], rows = cols ? tensor_numel(t) / cols : 0;
            if (dtype_info(t->type)->dequant32 && rows > 0 && cols <= (1 << 16)) {
                float *row = malloc(sizeof(float) * (size_t)cols);
                if (row) {
                    dtype_dequant_row(t->type, t->data, cols, 0, row);
                    dtype_dequant_row(t->type, t->data, cols, rows - 1, row);
                    free(row);
                }
            }
        }
        gguf_str s;
        uint64_t n;
        gguf_type et;
        const void *arr;
        if (gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, &arr) == 0)
            for (uint64_t i = 0; i < n && i < 64; i++)
                if (gguf_get_arr_str(g, "tokenizer.ggml.tokens", i, &s) == 0) fuzz_touch(s.ptr, s.len);
        model_config c;
        if (config_from_gguf(g, &c, err) == 0) config_validate(&c, f.path, err);
        gguf_close(g);
    } else if (memchr(err, '\0', sizeof err) == NULL) {
        abort(); /* the message must be a terminated line */
    }
    fuzz_file_close(&f);
    return 0;
}
