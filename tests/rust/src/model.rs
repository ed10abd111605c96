//! `Model`: one `llmgen_model`, opened once and shared by its sessions through an `Arc`.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::path::Path;
use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::{ffi, usage, ErrBuf, Result};

/// `llmgen_model_options`.
#[derive(Clone, Debug, Default)]
pub struct ModelOptions {
    /// Worker threads for prefill / decode; 0: the CPUs this process may use.
    pub threads: usize,
    /// None: the best kernels for this CPU; else "scalar", "avx2", "avx512", "neon".
    pub kernels: Option<String>,
    /// Exact mode (f32 activations) instead of the fast int8 route.
    pub exact: bool,
    /// Skip loading the tokenizer (ids only).
    pub no_tokenizer: bool,
}

/// `llmgen_capabilities`, its strings copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    pub architecture: String,
    pub format: String,
    pub weight_types: String,
    pub kernels: String,
    pub context_length: usize,
    pub vocab_size: usize,
    pub n_threads: usize,
    pub max_sequences: usize,
    pub has_tokenizer: bool,
    /// CPUs this process may use at open (affinity mask, cgroup quota), and what said so.
    pub cpus: usize,
    pub cpus_from: String,
}

/// A loaded model (weights mmap'd read-only, the tokenizer, one worker pool).
pub struct Model {
    raw: *mut ffi::llmgen_model,
    /// Held for each prefill / decode step of any session of this model: the worker pool
    /// runs one at a time (llmgen.h, Threads).
    turn: Mutex<()>,
    vocab_size: usize,
}

// SAFETY (llmgen.h, Threads): after open the model is read-only; capabilities, is_eos,
// session_new and the tokenizer calls may run from any thread at any time, and the one
// call that must not overlap (a prefill / decode step of its sessions) is serialized by
// `turn`. Freeing happens in Drop, when no session and no other reference is left.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

fn to_cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| usage(format!("{what} {s:?} contains a NUL byte")))
}

/// Copy a NUL-terminated string the library owns.
fn owned(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a non-NULL string of llmgen_capabilities, NUL-terminated, alive as long as the model.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Model {
    /// `llmgen_model_open`: a .gguf file, a Hugging Face directory or a .safetensors file.
    pub fn open(path: impl AsRef<Path>, opt: &ModelOptions) -> Result<Arc<Model>> {
        let path = path.as_ref();
        let cpath = to_cstring("model path", &path.to_string_lossy())?;
        let kernels = match &opt.kernels {
            Some(k) => Some(to_cstring("kernel set", k)?),
            None => None,
        };
        let threads =
            c_int::try_from(opt.threads).map_err(|_| usage(format!("thread count {} is out of range", opt.threads)))?;
        let copt = ffi::llmgen_model_options {
            n_threads: threads,
            kernels: kernels.as_ref().map_or(ptr::null(), |k| k.as_ptr()),
            no_tokenizer: opt.no_tokenizer as c_int,
            tokenizer_only: 0,
            exact: opt.exact as c_int,
            split_all: 0,
        };
        let mut raw = ptr::null_mut();
        let mut err = ErrBuf::new();
        // SAFETY: every pointer is valid for the call; on failure *out stays NULL.
        let st = unsafe { ffi::llmgen_model_open(cpath.as_ptr(), &copt, &mut raw, err.ptr(), crate::ERR_LEN) };
        err.check(st)?;
        let mut model = Model { raw, turn: Mutex::new(()), vocab_size: 0 };
        model.vocab_size = model.capabilities().vocab_size;
        Ok(Arc::new(model))
    }

    /// `llmgen_model_capabilities`.
    pub fn capabilities(&self) -> Capabilities {
        let mut c = ffi::llmgen_capabilities {
            architecture: ptr::null(),
            format: ptr::null(),
            weight_types: ptr::null(),
            kernels: ptr::null(),
            context_length: 0,
            vocab_size: 0,
            n_threads: 0,
            max_sequences: 0,
            has_tokenizer: 0,
            cpus: 0,
            cpus_from: ptr::null(),
        };
        // SAFETY: self.raw is a live model; c is a valid out-parameter.
        unsafe { ffi::llmgen_model_capabilities(self.raw, &mut c) };
        Capabilities {
            architecture: owned(c.architecture),
            format: owned(c.format),
            weight_types: owned(c.weight_types),
            kernels: owned(c.kernels),
            context_length: c.context_length.max(0) as usize,
            vocab_size: c.vocab_size.max(0) as usize,
            n_threads: c.n_threads.max(0) as usize,
            max_sequences: c.max_sequences.max(0) as usize,
            has_tokenizer: c.has_tokenizer != 0,
            cpus: c.cpus.max(0) as usize,
            cpus_from: owned(c.cpus_from),
        }
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// `llmgen_is_eos`.
    pub fn is_eos(&self, id: i32) -> bool {
        // SAFETY: self.raw is a live model.
        unsafe { ffi::llmgen_is_eos(self.raw, id) != 0 }
    }

    /// `llmgen_tokenize` (add_special and parse_special as the reference tokenizer does).
    pub fn tokenize(&self, text: &str) -> Result<Vec<i32>> {
        let mut ids: *mut i32 = ptr::null_mut();
        let mut n = 0usize;
        let mut err = ErrBuf::new();
        // SAFETY: text is len bytes; ids / n are out-parameters the library fills on success.
        let st = unsafe {
            ffi::llmgen_tokenize(
                self.raw,
                text.as_ptr().cast(),
                text.len(),
                1,
                1,
                &mut ids,
                &mut n,
                err.ptr(),
                crate::ERR_LEN,
            )
        };
        err.check(st)?;
        // SAFETY: on success ids holds n ids, ours to release with llmgen_free.
        let out = if n == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(ids, n) }.to_vec() };
        unsafe { ffi::llmgen_free(ids.cast::<c_void>()) };
        Ok(out)
    }

    /// `llmgen_detokenize`: the text of ids as the reference decoder gives it (bytes: a cut
    /// may split a UTF-8 character).
    pub fn detokenize(&self, ids: &[i32]) -> Result<Vec<u8>> {
        let mut text: *mut c_char = ptr::null_mut();
        let mut len = 0usize;
        let mut err = ErrBuf::new();
        // SAFETY: ids is valid for ids.len() reads; text / len are out-parameters.
        let st = unsafe {
            ffi::llmgen_detokenize(self.raw, ids.as_ptr(), ids.len(), &mut text, &mut len, err.ptr(), crate::ERR_LEN)
        };
        err.check(st)?;
        // SAFETY: on success text holds len bytes (and a NUL), ours to release with llmgen_free.
        let out =
            if len == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(text.cast::<u8>(), len) }.to_vec() };
        unsafe { ffi::llmgen_free(text.cast::<c_void>()) };
        Ok(out)
    }

    pub(crate) fn raw(&self) -> *mut ffi::llmgen_model {
        self.raw
    }

    /// The model's worker pool for one step (a panic in another holder does not matter:
    /// the lock guards no Rust data).
    pub(crate) fn turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: every Session holds an Arc<Model>, so none is left when this runs.
        unsafe { ffi::llmgen_model_free(self.raw) };
    }
}
