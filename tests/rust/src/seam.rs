//! The inference-session seam: what a runtime asks of a compute backend that owns its
//! forward pass and its KV cache. Nothing in the traits is llmgen's; the impls below are
//! the safe layer behind them.
//!
//! A session is one sequence. `prefill` appends prompt ids to it; `decode_step` picks the
//! next id (with the session's sampler), makes it part of the sequence and returns it.
//! The backend may run a picked id lazily, with the next step: llmgen does, so n steps
//! after a prefill cost n - 1 forward passes, as `llmgen_generate` runs them.

use std::sync::Arc;

use crate::{usage, Model, Session};

/// What a backend (or one of its sessions) tells the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Who computes: name, version, architecture, weights, kernels.
    pub backend: String,
    /// Entries of the distribution over next ids.
    pub vocab_size: usize,
    /// Tokens a session holds (a backend: the most a session may be given).
    pub context_length: usize,
    /// Sessions that can share one forward pass.
    pub max_sequences: usize,
}

/// One sequence whose KV cache the backend owns.
pub trait InferenceSession {
    type Error: std::error::Error + Send + Sync + 'static;
    fn capabilities(&self) -> Capabilities;
    /// Append ids at the end of the sequence.
    fn prefill(&mut self, ids: &[i32]) -> Result<(), Self::Error>;
    /// Pick the next id after the sequence, append it, return it.
    fn decode_step(&mut self) -> Result<i32, Self::Error>;
}

/// A loaded model that hands out sessions.
pub trait InferenceBackend {
    type Error: std::error::Error + Send + Sync + 'static;
    type Session: InferenceSession<Error = Self::Error>;
    fn capabilities(&self) -> Capabilities;
    fn new_session(&self) -> Result<Self::Session, Self::Error>;
}

fn describe(m: &Model) -> String {
    let c = m.capabilities();
    format!(
        "llmgen {} ({} {} {}, kernels {})",
        crate::ffi::LLMGEN_VERSION,
        c.architecture,
        c.format,
        c.weight_types,
        c.kernels
    )
}

impl InferenceBackend for Arc<Model> {
    type Error = crate::Error;
    type Session = Session;

    fn capabilities(&self) -> Capabilities {
        let c = Model::capabilities(self);
        Capabilities {
            backend: describe(self),
            vocab_size: c.vocab_size,
            context_length: c.context_length,
            max_sequences: c.max_sequences,
        }
    }

    /// A session with the default context (min(model context, 4096)) and a greedy sampler.
    fn new_session(&self) -> crate::Result<Session> {
        Session::new(self, 0)
    }
}

impl InferenceSession for Session {
    type Error = crate::Error;

    fn capabilities(&self) -> Capabilities {
        let m = self.model();
        Capabilities {
            backend: describe(m),
            vocab_size: m.vocab_size(),
            context_length: self.ctx(),
            max_sequences: m.capabilities().max_sequences,
        }
    }

    fn prefill(&mut self, ids: &[i32]) -> crate::Result<()> {
        Session::prefill(self, ids).map(|_| ())
    }

    fn decode_step(&mut self) -> crate::Result<i32> {
        if self.unrun.is_some() {
            self.step(&[])?; // the id picked last
        }
        let id = self.sample().ok_or_else(|| usage("decode step before any prefill: no logits to pick from".into()))?;
        self.unrun = Some(id);
        Ok(id)
    }
}
