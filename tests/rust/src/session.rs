//! `Session`: one sequence of a model (its KV cache, position and sampler); `Sampler`.

use std::borrow::Cow;
use std::os::raw::c_int;
use std::ptr;
use std::sync::Arc;

use crate::{ffi, usage, ErrBuf, Model, Result, ERR_LEN};

/// `llmgen_sampler_params`; the default is greedy (argmax, lowest id on ties).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplerParams {
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub seed: u64,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
}

impl Default for SamplerParams {
    fn default() -> SamplerParams {
        let mut p = ffi::llmgen_sampler_params {
            temperature: 0.0,
            top_k: 0,
            top_p: 0.0,
            min_p: 0.0,
            repeat_penalty: 0.0,
            seed: 0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
        };
        // SAFETY: p is a valid out-parameter.
        unsafe { ffi::llmgen_sampler_defaults(&mut p) };
        SamplerParams {
            temperature: p.temperature,
            top_k: p.top_k,
            top_p: p.top_p,
            min_p: p.min_p,
            repeat_penalty: p.repeat_penalty,
            seed: p.seed,
            presence_penalty: p.presence_penalty,
            frequency_penalty: p.frequency_penalty,
        }
    }
}

/// `llmgen_sampler`: picks the next id from a vocabulary's logits.
pub struct Sampler {
    raw: *mut ffi::llmgen_sampler,
    vocab_size: usize,
}

// SAFETY: a sampler is used from one thread at a time (llmgen.h) and has no thread-local
// state; every use takes &mut self.
unsafe impl Send for Sampler {}

impl Sampler {
    /// `llmgen_sampler_check` + `llmgen_sampler_new`.
    pub fn new(p: &SamplerParams, vocab_size: usize) -> Result<Sampler> {
        let cp = ffi::llmgen_sampler_params {
            temperature: p.temperature,
            top_k: p.top_k,
            top_p: p.top_p,
            min_p: p.min_p,
            repeat_penalty: p.repeat_penalty,
            seed: p.seed,
            presence_penalty: p.presence_penalty,
            frequency_penalty: p.frequency_penalty,
        };
        let mut err = ErrBuf::new();
        // SAFETY: cp and err are valid for the call.
        let st = unsafe { ffi::llmgen_sampler_check(&cp, err.ptr(), ERR_LEN) };
        err.check(st)?;
        let vocab =
            c_int::try_from(vocab_size).map_err(|_| usage(format!("vocabulary size {vocab_size} is out of range")))?;
        // SAFETY: cp passed the check; NULL only for vocab_size <= 0 or out of memory.
        let raw = unsafe { ffi::llmgen_sampler_new(&cp, vocab) };
        if raw.is_null() {
            return Err(usage(format!("no sampler for a vocabulary of {vocab_size} (out of memory?)")));
        }
        Ok(Sampler { raw, vocab_size })
    }

    /// `llmgen_sample` over one vocabulary's logits; history feeds the repetition penalty.
    pub fn sample(&mut self, logits: &[f32], history: &[i32]) -> i32 {
        assert_eq!(logits.len(), self.vocab_size, "logits of another vocabulary");
        let n = c_int::try_from(history.len()).unwrap_or(c_int::MAX);
        // SAFETY: logits has vocab_size floats and history n ids.
        unsafe { ffi::llmgen_sample(self.raw, logits.as_ptr(), history.as_ptr(), n) }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // SAFETY: raw came from llmgen_sampler_new and is freed once.
        unsafe { ffi::llmgen_sampler_free(self.raw) };
    }
}

/// `llmgen_session_kv_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvSize {
    /// Bytes of the KV cache (allocated when the session opened).
    pub bytes: usize,
    /// Positions each sliding-window layer keeps in its ring; None: every layer keeps the
    /// whole context.
    pub ring: Option<usize>,
}

/// One sequence of a model: its KV cache, position, last logits and sampler.
///
/// [`Session::prefill`] and [`Session::decode`] take ids and lend the logits of the last
/// one. The seam's [`decode_step`](crate::seam::InferenceSession::decode_step) picks the
/// next id with the session's sampler instead and holds it back, not yet run (as
/// `llmgen_generate` leaves its last id): it is part of the sequence, and the next prefill,
/// decode or decode step runs it first, so n decode steps cost n - 1 forward passes.
/// Reset and rewind forget it.
pub struct Session {
    raw: *mut ffi::llmgen_session,
    logits: *const f32,
    pub(crate) sampler: Sampler,
    pub(crate) unrun: Option<i32>,
    /// Declared last: released after the session is freed (fields drop after `drop`).
    model: Arc<Model>,
}

// SAFETY (llmgen.h, Threads): a session is used from one thread at a time and keeps no
// thread-local state, so it may move to another thread; every call that changes it takes
// &mut self. Not Sync: nothing here needs shared access across threads.
unsafe impl Send for Session {}

impl Session {
    /// `llmgen_session_new`: room for ctx tokens (0: min(model context, 4096)).
    pub fn new(model: &Arc<Model>, ctx: usize) -> Result<Session> {
        let ctx = c_int::try_from(ctx).map_err(|_| usage(format!("context size {ctx} is out of range")))?;
        let sampler = Sampler::new(&SamplerParams::default(), model.vocab_size())?;
        let mut raw = ptr::null_mut();
        let mut err = ErrBuf::new();
        // SAFETY: model is alive (the Arc), out / err valid for the call.
        let st = unsafe { ffi::llmgen_session_new(model.raw(), ctx, &mut raw, err.ptr(), ERR_LEN) };
        err.check(st)?;
        Ok(Session { raw, logits: ptr::null(), sampler, unrun: None, model: Arc::clone(model) })
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// Replace the seam's sampler (greedy by default).
    pub fn set_sampler(&mut self, p: &SamplerParams) -> Result<()> {
        self.sampler = Sampler::new(p, self.model.vocab_size())?;
        Ok(())
    }

    /// `llmgen_prefill`: append ids to the sequence, lend the logits of the last one.
    pub fn prefill(&mut self, ids: &[i32]) -> Result<&[f32]> {
        self.step(ids)
    }

    /// `llmgen_decode_step`: append one id, lend its logits.
    pub fn decode(&mut self, id: i32) -> Result<&[f32]> {
        self.step(&[id])
    }

    /// Run the held-back id (if any) and ids: one `llmgen_decode_step` for one id, else
    /// `llmgen_prefill` (which refuses an empty list). The model's turn is held for the call.
    pub(crate) fn step(&mut self, ids: &[i32]) -> Result<&[f32]> {
        let run: Cow<[i32]> = match self.unrun {
            Some(id) => Cow::Owned([&[id], ids].concat()),
            None => Cow::Borrowed(ids),
        };
        let n = c_int::try_from(run.len())
            .map_err(|_| usage(format!("{} ids are more than a context can hold", run.len())))?;
        let pos = self.pos();
        let mut lg = ptr::null();
        let mut err = ErrBuf::new();
        let st = {
            let _turn = self.model.turn();
            // SAFETY: the session is live and ours (&mut), run valid for n reads.
            unsafe {
                if n == 1 {
                    ffi::llmgen_decode_step(self.raw, run[0], &mut lg, err.ptr(), ERR_LEN)
                } else {
                    ffi::llmgen_prefill(self.raw, run.as_ptr(), n, &mut lg, err.ptr(), ERR_LEN)
                }
            }
        };
        if st == ffi::LLMGEN_OK || self.pos() != pos {
            self.unrun = None; // it ran (a refused step runs nothing: then it stays held back)
        }
        err.check(st)?;
        self.logits = lg;
        Ok(self.logits().expect("a step that succeeded leaves logits"))
    }

    /// The logits of the last step (None before the first one and after reset / rewind).
    pub fn logits(&self) -> Option<&[f32]> {
        if self.logits.is_null() {
            return None;
        }
        // SAFETY: vocab_size floats owned by the session, valid until its next step, reset or
        // free: each of those takes &mut self, so this borrow ends before them.
        Some(unsafe { std::slice::from_raw_parts(self.logits, self.model.vocab_size()) })
    }

    /// The sampler's pick from the last step's logits (None before the first step).
    pub fn sample(&mut self) -> Option<i32> {
        if self.logits.is_null() {
            return None;
        }
        // SAFETY: as in logits(); nothing steps the session while the sampler reads them.
        let lg = unsafe { std::slice::from_raw_parts(self.logits, self.model.vocab_size()) };
        Some(self.sampler.sample(lg, &[]))
    }

    /// `llmgen_session_reset`: forget every token.
    pub fn reset(&mut self) {
        // SAFETY: live session, ours.
        unsafe { ffi::llmgen_session_reset(self.raw) };
        self.logits = ptr::null();
        self.unrun = None;
    }

    /// `llmgen_session_rewind`: forget the tokens from pos on and return the new position:
    /// pos, or 0 where a sliding-window layer's ring no longer holds the window before pos.
    /// A pos past the current position changes nothing.
    pub fn rewind(&mut self, pos: usize) -> usize {
        if pos <= self.pos() {
            // SAFETY: live session, ours; 0 <= pos <= its position.
            unsafe { ffi::llmgen_session_rewind(self.raw, pos as c_int) };
            self.logits = ptr::null();
            self.unrun = None;
        }
        self.pos()
    }

    /// `llmgen_session_pos`: tokens in the KV cache.
    pub fn pos(&self) -> usize {
        // SAFETY: live session.
        unsafe { ffi::llmgen_session_pos(self.raw) }.max(0) as usize
    }

    /// `llmgen_session_ctx`: the capacity in tokens.
    pub fn ctx(&self) -> usize {
        // SAFETY: live session.
        unsafe { ffi::llmgen_session_ctx(self.raw) }.max(0) as usize
    }

    /// `llmgen_session_kv_bytes`.
    pub fn kv_size(&self) -> KvSize {
        let mut ring: c_int = 0;
        // SAFETY: live session; ring is a valid out-parameter.
        let bytes = unsafe { ffi::llmgen_session_kv_bytes(self.raw, &mut ring) };
        KvSize { bytes, ring: if ring > 0 { Some(ring as usize) } else { None } }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: raw came from llmgen_session_new and is freed once, while self.model (an
        // Arc field, dropped after this) still keeps the model alive.
        unsafe { ffi::llmgen_session_free(self.raw) };
    }
}
