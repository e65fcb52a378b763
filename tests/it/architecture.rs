//! The crate's map, checked: which top-level module uses which (`crate::x` paths in code, not
//! in comments or test modules). The modules form no cycle, no surface uses another, and the
//! thermostat core uses no surface. A failure names the edges and the files they come from.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The surfaces: each speaks one dialect over the thermostat core.
const SURFACES: [&str; 4] = ["device", "control", "hosted", "mqtt"];

/// module -> (module it uses -> files that use it)
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its `#[cfg(test)] mod ...` blocks.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i32> = None;
    let mut depth = 0i32;
    let mut test_attr = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        let code = line.split("//").next().unwrap_or("");
        if skip_depth.is_none() && test_attr && trimmed.contains("mod ") && code.contains('{') {
            skip_depth = Some(depth);
        }
        test_attr = trimmed.starts_with("#[cfg(test)]");
        depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
        match skip_depth {
            Some(d) if depth <= d && code.contains('}') => skip_depth = None,
            Some(_) => {}
            None => {
                out.push_str(code);
                out.push('\n');
            }
        }
    }
    out
}

/// The top-level modules `code` names through `crate::`.
fn uses(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            found.insert(ident(&item));
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    // src/bin holds other programs (hearth-dev), which use the library from outside.
    files.retain(|f| !f.starts_with(src.join("bin")));
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(&src).ok()?;
            let first = rel.components().next()?.as_os_str().to_str()?;
            Some(first.trim_end_matches(".rs").to_string())
        })
        .collect();
    let mut graph = Graph::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let module = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        let code = code_of(&fs::read_to_string(file).unwrap());
        for used in uses(&code) {
            if used != module && modules.contains(&used) {
                graph
                    .entry(module.clone())
                    .or_default()
                    .entry(used)
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    graph
}

/// Every edge on a cycle: `a -> b` where `a` can be reached again from `b`.
fn cyclic_edges(graph: &Graph) -> Vec<(String, String)> {
    let reaches = |from: &str, to: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            if m == to {
                return true;
            }
            if seen.insert(m.clone()) {
                todo.extend(graph.get(&m).into_iter().flat_map(|e| e.keys().cloned()));
            }
        }
        false
    };
    let mut out = Vec::new();
    for (a, edges) in graph {
        for b in edges.keys() {
            if reaches(b, a) {
                out.push((a.clone(), b.clone()));
            }
        }
    }
    out
}

fn describe(graph: &Graph, edges: &[(String, String)]) -> String {
    edges
        .iter()
        .map(|(a, b)| format!("  {a} -> {b} (in {:?})", graph[a][b]))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_check_sees_imports_and_skips_comments_and_tests() {
    let code = code_of(
        "use crate::a::X;\n// crate::commented\nuse crate::{b, c::d};\n\
         fn f() { crate::e::g(); }\n#[cfg(test)]\nmod tests {\n    use crate::hidden;\n}\n\
         fn after() { crate::h::i(); }\n",
    );
    let found: Vec<String> = uses(&code).into_iter().collect();
    assert_eq!(found, ["a", "b", "c", "e", "h"]);
    let mut g = Graph::new();
    for (a, b) in [("x", "y"), ("y", "z"), ("z", "x"), ("z", "w")] {
        g.entry(a.into())
            .or_default()
            .entry(b.into())
            .or_default()
            .insert(String::new());
    }
    assert_eq!(cyclic_edges(&g).len(), 3);
}

#[test]
fn modules_form_no_cycle() {
    let graph = graph();
    assert!(graph.contains_key("control"), "the check found no modules");
    let cycles = cyclic_edges(&graph);
    assert!(
        cycles.is_empty(),
        "modules that use each other:\n{}",
        describe(&graph, &cycles)
    );
}

#[test]
fn no_surface_uses_another_and_the_core_uses_none() {
    let graph = graph();
    let mut wrong = Vec::new();
    for (a, edges) in &graph {
        let below_surfaces = a == "thermostat";
        for b in edges.keys() {
            let surface_to_surface =
                SURFACES.contains(&a.as_str()) && SURFACES.contains(&b.as_str());
            if surface_to_surface || (below_surfaces && SURFACES.contains(&b.as_str())) {
                wrong.push((a.clone(), b.clone()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", describe(&graph, &wrong));
}
