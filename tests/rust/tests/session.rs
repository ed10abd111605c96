//! The safe layer on a tiny committed fixture (tests/fixtures/tiny-qwen3-gqa-tied-f32, 2 layers,
//! vocabulary 384): steps, rewind, KV size, the seam's lazy last id, errors as Err with the
//! library's message, ownership through Arc, and sessions moved to other threads.
use std::sync::Arc;

use llmgen::seam::{InferenceBackend, InferenceSession};
use llmgen::{Model, ModelOptions, SamplerParams, Session, Status};

const PROMPT: [i32; 5] = [17, 250, 3, 99, 42];
const N: usize = 8;

fn model() -> Arc<Model> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/tiny-qwen3-gqa-tied-f32/model.q8_0.gguf");
    Model::open(path, &ModelOptions { threads: 1, exact: true, ..Default::default() }).expect("open the fixture")
}

/// Greedy by hand on the raw steps: sample the logits, run the id.
fn by_hand(s: &mut Session, prompt: &[i32], n: usize) -> Vec<i32> {
    s.prefill(prompt).unwrap();
    let mut ids = vec![s.sample().unwrap()];
    while ids.len() < n {
        s.decode(*ids.last().unwrap()).unwrap();
        ids.push(s.sample().unwrap());
    }
    ids
}

#[test]
fn steps_rewind_and_kv_size() {
    let m = model();
    let mut s = Session::new(&m, 0).unwrap();
    let caps = Model::capabilities(&m); // m.capabilities() is the seam's, with its trait in scope
    assert_eq!(caps.architecture, "qwen3");
    assert_eq!(s.ctx(), caps.context_length.min(4096));
    let kv = s.kv_size();
    assert!(kv.bytes > 0 && kv.ring.is_none(), "{kv:?}");
    assert!(s.logits().is_none());

    assert_eq!(s.prefill(&PROMPT).unwrap().len(), caps.vocab_size);
    assert_eq!(s.pos(), PROMPT.len());
    s.reset();
    let ids = by_hand(&mut s, &PROMPT, N);
    assert_eq!(s.pos(), PROMPT.len() + N - 1);
    assert_eq!(s.kv_size(), kv, "the cache is allocated once");

    // back to before the prompt's last id: running it again gives the same continuation
    assert_eq!(s.rewind(PROMPT.len() - 1), PROMPT.len() - 1);
    assert!(s.logits().is_none());
    assert_eq!(by_hand(&mut s, &PROMPT[PROMPT.len() - 1..], N), ids);
    assert_eq!(s.rewind(1000), s.pos(), "a position past the end changes nothing");

    // the seam: the same ids, the last one picked but not run
    let mut t = m.new_session().unwrap();
    t.prefill(&PROMPT).unwrap();
    let seam: Vec<i32> = (0..N).map(|_| t.decode_step().unwrap()).collect();
    assert_eq!(seam, ids);
    assert_eq!(t.pos(), PROMPT.len() + N - 1);
    // a prefill after decode steps runs the held-back id first
    InferenceSession::prefill(&mut t, &[5]).unwrap();
    assert_eq!(t.pos(), PROMPT.len() + N + 1);
    assert_eq!(t.capabilities().context_length, t.ctx());
}

#[test]
fn errors_carry_the_library_message() {
    let m = model();
    let vocab = m.vocab_size() as i32;

    let e = Model::open("no/such/model.gguf", &ModelOptions::default()).err().expect("a missing file");
    assert_eq!(e.status, Status::Io);
    assert!(e.message.contains("no/such/model.gguf"), "{e}");

    let mut s = Session::new(&m, 16).unwrap();
    let e = s.prefill(&[1, vocab]).unwrap_err();
    assert_eq!(e.status, Status::Usage);
    assert_eq!(e.message, format!("token id {vocab} is outside the vocabulary [0, {vocab})"));
    assert_eq!(e.to_string(), format!("usage: token id {vocab} is outside the vocabulary [0, {vocab})"));
    assert_eq!(s.decode(-1).unwrap_err().status, Status::Usage);
    assert_eq!(s.prefill(&[]).unwrap_err().status, Status::Usage);
    let e = s.prefill(&[1; 17]).unwrap_err();
    assert_eq!(e.status, Status::Context);
    assert!(e.message.contains("context size 16"), "{e}");
    assert_eq!(s.pos(), 0, "a refused step runs nothing");

    let e = Session::new(&m, 1 << 20).err().expect("a context above the model's");
    assert_eq!(e.status, Status::Usage);
    assert!(e.message.contains("exceeds the model's maximum"), "{e}");

    let e = s.set_sampler(&SamplerParams { top_p: 2.0, ..Default::default() }).unwrap_err();
    assert_eq!(e.status, Status::Usage);
    assert!(e.message.contains("top_p") || e.message.contains("top-p"), "{e}");

    // the seam: a refused prefill keeps the held-back id
    let mut t = m.new_session().unwrap();
    assert!(t.decode_step().is_err(), "no logits before a prefill");
    InferenceSession::prefill(&mut t, &PROMPT).unwrap();
    let first = t.decode_step().unwrap();
    assert!(InferenceSession::prefill(&mut t, &[vocab]).is_err());
    let second = t.decode_step().unwrap();
    let mut u = Session::new(&m, 0).unwrap();
    assert_eq!(by_hand(&mut u, &PROMPT, 2), vec![first, second]);
}

#[test]
fn a_session_keeps_its_model_alive() {
    let m = model();
    let mut s = Session::new(&m, 0).unwrap();
    assert_eq!(Arc::strong_count(&m), 2);
    drop(m); // the session still holds the model: freed after it
    let ids = by_hand(&mut s, &PROMPT, 3);
    assert_eq!(ids.len(), 3);
    let weak = Arc::downgrade(s.model());
    drop(s);
    assert!(weak.upgrade().is_none(), "the last session freed the model");
}

#[test]
fn sessions_move_to_threads() {
    fn send<T: Send>() {}
    fn sync<T: Send + Sync>() {}
    send::<Session>();
    sync::<Model>();

    let m = model();
    let want = by_hand(&mut Session::new(&m, 0).unwrap(), &PROMPT, N);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let mut s = m.new_session().unwrap();
            std::thread::spawn(move || {
                s.prefill(&PROMPT).unwrap();
                (0..N).map(|_| s.decode_step().unwrap()).collect::<Vec<i32>>()
            })
        })
        .collect();
    drop(m);
    for h in handles {
        assert_eq!(h.join().unwrap(), want);
    }
}
