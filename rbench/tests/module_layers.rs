//! rbench's top-level modules form layers, not a cycle (issue 31): roots
//! and cpu at the bottom, the sources (powercap, msr, perf, ebpf, ksample)
//! that only open and read, discovery and liveness above them, then plan,
//! paths, and what runs them. This test reads every `crate::` path of
//! `src/` (library code: comments, strings and `#[cfg(test)]` items left
//! out, since a test may check one layer against another) and fails on any
//! cycle among the modules, naming the references that make it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Edges = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// `text` without comments, and with string and char literals emptied.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                out.extend(text[i..end].chars().filter(|&c| c == '\n'));
                i = end;
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && !b[..i]
                    .last()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let open = i + 1 + hashes;
                if b.get(open) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let end = text[open + 1..]
                    .find(&close)
                    .map_or(b.len(), |e| open + 1 + e + close.len());
                out.push_str("\"\"");
                out.extend(text[i..end].chars().filter(|&c| c == '\n'));
                i = end;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                out.push_str("\"\"");
                i += 1;
            }
            // a char literal ('{', '\''), not a lifetime ('a)
            b'\'' if b.get(i + 2) == Some(&b'\'') => {
                out.push_str("' '");
                i += 3;
            }
            b'\'' if b.get(i + 1) == Some(&b'\\') => {
                let end = text[i + 2..].find('\'').map_or(b.len(), |e| i + 2 + e + 1);
                out.push_str("' '");
                i = end;
            }
            _ => {
                let c = text[i..].chars().next().unwrap();
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// `code` without its `#[cfg(test)]` items, and the file modules they
/// declare (`#[cfg(test)] mod tests;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_files = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        // the item ends at its first `;` outside braces, or at the brace
        // closing its first `{`
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        let words: Vec<&str> = item[..end].split_whitespace().collect();
        if let Some(pos) = words.iter().position(|w| *w == "mod") {
            if let Some(name) = words.get(pos + 1).and_then(|n| n.strip_suffix(';')) {
                test_files.push(name.to_string());
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_files)
}

/// The first segment of every path `code` names through `crate::`,
/// grouped imports (`crate::{a::b, c}`) included.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at]
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        {
            continue; // some_crate::, or $crate::
        }
        let after = &code[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 1;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        found.push(first_ident(&group[start..i]));
                        start = i + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        } else {
            found.push(first_ident(after));
        }
    }
    found.retain(|s| !s.is_empty());
    found
}

fn first_ident(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The `.rs` files of a module, its test-only file modules left out.
fn module_files(path: &Path, out: &mut Vec<(PathBuf, String)>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for entry in entries {
            module_files(&entry, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        let (code, _) = without_tests(&code_only(&fs::read_to_string(path).unwrap()));
        out.push((path.to_path_buf(), code));
    }
}

/// Every file declared `#[cfg(test)] mod x;` anywhere under `src`.
fn test_only_files(src: &Path) -> BTreeSet<PathBuf> {
    let mut all = Vec::new();
    module_files(src, &mut all);
    let mut files = BTreeSet::new();
    for (path, _) in all {
        let raw = code_only(&fs::read_to_string(&path).unwrap());
        let dir = match path.file_name().unwrap().to_str().unwrap() {
            "mod.rs" | "lib.rs" => path.parent().unwrap().to_path_buf(),
            _ => path.with_extension(""),
        };
        for name in without_tests(&raw).1 {
            files.insert(dir.join(format!("{name}.rs")));
            files.insert(dir.join(&name));
        }
    }
    files
}

/// module -> module it names -> the files that name it.
fn edges(src: &Path) -> Edges {
    let test_only = test_only_files(src);
    let lib = without_tests(&code_only(&fs::read_to_string(src.join("lib.rs")).unwrap())).0;
    // the modules, and the names lib.rs re-exports from them
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for line in lib.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("pub mod ").or(line.strip_prefix("mod ")) {
            let name = name.trim_end_matches(';').to_string();
            owner.insert(name.clone(), name);
        } else if let Some(rest) = line.strip_prefix("pub use ") {
            let (module, names) = rest.split_once("::").unwrap();
            for name in names
                .trim_end_matches(';')
                .trim_matches(['{', '}'])
                .split(',')
            {
                owner.insert(name.trim().to_string(), module.to_string());
            }
        }
    }
    let mut edges = Edges::new();
    for module in owner.iter().filter(|(k, v)| k == v).map(|(k, _)| k) {
        let mut files = Vec::new();
        for path in [src.join(format!("{module}.rs")), src.join(module)] {
            if path.exists() && !test_only.contains(&path) {
                module_files(&path, &mut files);
            }
        }
        let node = edges.entry(module.clone()).or_default();
        for (path, code) in files.iter().filter(|(p, _)| !test_only.contains(p)) {
            for name in crate_paths(code) {
                match owner.get(&name) {
                    Some(target) if target != module => {
                        let file = path.strip_prefix(src).unwrap().display().to_string();
                        node.entry(target.clone()).or_default().insert(file);
                    }
                    _ => {}
                }
            }
        }
    }
    edges
}

/// The modules `from` reaches through `edges`.
fn reach<'a>(edges: &'a Edges, from: &'a str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from];
    while let Some(m) = todo.pop() {
        for next in edges.get(m).into_iter().flat_map(|e| e.keys()) {
            if seen.insert(next.as_str()) {
                todo.push(next);
            }
        }
    }
    seen
}

/// Each set of modules that reach one another (a cycle, or several that
/// share modules), in name order.
fn cycles(edges: &Edges) -> Vec<Vec<String>> {
    let reached: BTreeMap<&str, BTreeSet<&str>> = edges
        .keys()
        .map(|m| (m.as_str(), reach(edges, m)))
        .collect();
    let mut found: Vec<Vec<String>> = Vec::new();
    for (m, from_m) in &reached {
        let members: Vec<String> = from_m
            .iter()
            .filter(|u| reached.get(*u).is_some_and(|r| r.contains(m)))
            .map(|u| u.to_string())
            .collect();
        if !members.is_empty() && !found.contains(&members) {
            found.push(members);
        }
    }
    found
}

#[test]
fn no_module_cycle_in_rbench() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = edges(&src);
    assert!(
        edges["discovery"].contains_key("msr") && edges["cpu"].contains_key("roots"),
        "the reader misses references: {edges:?}"
    );
    let mut report = String::new();
    for component in cycles(&edges) {
        report.push_str(&format!("cycle among {}:\n", component.join(", ")));
        for from in &component {
            for (to, files) in &edges[from] {
                if component.contains(to) {
                    let files: Vec<&str> = files.iter().map(String::as_str).collect();
                    report.push_str(&format!("  {from} -> {to} ({})\n", files.join(", ")));
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "rbench's modules form a cycle:\n{report}"
    );
}

#[test]
fn the_reader_sees_through_comments_strings_groups_and_tests() {
    let code = code_only(
        "use crate::{a::X, b, c::{d, e}}; // crate::f\n\
         /* crate::g */ let s = \"crate::h\"; let r = r#\"crate::i\"#;\n\
         let c = '{'; fn f<'a>() {} other_crate::j; crate::k::l();\n\
         #[cfg(test)]\nmod tests { use crate::m; fn f() { if x { crate::n } } }\n\
         #[cfg(test)]\nmod more;\ncrate::o;",
    );
    let (code, test_files) = without_tests(&code);
    assert_eq!(crate_paths(&code), ["a", "b", "c", "k", "o"]);
    assert_eq!(test_files, ["more"]);
    let mut edges = Edges::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges
            .entry(from.into())
            .or_default()
            .insert(to.into(), BTreeSet::new());
    }
    edges.entry("d".into()).or_default();
    assert_eq!(cycles(&edges), [["a", "b", "c"]]);
}
