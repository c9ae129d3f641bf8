//! The crate's modules import each other without circles: read from the sources, each file's
//! production code (comments and `#[cfg(test)]` modules left out) names the modules it uses by
//! `crate::`, `super::` and `self::` paths; a path through a re-export (`pub use child::Item`)
//! counts as a use of the module that defines the item. Together these edges must form no
//! cycle, so that every module sits on the ones below it (the connection state under the
//! multiplexer and the accept queue, the addresses under the streams and the client registry).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path in the crate (`["mux", "io_loop"]`; the crate root is empty).
type Module = Vec<String>;

/// Every source file of the crate: its module and its text.
fn sources() -> BTreeMap<Module, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<Module, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(root).unwrap().with_extension("");
                let mut module: Module =
                    relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
                if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                    module.pop();
                }
                out.insert(module, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

/// `text` without comments and without its inline `#[cfg(test)] mod tests { .. }` (the last
/// item of a file, by the crate's convention).
fn production(text: &str) -> String {
    let code: String = text
        .lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    let squeezed = code.replace("#[cfg(test)]\nmod tests {", "\u{0}");
    squeezed.split('\u{0}').next().unwrap().to_owned()
}

/// The names of the child modules `text` declares under `#[cfg(test)]` (test-only files).
fn test_children(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == "#[cfg(test)]" {
            if let Some(next) = lines.next() {
                if let Some(name) = next.strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')) {
                    out.push(name.to_owned());
                }
            }
        }
    }
    out
}

/// Every path `text` names after `keyword` (`crate::a::{b, c::D}` gives `a::b` and `a::c::D`):
/// the segments after the keyword, groups expanded.
fn paths_after(text: &str, keyword: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find(keyword) {
        let start = from + at;
        from = start + keyword.len();
        let boundary = start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if boundary {
            expand(&text[from..], Vec::new(), &mut out);
        }
    }
    out
}

/// The paths of `rest` (what follows `keyword::`) after the segments `prefix`.
fn expand(rest: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut segments = prefix;
    let mut rest = rest;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        expand(group[item..i].trim_start(), segments.clone(), out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(group[item..i].trim_start(), segments.clone(), out);
                        item = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        segments.push(rest[..len].to_owned());
        match rest[len..].strip_prefix("::") {
            Some(more) => rest = more,
            None => break,
        }
    }
    if !segments.is_empty() {
        out.push(segments);
    }
}

/// The module a path names: the longest module prefix, or the module defining the item a
/// re-export of that module passes on.
fn resolve(
    path: &[String],
    modules: &BTreeSet<Module>,
    reexports: &BTreeMap<(Module, String), Module>,
) -> Option<Module> {
    (1..=path.len()).rev().map(|k| path[..k].to_vec()).find(|m| modules.contains(m)).map(|m| {
        path.get(m.len()).and_then(|item| reexports.get(&(m.clone(), item.clone()))).cloned().unwrap_or(m)
    })
}

/// The crate's module graph: each production module and the modules it uses.
fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let sources = sources();
    let mut test_only = BTreeSet::new();
    for (module, text) in &sources {
        for child in test_children(text) {
            test_only.insert([module.clone(), vec![child]].concat());
        }
    }
    let modules: BTreeSet<Module> = sources.keys().cloned().collect();
    let code: BTreeMap<Module, String> = sources
        .into_iter()
        .filter(|(module, _)| !test_only.contains(module))
        .map(|(module, text)| (module, production(&text)))
        .collect();
    // `pub use child::{A, B}` and `pub(crate) use self::child::A`.
    let mut reexports = BTreeMap::new();
    for (module, text) in &code {
        for line in text.lines().map(str::trim) {
            let Some(rest) = line.strip_prefix("pub use ").or_else(|| line.strip_prefix("pub(crate) use "))
            else {
                continue;
            };
            let mut found = Vec::new();
            expand(rest.trim_start_matches("self::"), Vec::new(), &mut found);
            for path in found {
                let child = [module.clone(), path[..1].to_vec()].concat();
                if path.len() > 1 && modules.contains(&child) {
                    reexports.insert((module.clone(), path.last().unwrap().clone()), child);
                }
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (module, text) in &code {
        let parent = module[..module.len().saturating_sub(1)].to_vec();
        let mut uses = BTreeSet::new();
        let named = [("crate::", Vec::new()), ("super::", parent), ("self::", module.clone())];
        for (keyword, base) in named {
            for path in paths_after(text, keyword) {
                let full = [base.clone(), path].concat();
                if let Some(target) = resolve(&full, &modules, &reexports) {
                    if &target != module && !target.is_empty() {
                        uses.insert(target);
                    }
                }
            }
        }
        graph.insert(module.clone(), uses);
    }
    graph
}

/// A cycle of `graph`, if it has one.
fn find_cycle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        module: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        done: &mut BTreeSet<Module>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(at) = stack.iter().position(|m| m == module) {
            return Some(stack[at..].to_vec());
        }
        if done.contains(module) {
            return None;
        }
        stack.push(module.clone());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(module.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|module| visit(module, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_crate_s_modules_import_each_other_without_circles() {
    let graph = graph();
    let name = |m: &Module| m.join("::");
    // The reading itself: the edges this crate is known to have are found.
    let uses = |from: &[&str], to: &[&str]| {
        let from: Module = from.iter().map(|s| s.to_string()).collect();
        let to: Module = to.iter().map(|s| s.to_string()).collect();
        graph.get(&from).is_some_and(|targets| targets.contains(&to))
    };
    assert!(uses(&["mux", "io_loop"], &["mux"]), "super:: paths are not read");
    assert!(uses(&["mux"], &["mux", "state"]), "self:: paths are not read");
    assert!(uses(&["accept_queue"], &["conn"]), "grouped crate:: paths are not read");
    assert!(uses(&["options"], &["secure", "handshake"]), "re-exports are not followed");
    assert!(!graph.contains_key(&vec!["mux".to_owned(), "tests".to_owned()]), "test modules are read");
    if let Some(cycle) = find_cycle(&graph) {
        let names: Vec<String> = cycle.iter().map(name).collect();
        panic!("modules import each other in a circle: {} -> {}", names.join(" -> "), names[0]);
    }
}
