/* safetensors.h - read-only safetensors reader (single file or sharded).
 *
 * `st_open` takes a `.safetensors` file or a `model.safetensors.index.json`;
 * each shard is mmap'd once. Every header is validated: header length vs file
 * size, JSON well-formed, dtype known, shape non-negative, byte size equal to
 * product(shape) * dtype size, offsets inside the data buffer, no overlaps.
 * Knows nothing of models. */
#ifndef LLMGEN_SAFETENSORS_H
#define LLMGEN_SAFETENSORS_H

#include "base/tensor.h"

typedef struct st_file st_file;

int st_open(const char *path, st_file **out, char *err);
void st_close(st_file *f);

int st_n_tensors(const st_file *f);
const tensor *st_tensor(const st_file *f, int i);
const tensor *st_find_tensor(const st_file *f, const char *name); /* NULL if absent */

/* Path of the shard that holds tensor i (for messages). */
const char *st_tensor_path(const st_file *f, int i);

#endif
