//! rust-client: drives llmgen only through the inference-session seam (llmgen::seam); the
//! llmgen-specific lines open models (the one to run, and a missing file for the errors).
//!
//! usage: rust-client [--exact] [-t THREADS] [-n N] MODEL IDS [IDS...]    (IDS: 1,2,3)
//!
//! Prints, one line each (tests/cli/check_rust.py compares the ids with `llmgen --ids`):
//!   greedy I: ids     N greedy ids after prompt I, one session per prompt
//!   threads I: ids    the same from four sessions on four threads (prompt I % prompts),
//!                     each required to equal its single-threaded run
//!   error WHAT: msg   a missing model file, an id outside the vocabulary, a prompt longer
//!                     than the context, a step before any prefill: each must come back as an
//!                     Err (after which the session still gives prompt 0's ids)
//! Exits 1 if a requirement fails, 2 on bad usage.

use std::process::ExitCode;
use std::sync::{Barrier, Mutex};

use llmgen::seam::{InferenceBackend, InferenceSession};

const THREADS: usize = 4;

struct Args {
    exact: bool,
    threads: usize,
    n: usize,
    model: String,
    prompts: Vec<Vec<i32>>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { exact: false, threads: 0, n: 32, model: String::new(), prompts: Vec::new() };
    let mut it = std::env::args().skip(1);
    let mut rest = Vec::new();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--exact" => a.exact = true,
            "-t" | "-n" => {
                let v = it.next().ok_or(format!("{arg} needs a value"))?;
                let v: usize = v.parse().map_err(|_| format!("{arg} {v}: not a count"))?;
                if arg == "-t" {
                    a.threads = v
                } else {
                    a.n = v
                }
            }
            _ => rest.push(arg),
        }
    }
    if rest.len() < 2 || a.n == 0 {
        return Err("usage: rust-client [--exact] [-t THREADS] [-n N] MODEL IDS [IDS...]".into());
    }
    a.model = rest.remove(0);
    for p in rest {
        let ids: Result<Vec<i32>, _> = p.split(',').map(|s| s.trim().parse::<i32>()).collect();
        a.prompts.push(ids.map_err(|_| format!("{p}: not comma-separated ids"))?);
    }
    Ok(a)
}

fn ids_line(ids: &[i32]) -> String {
    ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// n greedy ids after prompt, through the seam only.
fn greedy<S: InferenceSession>(s: &mut S, prompt: &[i32], n: usize) -> Result<Vec<i32>, S::Error> {
    s.prefill(prompt)?;
    (0..n).map(|_| s.decode_step()).collect()
}

struct Threaded {
    /// per thread, its ids
    ids: Vec<Vec<i32>>,
    /// the thread of each step, in the order they ran
    order: Vec<usize>,
}

/// Four sessions opened here, moved to four threads, each generating from prompt i % len
/// at once (sessions of one model take turns per step).
fn four_threads<B>(backend: &B, prompts: &[Vec<i32>], n: usize) -> Result<Threaded, B::Error>
where
    B: InferenceBackend + Sync,
    B::Session: Send,
{
    let sessions = (0..THREADS).map(|_| backend.new_session()).collect::<Result<Vec<_>, _>>()?;
    let start = Barrier::new(THREADS);
    let order = Mutex::new(Vec::new());
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .into_iter()
            .enumerate()
            .map(|(i, mut s)| {
                let (start, order, prompt) = (&start, &order, &prompts[i % prompts.len()]);
                scope.spawn(move || {
                    start.wait();
                    s.prefill(prompt)?;
                    let mut ids = Vec::with_capacity(n);
                    for _ in 0..n {
                        ids.push(s.decode_step()?);
                        order.lock().unwrap().push(i);
                    }
                    Ok(ids)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a session thread panicked")).collect::<Vec<_>>()
    });
    let ids = results.into_iter().collect::<Result<Vec<_>, B::Error>>()?;
    Ok(Threaded { ids, order: order.into_inner().unwrap() })
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rust-client: {e}");
            return ExitCode::from(2);
        }
    };
    let opt = llmgen::ModelOptions { threads: a.threads, exact: a.exact, ..Default::default() };
    let backend = match llmgen::Model::open(&a.model, &opt) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("rust-client: {}: {e}", a.model);
            return ExitCode::from(1);
        }
    };
    match run(&backend, &a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rust-client: FAILED: {e}");
            ExitCode::from(1)
        }
    }
}

fn run<B>(backend: &B, a: &Args) -> Result<(), String>
where
    B: InferenceBackend + Sync,
    B::Session: Send,
{
    let caps = backend.capabilities();
    eprintln!("rust-client: {} vocab={} ctx={}", caps.backend, caps.vocab_size, caps.context_length);
    let fail = |what: &str, e: &dyn std::error::Error| format!("{what}: {e}");

    // one session per prompt, one at a time: the reference for the threads
    let mut single = Vec::new();
    for (i, p) in a.prompts.iter().enumerate() {
        let mut s = backend.new_session().map_err(|e| fail("session", &e))?;
        let ids = greedy(&mut s, p, a.n).map_err(|e| fail(&format!("greedy {i}"), &e))?;
        println!("greedy {i}: {}", ids_line(&ids));
        single.push(ids);
    }

    let Threaded { ids: threaded, order } = four_threads(backend, &a.prompts, a.n).map_err(|e| fail("threads", &e))?;
    for (i, ids) in threaded.iter().enumerate() {
        println!("threads {i}: {}", ids_line(ids));
        if *ids != single[i % single.len()] {
            return Err(format!("thread {i}: ids differ from prompt {}'s single-threaded run", i % single.len()));
        }
    }
    let switches = order.windows(2).filter(|w| w[0] != w[1]).count();
    eprintln!(
        "rust-client: {THREADS} sessions on {THREADS} threads equal their single-threaded runs \
         ({} steps, the running thread changed {switches} times)",
        order.len()
    );

    errors(backend, a, &single[0])
}

/// Misuse comes back as Err with the library's message; the session stays usable.
fn errors<B: InferenceBackend>(backend: &B, a: &Args, want: &[i32]) -> Result<(), String> {
    let missing = "no/such/model.gguf";
    match llmgen::Model::open(missing, &llmgen::ModelOptions::default()) {
        Ok(_) => return Err(format!("{missing} opened")),
        Err(e) => println!("error open: {e}"),
    }
    let mut s = backend.new_session().map_err(|e| e.to_string())?;
    let caps = s.capabilities();
    match s.decode_step() {
        Ok(id) => return Err(format!("a decode step before any prefill gave id {id}")),
        Err(e) => println!("error decode: {e}"),
    }
    let oov = caps.vocab_size as i32;
    match s.prefill(&[a.prompts[0][0], oov]) {
        Ok(()) => return Err(format!("id {oov} (the vocabulary size) was prefilled")),
        Err(e) => println!("error prefill: {e}"),
    }
    match s.prefill(&vec![0; caps.context_length + 1]) {
        Ok(()) => {
            return Err(format!("{} ids prefilled into a context of {}", caps.context_length + 1, caps.context_length))
        }
        Err(e) => println!("error context: {e}"),
    }
    let ids = greedy(&mut s, &a.prompts[0], a.n).map_err(|e| e.to_string())?;
    if ids != want {
        return Err("after the errors, the session's ids differ from prompt 0's".into());
    }
    eprintln!("rust-client: errors came back as Err; the session then repeats prompt 0's ids");
    Ok(())
}
