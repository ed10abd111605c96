/* fuzz_config.c - libFuzzer target: config.json parser and validation. */
#include "fuzz_util.h"

#include "model/config.h"
#include "base/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file f;
    char err[ERR_LEN];
    if (fuzz_file_open(&f, data, size)) return 0;
    model_config c;
    if (config_from_json(f.path, &c, err) == 0) {
        if (c.n_eos < 0 || c.n_eos > CONFIG_MAX_EOS) abort();
        config_validate(&c, f.path, err);
    }
    fuzz_file_close(&f);
    return 0;
}
