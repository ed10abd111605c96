//! The C API of llmgen.h, declared by hand: every function, struct, enum value and
//! #define of the header, in its order. Nothing here is generated: tests/layout.rs checks
//! these declarations against the header (sizes and offsets as the C compiler lays them
//! out, every field, enum value and function name, and each function's argument count).
//!
//! C enums are declared as their integer type with one constant per value, never as Rust
//! enums: a value the header adds later must not be undefined behaviour here.
#![allow(non_camel_case_types)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int, c_uint, c_void};

pub const LLMGEN_VERSION: &str = "0.1.0";

/// `llmgen_status` (an enum with no negative value: `unsigned int` in the C ABI).
pub type llmgen_status = c_uint;
pub const LLMGEN_OK: llmgen_status = 0;
pub const LLMGEN_E_USAGE: llmgen_status = 1;
pub const LLMGEN_E_FORMAT: llmgen_status = 2;
pub const LLMGEN_E_IO: llmgen_status = 3;
pub const LLMGEN_E_CONTEXT: llmgen_status = 4;
pub const LLMGEN_E_NOMEM: llmgen_status = 5;
pub const LLMGEN_E_BUSY: llmgen_status = 6;
pub const LLMGEN_E_TOKENIZER: llmgen_status = 7;
pub const LLMGEN_E_TEMPLATE: llmgen_status = 8;

/// An object only the library sees inside (the pattern of the Rustonomicon's FFI
/// chapter): not constructible, not Send, not Sync, not Unpin.
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}
opaque!(llmgen_model, llmgen_session, llmgen_detok, llmgen_batch, llmgen_sampler, llmgen_chat, llmgen_reasoning);

pub const LLMGEN_MAX_THREADS: c_int = 256;
pub const LLMGEN_DEFAULT_CONTEXT: c_int = 4096;
pub const LLMGEN_MAX_CONTEXT: c_int = 16777216;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_model_options {
    pub n_threads: c_int,
    pub kernels: *const c_char,
    pub no_tokenizer: c_int,
    pub tokenizer_only: c_int,
    pub exact: c_int,
    pub split_all: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_capabilities {
    pub architecture: *const c_char,
    pub format: *const c_char,
    pub weight_types: *const c_char,
    pub kernels: *const c_char,
    pub context_length: c_int,
    pub vocab_size: c_int,
    pub n_threads: c_int,
    pub max_sequences: c_int,
    pub has_tokenizer: c_int,
    pub cpus: c_int,
    pub cpus_from: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_message {
    pub role: *const c_char,
    pub content: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_chat_options {
    pub template_name: *const c_char,
    pub date: *const c_char,
    pub template_text: *const c_char,
    pub bos_token: *const c_char,
    pub eos_token: *const c_char,
    pub tools_json: *const c_char,
    pub vars_json: *const c_char,
    pub messages_json: *const c_char,
}

pub const LLMGEN_MAX_SEQUENCES: c_int = 64;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_sampler_params {
    pub temperature: f32,
    pub top_k: c_int,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub seed: u64,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
}

/// `llmgen_stop_reason` (no negative value: `unsigned int`).
pub type llmgen_stop_reason = c_uint;
pub const LLMGEN_STOP_LENGTH: llmgen_stop_reason = 0;
pub const LLMGEN_STOP_EOS: llmgen_stop_reason = 1;
pub const LLMGEN_STOP_STRING: llmgen_stop_reason = 2;
pub const LLMGEN_STOP_CONTEXT: llmgen_stop_reason = 3;
pub const LLMGEN_STOP_CANCELLED: llmgen_stop_reason = 4;

/// C function pointers may be NULL: `Option` of a non-null `extern "C" fn` has the same layout.
pub type llmgen_rows_fn = Option<unsafe extern "C" fn(user: *mut c_void, i: c_int, logits: *const f32, n_vocab: c_int)>;
pub type llmgen_piece_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, id: i32, text: *const c_char, len: usize) -> c_int>;
pub type llmgen_logits_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, logits: *const f32, n_vocab: c_int) -> c_int>;
pub type llmgen_draft_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, ids: *const i32, n: c_int, draft: *mut i32, max: c_int) -> c_int>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_generate_params {
    pub max_tokens: c_int,
    pub ignore_eos: c_int,
    pub stops: *const *const c_char,
    pub n_stops: c_int,
    pub sampler: llmgen_sampler_params,
    pub keep_cache: c_int,
    pub logprobs: c_int,
    pub top_logprobs: c_int,
    pub reuse_prefix: c_int,
    pub grammar: *const c_char,
    pub json_schema: *const c_char,
    pub strict_schema: c_int,
    pub no_close: c_int,
    pub on_piece: llmgen_piece_fn,
    pub on_logits: llmgen_logits_fn,
    pub user: *mut c_void,
    pub draft_lookup: c_int,
    pub draft_session: *mut llmgen_session,
    pub draft_max: c_int,
    pub draft_fn: llmgen_draft_fn,
    pub draft_user: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_reasoning_span {
    pub reasoning_begin: usize,
    pub reasoning_end: usize,
    pub answer_begin: usize,
    pub has_reasoning: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_reasoning_piece {
    pub reasoning: *const c_char,
    pub reasoning_len: usize,
    pub text: *const c_char,
    pub text_len: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_logprob {
    pub id: i32,
    pub logprob: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct llmgen_result {
    pub ids: *mut i32,
    pub n_ids: c_int,
    pub text: *mut c_char,
    pub text_len: usize,
    pub stop_reason: llmgen_stop_reason,
    pub n_closed: c_int,
    pub logprobs: *mut llmgen_logprob,
    pub top_logprobs: c_int,
    pub n_prompt: c_int,
    pub n_cached: c_int,
    pub prefill_s: f64,
    pub decode_s: f64,
    pub first_token_s: f64,
    pub n_drafted: c_int,
    pub n_accepted: c_int,
    pub n_passes: c_int,
    pub n_syncs: i64,
    pub n_solo: i64,
}

extern "C" {
    pub fn llmgen_kernels_default() -> *const c_char;
    pub fn llmgen_status_name(st: llmgen_status) -> *const c_char;
    pub fn llmgen_free(p: *mut c_void);

    // ---- model
    pub fn llmgen_model_open(
        path: *const c_char,
        opt: *const llmgen_model_options,
        out: *mut *mut llmgen_model,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_model_free(m: *mut llmgen_model);
    pub fn llmgen_model_capabilities(m: *const llmgen_model, out: *mut llmgen_capabilities);
    pub fn llmgen_is_eos(m: *const llmgen_model, id: i32) -> c_int;

    // ---- tokenizer
    pub fn llmgen_tokenize(
        m: *const llmgen_model,
        text: *const c_char,
        len: usize,
        add_special: c_int,
        parse_special: c_int,
        ids: *mut *mut i32,
        n_ids: *mut usize,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_token_bytes(m: *const llmgen_model, id: i32, len: *mut usize) -> *const c_char;
    pub fn llmgen_detokenize(
        m: *const llmgen_model,
        ids: *const i32,
        n: usize,
        text: *mut *mut c_char,
        len: *mut usize,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_chat_template_check(
        m: *const llmgen_model,
        name: *const c_char,
        missing: *mut c_char,
        n: usize,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_chat_render(
        m: *const llmgen_model,
        system: *const c_char,
        user: *const c_char,
        out: *mut *mut c_char,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_chat_render_as(
        m: *const llmgen_model,
        name: *const c_char,
        date: *const c_char,
        system: *const c_char,
        user: *const c_char,
        out: *mut *mut c_char,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_chat_render_messages(
        m: *const llmgen_model,
        msgs: *const llmgen_message,
        n: usize,
        add_generation_prompt: c_int,
        opt: *const llmgen_chat_options,
        out: *mut *mut c_char,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_detok_new(
        m: *const llmgen_model,
        out: *mut *mut llmgen_detok,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_detok_put(
        d: *mut llmgen_detok,
        id: i32,
        piece: *mut *const c_char,
        len: *mut usize,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_detok_flush(d: *mut llmgen_detok, piece: *mut *const c_char, len: *mut usize);
    pub fn llmgen_detok_free(d: *mut llmgen_detok);

    // ---- sessions
    pub fn llmgen_session_new(
        m: *mut llmgen_model,
        ctx_len: c_int,
        out: *mut *mut llmgen_session,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_session_free(s: *mut llmgen_session);
    pub fn llmgen_session_reset(s: *mut llmgen_session);
    pub fn llmgen_session_pos(s: *const llmgen_session) -> c_int;
    pub fn llmgen_session_ctx(s: *const llmgen_session) -> c_int;
    pub fn llmgen_session_kv_bytes(s: *const llmgen_session, ring: *mut c_int) -> usize;
    pub fn llmgen_session_common_prefix(s: *const llmgen_session, ids: *const i32, n: c_int) -> c_int;
    pub fn llmgen_session_rewind(s: *mut llmgen_session, pos: c_int);
    pub fn llmgen_session_save(
        s: *mut llmgen_session,
        path: *const c_char,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_session_load(
        s: *mut llmgen_session,
        path: *const c_char,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_session_model(s: *const llmgen_session) -> *mut llmgen_model;
    pub fn llmgen_model_sync_counts(m: *const llmgen_model, syncs: *mut i64, solo: *mut i64);
    pub fn llmgen_prefill(
        s: *mut llmgen_session,
        ids: *const i32,
        n: c_int,
        logits: *mut *const f32,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_decode_step(
        s: *mut llmgen_session,
        id: i32,
        logits: *mut *const f32,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_decode_rows(
        s: *mut llmgen_session,
        ids: *const i32,
        n: c_int,
        rows: *mut *const f32,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_prefill_rows(
        s: *mut llmgen_session,
        ids: *const i32,
        n: c_int,
        first: c_int,
        fn_: llmgen_rows_fn,
        user: *mut c_void,
        logits: *mut *const f32,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;

    // ---- several sequences per step
    pub fn llmgen_batch_new(
        m: *mut llmgen_model,
        max_sequences: c_int,
        ctx: c_int,
        out: *mut *mut llmgen_batch,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_batch_free(b: *mut llmgen_batch);
    pub fn llmgen_batch_join(
        b: *mut llmgen_batch,
        s: *mut llmgen_session,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_batch_leave(s: *mut llmgen_session);
    pub fn llmgen_batch_stats(
        b: *mut llmgen_batch,
        passes: *mut std::os::raw::c_long,
        seq_steps: *mut std::os::raw::c_long,
    );

    // ---- sampling
    pub fn llmgen_sampler_defaults(p: *mut llmgen_sampler_params);
    pub fn llmgen_sampler_check(p: *const llmgen_sampler_params, err: *mut c_char, errlen: usize) -> llmgen_status;
    pub fn llmgen_sampler_new(p: *const llmgen_sampler_params, vocab_size: c_int) -> *mut llmgen_sampler;
    pub fn llmgen_sampler_free(s: *mut llmgen_sampler);
    pub fn llmgen_sample(s: *mut llmgen_sampler, logits: *const f32, history: *const i32, n_history: c_int) -> i32;

    // ---- generation
    pub fn llmgen_stop_reason_name(r: llmgen_stop_reason) -> *const c_char;
    pub fn llmgen_generate_defaults(p: *mut llmgen_generate_params);
    pub fn llmgen_json_schema_check(
        schema: *const c_char,
        strict: c_int,
        warn: *mut c_char,
        warnlen: usize,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_generate(
        s: *mut llmgen_session,
        prompt: *const i32,
        n_prompt: c_int,
        p: *const llmgen_generate_params,
        r: *mut llmgen_result,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_result_free(r: *mut llmgen_result);

    // ---- chat
    pub fn llmgen_chat_new(
        s: *mut llmgen_session,
        opt: *const llmgen_chat_options,
        system: *const c_char,
        out: *mut *mut llmgen_chat,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_chat_turn(
        c: *mut llmgen_chat,
        user: *const c_char,
        p: *const llmgen_generate_params,
        r: *mut llmgen_result,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;
    pub fn llmgen_chat_free(c: *mut llmgen_chat);

    // ---- conversion
    pub fn llmgen_quantize(
        in_dir: *const c_char,
        out_dir: *const c_char,
        bits: c_int,
        group_size: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> llmgen_status;

    // ---- reasoning
    pub fn llmgen_reasoning_new(prompt: *const c_char, out: *mut *mut llmgen_reasoning) -> llmgen_status;
    pub fn llmgen_reasoning_feed(
        t: *mut llmgen_reasoning,
        s: *const c_char,
        n: usize,
        final_: c_int,
        out: *mut llmgen_reasoning_piece,
    ) -> llmgen_status;
    pub fn llmgen_reasoning_thinking(t: *const llmgen_reasoning) -> c_int;
    pub fn llmgen_reasoning_close(t: *const llmgen_reasoning) -> *const c_char;
    pub fn llmgen_reasoning_where(t: *const llmgen_reasoning) -> llmgen_reasoning_span;
    pub fn llmgen_reasoning_free(t: *mut llmgen_reasoning);
    pub fn llmgen_reasoning_split(
        prompt: *const c_char,
        text: *const c_char,
        len: usize,
        out: *mut llmgen_reasoning_span,
    ) -> llmgen_status;
}
