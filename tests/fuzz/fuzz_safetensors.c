/* fuzz_safetensors.c - libFuzzer target: a single safetensors file (header
 * length, JSON header, dtypes, shapes, data offsets). Accepted views are read
 * end to end and must not overlap (the reader promises it). */
#include "fuzz_util.h"

#include "formats/safetensors.h"
#include "base/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file f;
    char err[ERR_LEN];
    if (fuzz_file_open(&f, data, size)) return 0;
    st_file *st;
    if (st_open(f.path, &st, err) == 0) {
        int n = st_n_tensors(st);
        for (int i = 0; i < n; i++) {
            const tensor *t = st_tensor(st, i);
            fuzz_touch(t->data, t->nbytes);
            if ((size_t)tensor_numel(t) * (size_t)dtype_block_bytes(t->type) != t->nbytes * (size_t)dtype_block_elems(t->type))
                abort(); /* size must match shape x dtype */
            if (st_find_tensor(st, t->name) == NULL) abort();
            for (int j = 0; j < i; j++) {
                const tensor *u = st_tensor(st, j);
                const uint8_t *a = t->data, *b = u->data;
                if (t->nbytes && u->nbytes && a < b + u->nbytes && b < a + t->nbytes) abort();
            }
            if (i > 256) break; /* the overlap check is quadratic */
        }
        st_close(st);
    }
    fuzz_file_close(&f);
    return 0;
}
