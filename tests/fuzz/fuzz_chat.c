/* fuzz_chat.c - libFuzzer target: chat template text through the tokenizer's chat path
 * (tok_chat_render and tok_chat_render_messages: the Jinja interpreter with the tokenizer's
 * special tokens). Input: an optional system message, a NUL byte, then the template text
 * (as a GGUF would carry it in tokenizer.chat_template). A tiny byte-level vocabulary
 * carries the template; rendering it (one exchange, and a conversation) must fail cleanly
 * or produce a NUL-terminated string. fuzz_jinja drives the interpreter directly with
 * arbitrary variables. */
#include "fuzz_util.h"

#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    if (!nul) return 0;
    char *system = fuzz_cstr(data, (size_t)(nul - data));
    const char *tpl = (const char *)nul + 1;
    size_t tpl_len = size - (size_t)(nul - data) - 1;
    static const char *tok_text[] = {"<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>", "a", "b"};
    tok_str toks[6];
    for (int i = 0; i < 6; i++) toks[i] = (tok_str){tok_text[i], strlen(tok_text[i])};
    int32_t types[6] = {3, 3, 3, 3, 1, 1};
    tok_spec spec = {.model = {"gpt2", 4}, .pre = {"default", 7}, .n_tokens = 6, .tokens = toks,
                     .token_types = types, .bos_id = 2, .eos_id = 1, .unk_id = -1, .pad_id = -1,
                     .add_bos = -1, .add_eos = -1, .add_space_prefix = -1, .chat_template = {tpl, tpl_len}};
    char err[TOK_ERR_LEN];
    tokenizer *t;
    if (tok_load_spec(&spec, "fuzz.gguf", &t, err) == 0) {
        char *out;
        if (tok_chat_render(t, NULL, *system ? system : NULL, "Hello <|im_end|> there", &out, err) == 0) {
            fuzz_touch(out, strlen(out));
            free(out);
        }
        /* a conversation: system (if any), user, assistant, user */
        tok_chat_msg msgs[4] = {{"system", system}, {"user", "Hi"}, {"assistant", "Hello <|im_end|>"}, {"user", system}};
        int rc = tok_chat_render_messages(t, NULL, NULL, *system ? msgs : msgs + 1, *system ? 4 : 3, 1, &out, err);
        if (rc == 0) {
            fuzz_touch(out, strlen(out));
            free(out);
        } else if (rc != -1 && rc != TOK_CHAT_E_ARG && rc != TOK_CHAT_E_TEMPLATE) {
            abort();
        }
        tok_free(t);
    }
    free(system);
    return 0;
}
