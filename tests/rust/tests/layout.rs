//! The hand-written declarations of src/ffi.rs against llmgen.h:
//! - `layout_matches_the_c_compiler`: size, alignment and field offsets / sizes of every
//!   public struct, size, signedness and values of the enums, the #defines: the Rust
//!   compiler's numbers against those layout.c printed (the C compiler's, build.rs);
//! - `every_declaration_of_the_header_is_bound`: the header's struct fields, enum values,
//!   #defines, opaque types, callback types and functions, parsed from its text, against the lists
//!   below and the signatures written in src/ffi.rs, C types mapped to Rust ones.
//!
//! A field added, removed, moved, renamed or retyped in llmgen.h fails one of the two.
use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of};

use llmgen::ffi;

fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// The facts of each struct as `layout.c` prints them; the pattern without `..` stops the
/// build if ffi.rs has a field the list lacks.
macro_rules! structs {
    ($facts:ident, $fields:ident; $($t:ident { $($f:ident),* $(,)? })*) => {$({
        #[allow(dead_code)]
        fn exhaustive(v: ffi::$t) {
            let ffi::$t { $($f: _),* } = v;
        }
        $facts.push(format!("size {} {}", stringify!($t), size_of::<ffi::$t>()));
        $facts.push(format!("align {} {}", stringify!($t), align_of::<ffi::$t>()));
        $(
            $facts.push(format!("offset {}.{} {}", stringify!($t), stringify!($f), offset_of!(ffi::$t, $f)));
            $facts.push(format!("size {}.{} {}", stringify!($t), stringify!($f), field_size(|s: &ffi::$t| &s.$f)));
        )*
        $fields.insert(stringify!($t).to_string(), vec![$(stringify!($f).to_string()),*]);
    })*};
}

macro_rules! enums {
    ($facts:ident, $values:ident; $($t:ident { $($v:ident),* $(,)? })*) => {$(
        $facts.push(format!("size {} {}", stringify!($t), size_of::<ffi::$t>()));
        $facts.push(format!("minus-one {} {}", stringify!($t), (-1i64 as ffi::$t) as i64));
        $( $facts.push(format!("value {} {}", stringify!($v), ffi::$v as i64)); )*
        $values.insert(stringify!($t).to_string(), vec![$(stringify!($v).to_string()),*]);
    )*};
}

/// The integer #defines of the header, as ffi.rs declares them.
fn defines() -> [(&'static str, i64); 4] {
    [
        ("LLMGEN_MAX_THREADS", ffi::LLMGEN_MAX_THREADS as i64),
        ("LLMGEN_DEFAULT_CONTEXT", ffi::LLMGEN_DEFAULT_CONTEXT as i64),
        ("LLMGEN_MAX_CONTEXT", ffi::LLMGEN_MAX_CONTEXT as i64),
        ("LLMGEN_MAX_SEQUENCES", ffi::LLMGEN_MAX_SEQUENCES as i64),
    ]
}

struct Declared {
    facts: Vec<String>,
    fields: BTreeMap<String, Vec<String>>,
    values: BTreeMap<String, Vec<String>>,
}

fn declared() -> Declared {
    let (mut facts, mut fields, mut values) = (Vec::new(), BTreeMap::new(), BTreeMap::new());
    structs!(facts, fields;
        llmgen_model_options { n_threads, kernels, no_tokenizer, tokenizer_only, exact, split_all }
        llmgen_capabilities {
            architecture, format, weight_types, kernels, context_length, vocab_size, n_threads, max_sequences,
            has_tokenizer, cpus, cpus_from,
        }
        llmgen_message { role, content }
        llmgen_chat_options {
            template_name, date, template_text, bos_token, eos_token, tools_json, vars_json, messages_json,
        }
        llmgen_sampler_params {
            temperature, top_k, top_p, min_p, repeat_penalty, seed, presence_penalty, frequency_penalty,
        }
        llmgen_generate_params {
            max_tokens, ignore_eos, stops, n_stops, sampler, keep_cache, logprobs, top_logprobs, reuse_prefix,
            grammar, json_schema, strict_schema, no_close, on_piece, on_logits, user, draft_lookup, draft_session,
            draft_max,
            draft_fn, draft_user,
        }
        llmgen_reasoning_span { reasoning_begin, reasoning_end, answer_begin, has_reasoning }
        llmgen_reasoning_piece { reasoning, reasoning_len, text, text_len }
        llmgen_logprob { id, logprob }
        llmgen_result {
            ids, n_ids, text, text_len, stop_reason, n_closed, logprobs, top_logprobs, n_prompt, n_cached,
            prefill_s, decode_s, first_token_s, n_drafted, n_accepted, n_passes, n_syncs, n_solo,
        }
    );
    enums!(facts, values;
        llmgen_status {
            LLMGEN_OK, LLMGEN_E_USAGE, LLMGEN_E_FORMAT, LLMGEN_E_IO, LLMGEN_E_CONTEXT, LLMGEN_E_NOMEM,
            LLMGEN_E_BUSY, LLMGEN_E_TOKENIZER, LLMGEN_E_TEMPLATE,
        }
        llmgen_stop_reason {
            LLMGEN_STOP_LENGTH, LLMGEN_STOP_EOS, LLMGEN_STOP_STRING, LLMGEN_STOP_CONTEXT, LLMGEN_STOP_CANCELLED,
        }
    );
    for (name, v) in defines() {
        facts.push(format!("value {name} {v}"));
    }
    facts.push(format!("string LLMGEN_VERSION {}", ffi::LLMGEN_VERSION));
    Declared { facts, fields, values }
}

/// "kind name value" lines keyed by everything but the value.
fn keyed<'a>(lines: impl Iterator<Item = &'a str>) -> BTreeMap<String, String> {
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l.trim().rsplit_once(' ').unwrap_or((l, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn layout_matches_the_c_compiler() {
    let c_text = std::fs::read_to_string(env!("LLMGEN_LAYOUT")).expect("layout.txt (build.rs)");
    let c = keyed(c_text.lines());
    let d = declared();
    let rust = keyed(d.facts.iter().map(|s| s.as_str()));
    let mut diffs = Vec::new();
    for (k, v) in &c {
        match rust.get(k) {
            Some(r) if r == v => {}
            Some(r) => diffs.push(format!("{k}: C {v}, Rust {r}")),
            None => diffs.push(format!("{k}: C {v}, not declared in Rust")),
        }
    }
    for (k, r) in &rust {
        if !c.contains_key(k) {
            diffs.push(format!("{k}: Rust {r}, not printed by layout.c"));
        }
    }
    assert!(
        diffs.is_empty(),
        "src/ffi.rs differs from llmgen.h ({}):\n  {}",
        env!("LLMGEN_HEADER"),
        diffs.join("\n  ")
    );
    assert!(c.len() > 100, "layout.c printed only {} facts", c.len());
}

// ---- the header's declarations, from its text ---------------------------------------------

/// The header without comments, preprocessor lines and the C++ guard, as statements.
fn statements(h: &str) -> Vec<String> {
    let mut text = String::new();
    let mut rest = h;
    while let Some(i) = rest.find("/*") {
        text.push_str(&rest[..i]);
        rest = &rest[i + rest[i..].find("*/").expect("unclosed comment") + 2..];
    }
    text.push_str(rest);
    let text: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .filter(|l| !l.trim_start().starts_with('#') && l.trim() != "extern \"C\" {" && l.trim() != "}")
        .collect::<Vec<_>>()
        .join(" ");
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for ch in text.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if ch == ';' && depth == 0 {
            out.push(cur.split_whitespace().collect::<Vec<_>>().join(" "));
            cur.clear();
        } else {
            cur.push(ch);
        }
    }
    assert!(cur.trim().is_empty(), "header ends mid-statement: {cur:?}");
    out
}

fn last_ident(s: &str) -> String {
    let s = s.trim_end();
    let start = s.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    s[start..].to_string()
}

/// Split at commas outside parentheses / angle brackets.
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for ch in s.chars() {
        match ch {
            '(' | '<' => depth += 1,
            ')' | '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// A C type ("const char *const *") as the Rust type ffi.rs must use ("*const *const c_char").
fn rust_type(c: &str) -> String {
    let toks: Vec<String> = c.replace('*', " * ").split_whitespace().map(String::from).collect();
    let first_star = toks.iter().position(|t| t == "*").unwrap_or(toks.len());
    let base_const = toks[..first_star].iter().any(|t| t == "const");
    let base = toks[..first_star].iter().find(|t| *t != "const").expect("a type").as_str();
    let mut r = match base {
        "char" => "c_char",
        "int" => "c_int",
        "long" => "c_long",
        "void" => "c_void",
        "size_t" => "usize",
        "int32_t" => "i32",
        "uint32_t" => "u32",
        "int64_t" => "i64",
        "uint64_t" => "u64",
        "float" => "f32",
        "double" => "f64",
        other => other,
    }
    .to_string();
    if r == "c_void" && first_star == toks.len() {
        return String::new(); // a void return
    }
    let mut pointee_const = base_const;
    for (i, t) in toks.iter().enumerate().skip(first_star) {
        if t == "*" {
            r = format!("*{} {r}", if pointee_const { "const" } else { "mut" });
            pointee_const = toks.get(i + 1).is_some_and(|n| n == "const");
        }
    }
    r
}

/// C parameters "(const char *path, int n)" as Rust types.
fn c_params(list: &str) -> Vec<String> {
    if list.trim() == "void" {
        return Vec::new();
    }
    split_top(list)
        .iter()
        .map(|p| {
            let name = last_ident(p);
            rust_type(&p[..p.len() - name.len()])
        })
        .collect()
}

fn normalize_rust(t: &str) -> String {
    t.replace("std::os::raw::", "").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Rust parameters "(path: *const c_char, n: c_int)" as types.
fn rust_params(list: &str) -> Vec<String> {
    split_top(list).iter().map(|p| normalize_rust(p.split_once(':').expect("name: type").1)).collect()
}

/// (return type, parameter types) of a C declarator "ret name(params)".
fn c_signature(stmt: &str) -> (String, String, Vec<String>) {
    let open = stmt.find('(').unwrap();
    let name = last_ident(&stmt[..open]);
    let ret = rust_type(&stmt[..open - name.len()]);
    (name, ret, c_params(&stmt[open + 1..stmt.rfind(')').unwrap()]))
}

/// name -> (return type, parameter types), in Rust's spelling
type Signatures = BTreeMap<String, (String, Vec<String>)>;

struct Header {
    fields: BTreeMap<String, Vec<String>>,
    values: BTreeMap<String, Vec<String>>,
    opaque: Vec<String>,
    /// the #defined names (LLMGEN_H, the include guard, aside)
    defines: Vec<String>,
    functions: Signatures,
    callbacks: Signatures,
}

fn header() -> Header {
    let text = std::fs::read_to_string(env!("LLMGEN_HEADER")).expect("llmgen.h");
    let mut h = Header {
        fields: BTreeMap::new(),
        values: BTreeMap::new(),
        opaque: Vec::new(),
        defines: text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("#define "))
            .filter_map(|d| d.split_whitespace().next())
            .filter(|n| *n != "LLMGEN_H")
            .map(String::from)
            .collect(),
        functions: BTreeMap::new(),
        callbacks: BTreeMap::new(),
    };
    for s in statements(&text) {
        if s.is_empty() {
            continue;
        }
        let body = |s: &str| s[s.find('{').unwrap() + 1..s.rfind('}').unwrap()].to_string();
        if s.starts_with("typedef struct {") {
            let names = body(&s).split(';').filter(|d| !d.trim().is_empty()).map(last_ident).collect();
            h.fields.insert(last_ident(&s), names);
        } else if s.starts_with("typedef enum {") {
            let names = body(&s)
                .split(',')
                .filter(|d| !d.trim().is_empty())
                .map(|d| d.split('=').next().unwrap().trim().to_string())
                .collect();
            h.values.insert(last_ident(&s), names);
        } else if s.starts_with("typedef struct ") {
            h.opaque.push(last_ident(&s));
        } else if let Some(rest) = s.strip_prefix("typedef ") {
            // "ret (*name)(params)"
            let (ret, tail) = rest.split_once("(*").expect("a callback typedef");
            let (name, params) = tail.split_once(")(").unwrap();
            h.callbacks.insert(name.to_string(), (rust_type(ret), c_params(params.trim_end_matches(')'))));
        } else {
            let (name, ret, params) = c_signature(&s);
            h.functions.insert(name, (ret, params));
        }
    }
    h
}

/// The `pub fn` declarations and callback types of src/ffi.rs.
fn rust_functions() -> (Signatures, Signatures) {
    let src = include_str!("../src/ffi.rs");
    let mut fns = BTreeMap::new();
    let block = &src[src.find("extern \"C\" {").expect("extern block")..];
    for decl in block.split(';').filter_map(|d| d.find("pub fn ").map(|i| &d[i + 7..])) {
        let open = decl.find('(').unwrap();
        let close = decl.rfind(')').unwrap();
        let ret = decl[close + 1..].trim().strip_prefix("->").map_or(String::new(), normalize_rust);
        fns.insert(decl[..open].trim().to_string(), (ret, rust_params(&decl[open + 1..close])));
    }
    let mut cbs = BTreeMap::new();
    for decl in src.split(';').filter_map(|d| d.find("pub type ").map(|i| &d[i + 9..])) {
        let decl = decl.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some((name, ty)) = decl.split_once(" = Option<unsafe extern \"C\" fn(") {
            let close = ty.rfind(')').unwrap();
            let ret = ty[close + 1..].trim().trim_end_matches('>').trim();
            let ret = ret.strip_prefix("->").map_or(String::new(), normalize_rust);
            cbs.insert(name.trim().to_string(), (ret, rust_params(&ty[..close])));
        }
    }
    (fns, cbs)
}

fn compare<V: PartialEq + std::fmt::Debug>(
    what: &str,
    c: &BTreeMap<String, V>,
    r: &BTreeMap<String, V>,
    diffs: &mut Vec<String>,
) {
    for (k, v) in c {
        match r.get(k) {
            Some(rv) if rv == v => {}
            Some(rv) => diffs.push(format!("{what} {k}: header {v:?}, Rust {rv:?}")),
            None => diffs.push(format!("{what} {k}: in the header, not declared in Rust")),
        }
    }
    for k in r.keys().filter(|k| !c.contains_key(*k)) {
        diffs.push(format!("{what} {k}: declared in Rust, not in the header"));
    }
}

#[test]
fn every_declaration_of_the_header_is_bound() {
    let h = header();
    let d = declared();
    let (fns, cbs) = rust_functions();
    let mut diffs = Vec::new();
    compare("struct", &h.fields, &d.fields, &mut diffs);
    compare("enum", &h.values, &d.values, &mut diffs);
    compare("function", &h.functions, &fns, &mut diffs);
    compare("callback", &h.callbacks, &cbs, &mut diffs);
    let mut opaque = h.opaque.clone();
    opaque.sort();
    let bound: Vec<String> = {
        // each is a zero-sized, unconstructible type in ffi.rs
        let sizes = [
            ("llmgen_batch", size_of::<ffi::llmgen_batch>()),
            ("llmgen_chat", size_of::<ffi::llmgen_chat>()),
            ("llmgen_detok", size_of::<ffi::llmgen_detok>()),
            ("llmgen_model", size_of::<ffi::llmgen_model>()),
            ("llmgen_reasoning", size_of::<ffi::llmgen_reasoning>()),
            ("llmgen_sampler", size_of::<ffi::llmgen_sampler>()),
            ("llmgen_session", size_of::<ffi::llmgen_session>()),
        ];
        assert!(sizes.iter().all(|(_, s)| *s == 0));
        sizes.iter().map(|(n, _)| n.to_string()).collect()
    };
    if opaque != bound {
        diffs.push(format!("opaque types: header {opaque:?}, Rust {bound:?}"));
    }
    let mut defined = h.defines.clone();
    defined.sort();
    let mut declared_defines: Vec<String> = defines().iter().map(|(n, _)| n.to_string()).collect();
    declared_defines.push("LLMGEN_VERSION".into());
    declared_defines.sort();
    if defined != declared_defines {
        diffs.push(format!("#defines: header {defined:?}, Rust {declared_defines:?}"));
    }
    assert!(diffs.is_empty(), "src/ffi.rs and {} disagree:\n  {}", env!("LLMGEN_HEADER"), diffs.join("\n  "));
    assert!(h.functions.len() >= 45 && h.fields.len() >= 8, "the header parse found too little");
}

#[test]
fn c_types_map_as_the_abi_says() {
    assert_eq!(rust_type("const char *const *"), "*const *const c_char");
    assert_eq!(rust_type("const float **"), "*mut *const f32");
    assert_eq!(rust_type("llmgen_model **"), "*mut *mut llmgen_model");
    assert_eq!(rust_type("void"), "");
    assert_eq!(rust_type("void *"), "*mut c_void");
}
