/* replay_main.c - a plain main() for the fuzz targets, so `make test` can replay
 * the seed corpus and every kept crashing input under ASan + UBSan without clang.
 *
 * usage: fuzz_X DIR_OR_FILE...  (missing directories are skipped; a crash or a
 * sanitizer report aborts the process, which fails the test) */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0, k;
    uint8_t *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf) return -1;
    /* libFuzzer hands out an exact-size heap copy: do the same so overreads are caught */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) continue;
        if (!S_ISDIR(st.st_mode)) {
            bad |= replay_file(argv[i]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) continue;
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char **b = realloc(names, (n + 1) * sizeof *names);
            if (!b) break;
            names = b;
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[n] = malloc(len);
            snprintf(names[n++], len, "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof *names, cmp_str);
        for (size_t j = 0; j < n; j++) {
            bad |= replay_file(names[j]);
            files++;
            free(names[j]);
        }
        free(names);
    }
    printf("%s: replayed %d inputs\n", argv[0], files);
    return bad ? 1 : 0;
}
