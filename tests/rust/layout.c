/* layout.c - the facts of llmgen.h that a hand-written binding must repeat: the
 * size, alignment and field offsets of every public struct, the size, signedness
 * and values of the enums, and the #defines. One fact per line, as the Rust crate
 * prints its own declarations (tests/layout.rs compares the two). Compiled against
 * the header pkg-config names (build.rs), so a renamed field stops this build and a
 * moved, resized or retyped one changes a line. */
#include <stddef.h>
#include <stdio.h>

#include "llmgen.h"

#define SIZE(T) printf("size %s %zu\nalign %s %zu\n", #T, sizeof(T), #T, _Alignof(T))
#define FIELD(T, f) printf("offset %s.%s %zu\nsize %s.%s %zu\n", #T, #f, offsetof(T, f), #T, #f, sizeof(((T *)0)->f))
/* (T)-1 read back as long long: -1 if the enum's type is signed, its maximum if not */
#define ENUM(T) printf("size %s %zu\nminus-one %s %lld\n", #T, sizeof(T), #T, (long long)(T)-1)
#define VALUE(v) printf("value %s %lld\n", #v, (long long)(v))

int main(void) {
    SIZE(llmgen_model_options);
    FIELD(llmgen_model_options, n_threads);
    FIELD(llmgen_model_options, kernels);
    FIELD(llmgen_model_options, no_tokenizer);
    FIELD(llmgen_model_options, tokenizer_only);
    FIELD(llmgen_model_options, exact);
    FIELD(llmgen_model_options, split_all);

    SIZE(llmgen_capabilities);
    FIELD(llmgen_capabilities, architecture);
    FIELD(llmgen_capabilities, format);
    FIELD(llmgen_capabilities, weight_types);
    FIELD(llmgen_capabilities, kernels);
    FIELD(llmgen_capabilities, context_length);
    FIELD(llmgen_capabilities, vocab_size);
    FIELD(llmgen_capabilities, n_threads);
    FIELD(llmgen_capabilities, max_sequences);
    FIELD(llmgen_capabilities, has_tokenizer);
    FIELD(llmgen_capabilities, cpus);
    FIELD(llmgen_capabilities, cpus_from);

    SIZE(llmgen_message);
    FIELD(llmgen_message, role);
    FIELD(llmgen_message, content);

    SIZE(llmgen_chat_options);
    FIELD(llmgen_chat_options, template_name);
    FIELD(llmgen_chat_options, date);
    FIELD(llmgen_chat_options, template_text);
    FIELD(llmgen_chat_options, bos_token);
    FIELD(llmgen_chat_options, eos_token);
    FIELD(llmgen_chat_options, tools_json);
    FIELD(llmgen_chat_options, vars_json);
    FIELD(llmgen_chat_options, messages_json);

    SIZE(llmgen_sampler_params);
    FIELD(llmgen_sampler_params, temperature);
    FIELD(llmgen_sampler_params, top_k);
    FIELD(llmgen_sampler_params, top_p);
    FIELD(llmgen_sampler_params, min_p);
    FIELD(llmgen_sampler_params, repeat_penalty);
    FIELD(llmgen_sampler_params, seed);
    FIELD(llmgen_sampler_params, presence_penalty);
    FIELD(llmgen_sampler_params, frequency_penalty);

    SIZE(llmgen_generate_params);
    FIELD(llmgen_generate_params, max_tokens);
    FIELD(llmgen_generate_params, ignore_eos);
    FIELD(llmgen_generate_params, stops);
    FIELD(llmgen_generate_params, n_stops);
    FIELD(llmgen_generate_params, sampler);
    FIELD(llmgen_generate_params, keep_cache);
    FIELD(llmgen_generate_params, logprobs);
    FIELD(llmgen_generate_params, top_logprobs);
    FIELD(llmgen_generate_params, reuse_prefix);
    FIELD(llmgen_generate_params, grammar);
    FIELD(llmgen_generate_params, json_schema);
    FIELD(llmgen_generate_params, strict_schema);
    FIELD(llmgen_generate_params, no_close);
    FIELD(llmgen_generate_params, on_piece);
    FIELD(llmgen_generate_params, on_logits);
    FIELD(llmgen_generate_params, user);
    FIELD(llmgen_generate_params, draft_lookup);
    FIELD(llmgen_generate_params, draft_session);
    FIELD(llmgen_generate_params, draft_max);
    FIELD(llmgen_generate_params, draft_fn);
    FIELD(llmgen_generate_params, draft_user);

    SIZE(llmgen_reasoning_span);
    FIELD(llmgen_reasoning_span, reasoning_begin);
    FIELD(llmgen_reasoning_span, reasoning_end);
    FIELD(llmgen_reasoning_span, answer_begin);
    FIELD(llmgen_reasoning_span, has_reasoning);

    SIZE(llmgen_reasoning_piece);
    FIELD(llmgen_reasoning_piece, reasoning);
    FIELD(llmgen_reasoning_piece, reasoning_len);
    FIELD(llmgen_reasoning_piece, text);
    FIELD(llmgen_reasoning_piece, text_len);

    SIZE(llmgen_logprob);
    FIELD(llmgen_logprob, id);
    FIELD(llmgen_logprob, logprob);

    SIZE(llmgen_result);
    FIELD(llmgen_result, ids);
    FIELD(llmgen_result, n_ids);
    FIELD(llmgen_result, text);
    FIELD(llmgen_result, text_len);
    FIELD(llmgen_result, stop_reason);
    FIELD(llmgen_result, n_closed);
    FIELD(llmgen_result, logprobs);
    FIELD(llmgen_result, top_logprobs);
    FIELD(llmgen_result, n_prompt);
    FIELD(llmgen_result, n_cached);
    FIELD(llmgen_result, prefill_s);
    FIELD(llmgen_result, decode_s);
    FIELD(llmgen_result, first_token_s);
    FIELD(llmgen_result, n_drafted);
    FIELD(llmgen_result, n_accepted);
    FIELD(llmgen_result, n_passes);
    FIELD(llmgen_result, n_syncs);
    FIELD(llmgen_result, n_solo);

    ENUM(llmgen_status);
    VALUE(LLMGEN_OK);
    VALUE(LLMGEN_E_USAGE);
    VALUE(LLMGEN_E_FORMAT);
    VALUE(LLMGEN_E_IO);
    VALUE(LLMGEN_E_CONTEXT);
    VALUE(LLMGEN_E_NOMEM);
    VALUE(LLMGEN_E_BUSY);
    VALUE(LLMGEN_E_TOKENIZER);
    VALUE(LLMGEN_E_TEMPLATE);

    ENUM(llmgen_stop_reason);
    VALUE(LLMGEN_STOP_LENGTH);
    VALUE(LLMGEN_STOP_EOS);
    VALUE(LLMGEN_STOP_STRING);
    VALUE(LLMGEN_STOP_CONTEXT);
    VALUE(LLMGEN_STOP_CANCELLED);

    VALUE(LLMGEN_MAX_THREADS);
    VALUE(LLMGEN_DEFAULT_CONTEXT);
    VALUE(LLMGEN_MAX_CONTEXT);
    VALUE(LLMGEN_MAX_SEQUENCES);
    printf("string LLMGEN_VERSION %s\n", LLMGEN_VERSION);
    return 0;
}
