//! llmgen from Rust: a safe layer over the C API of `llmgen.h`, and the inference-session
//! seam a runtime drives a backend through.
//!
//! - [`ffi`]: the header's declarations, written by hand and checked against it
//!   (tests/layout.rs).
//! - [`Model`] (open once, read-only, shared through an `Arc`), [`Session`] (one sequence:
//!   its KV cache, position and sampler), [`Sampler`], [`Error`] (the status and the
//!   library's one-line message).
//! - [`seam`]: the traits [`seam::InferenceBackend`] / [`seam::InferenceSession`]
//!   (capabilities, prefill ids, decode one step), implemented here by `Arc<Model>` and
//!   [`Session`].
//!
//! Ownership, as llmgen.h states it and the types enforce it:
//! - a session keeps an `Arc` of its model, so the model is freed (`llmgen_model_free`)
//!   only after the last session of it (`llmgen_session_free` runs first in `Session`'s
//!   `Drop`, then the `Arc` is released);
//! - logits belong to the session and stay valid until its next step, reset or free:
//!   they are lent as `&[f32]` borrowed from `&mut Session`, so the borrow checker rejects
//!   a read after the next step;
//! - buffers the library allocates (token ids, text) are copied into Rust values and given
//!   back with `llmgen_free` at once.
//!
//! Threads (the rules of llmgen.h): a model is read-only after open, so `Model` is `Send`
//! and `Sync` and any thread may open sessions of it or tokenize. But its one worker pool
//! runs one prefill or decode step at a time: `Model` holds a mutex that sessions take
//! for each step, so sessions on different threads take turns instead of failing with
//! `LLMGEN_E_BUSY`. A session (and a sampler) is used from one thread at a time and keeps
//! no thread-local state: `Send`, not `Sync`.
//!
//! What the compiler refuses (each example must fail to build; `cargo test` checks it):
//!
//! ```compile_fail,E0277
//! fn shared<T: Sync>() {}
//! shared::<llmgen::Session>(); // a session is not shared between threads
//! ```
//!
//! ```compile_fail,E0499
//! fn f(s: &mut llmgen::Session) -> llmgen::Result<f32> {
//!     let logits = s.prefill(&[1, 2, 3])?;
//!     s.decode(4)?; // the next step while the previous logits are still read
//!     Ok(logits[0])
//! }
//! ```

pub mod ffi;
mod model;
pub mod seam;
mod session;

pub use model::{Capabilities, Model, ModelOptions};
pub use session::{KvSize, Sampler, SamplerParams, Session};

use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_char;

/// What went wrong, as an `llmgen_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Usage,
    Format,
    Io,
    Context,
    NoMem,
    Busy,
    Tokenizer,
    Template,
    /// A value this binding does not know (a newer library).
    Other(u32),
}

impl Status {
    fn from_raw(st: ffi::llmgen_status) -> Status {
        match st {
            ffi::LLMGEN_E_USAGE => Status::Usage,
            ffi::LLMGEN_E_FORMAT => Status::Format,
            ffi::LLMGEN_E_IO => Status::Io,
            ffi::LLMGEN_E_CONTEXT => Status::Context,
            ffi::LLMGEN_E_NOMEM => Status::NoMem,
            ffi::LLMGEN_E_BUSY => Status::Busy,
            ffi::LLMGEN_E_TOKENIZER => Status::Tokenizer,
            ffi::LLMGEN_E_TEMPLATE => Status::Template,
            other => Status::Other(other),
        }
    }

    fn raw(self) -> ffi::llmgen_status {
        match self {
            Status::Usage => ffi::LLMGEN_E_USAGE,
            Status::Format => ffi::LLMGEN_E_FORMAT,
            Status::Io => ffi::LLMGEN_E_IO,
            Status::Context => ffi::LLMGEN_E_CONTEXT,
            Status::NoMem => ffi::LLMGEN_E_NOMEM,
            Status::Busy => ffi::LLMGEN_E_BUSY,
            Status::Tokenizer => ffi::LLMGEN_E_TOKENIZER,
            Status::Template => ffi::LLMGEN_E_TEMPLATE,
            Status::Other(v) => v,
        }
    }

    /// The library's short name of the status ("usage", "io", ...).
    pub fn name(self) -> String {
        // SAFETY: llmgen_status_name never returns NULL and its strings are static.
        unsafe { CStr::from_ptr(ffi::llmgen_status_name(self.raw())) }.to_string_lossy().into_owned()
    }
}

/// A failed call: its status and the one line the library wrote (naming the file, id or
/// option, and what was expected).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The message buffer every fallible call fills (the caller owns it, llmgen.h says).
const ERR_LEN: usize = 512;

struct ErrBuf([c_char; ERR_LEN]);

impl ErrBuf {
    fn new() -> ErrBuf {
        ErrBuf([0; ERR_LEN])
    }

    fn ptr(&mut self) -> *mut c_char {
        self.0.as_mut_ptr()
    }

    /// Ok for LLMGEN_OK, else the status with what the library wrote.
    fn check(&self, st: ffi::llmgen_status) -> Result<()> {
        if st == ffi::LLMGEN_OK {
            return Ok(());
        }
        // SAFETY: the buffer starts zeroed and the library writes a NUL-terminated line
        // truncated to ERR_LEN, so there is a NUL inside it.
        let message = unsafe { CStr::from_ptr(self.0.as_ptr()) }.to_string_lossy().into_owned();
        Err(Error { status: Status::from_raw(st), message })
    }
}

/// An error the binding itself detects before calling the library (worded the library's way).
fn usage(message: String) -> Error {
    Error { status: Status::Usage, message }
}
