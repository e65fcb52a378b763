//! The crate's map, checked. docs/architecture.md draws the modules in layers (the fenced block
//! after its `<!-- layers:` marker); this reads that drawing and which top-level module uses
//! which (`crate::x` paths in code, not in comments or test modules), and fails when they
//! disagree: a module using one in a layer above it, a surface using another surface, a module
//! of `src/` missing from the drawing or a drawn module that does not exist, a module missing
//! from the page's table of modules, or two modules that use each other. A failure names the
//! edges and the files they come from.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layer whose modules must not use each other.
const SURFACES: &str = "surfaces";
/// What precedes the drawing of the layers in docs/architecture.md.
const MARKER: &str = "<!-- layers:";

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

/// The top-level modules of `src/` and which uses which.
fn graph() -> (BTreeSet<String>, Graph) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    // src/bin holds other programs (hearth-dev), which use the library from outside; lib.rs
    // and main.rs are the crate's roots, not modules.
    files.retain(|f| !f.starts_with(src.join("bin")));
    let module_of = |f: &Path| -> Option<String> {
        let rel = f.strip_prefix(&src).ok()?;
        let first = rel.components().next()?.as_os_str().to_str()?;
        let name = first.trim_end_matches(".rs");
        (name != "lib" && name != "main").then(|| name.to_string())
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(f)).collect();
    let mut graph = Graph::new();
    for file in &files {
        let Some(module) = module_of(file) else {
            continue;
        };
        let rel = file.strip_prefix(&src).unwrap();
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
    (modules, graph)
}

/// The layers a page draws, top first: `(name, modules)`. In the fenced block after
/// [`MARKER`], `name: modules...` starts a layer, an indented line continues it, and `--`
/// starts a comment.
fn read_layers(page: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let after = page
        .split_once(MARKER)
        .ok_or(format!("no `{MARKER}` marker"))?
        .1;
    let block = after
        .split_once("```")
        .and_then(|(_, b)| b.split_once('\n'))
        .and_then(|(_, b)| b.split_once("```"))
        .ok_or("no fenced block after the marker")?
        .0;
    let words = |s: &str| -> Vec<String> { s.split_whitespace().map(str::to_string).collect() };
    let mut layers: Vec<(String, Vec<String>)> = Vec::new();
    for line in block.lines() {
        let line = line.split("--").next().unwrap_or("");
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            let (_, modules) = layers
                .last_mut()
                .ok_or(format!("`{line}` continues no layer"))?;
            modules.extend(words(line));
        } else {
            let (name, modules) = line
                .split_once(':')
                .ok_or(format!("`{line}`: a layer is `name: modules`"))?;
            layers.push((name.trim().to_string(), words(modules)));
        }
    }
    if layers.is_empty() {
        return Err("the drawing has no layers".into());
    }
    Ok(layers)
}

/// Where `modules` and their uses (`graph`) disagree with `layers`, one line each.
fn disagreements(
    modules: &BTreeSet<String>,
    graph: &Graph,
    layers: &[(String, Vec<String>)],
) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut layer_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, (name, drawn)) in layers.iter().enumerate() {
        for m in drawn {
            if let Some(j) = layer_of.insert(m, i) {
                wrong.push(format!("`{m}` is drawn twice ({} and {name})", layers[j].0));
            }
            if !modules.contains(m) {
                wrong.push(format!("`{m}` is drawn but src/ has no such module"));
            }
        }
    }
    for m in modules {
        if !layer_of.contains_key(m.as_str()) {
            wrong.push(format!(
                "`{m}` is a module of src/ missing from the drawing"
            ));
        }
    }
    for (a, edges) in graph {
        for (b, files) in edges {
            let (Some(&la), Some(&lb)) = (layer_of.get(a.as_str()), layer_of.get(b.as_str()))
            else {
                continue;
            };
            let (name_a, name_b) = (&layers[la].0, &layers[lb].0);
            if lb < la {
                wrong.push(format!(
                    "`{a}` ({name_a}) uses `{b}`, in the layer above it ({name_b}), in {files:?}"
                ));
            } else if la == lb && name_a == SURFACES {
                wrong.push(format!(
                    "the surface `{a}` uses the surface `{b}` in {files:?}"
                ));
            }
        }
    }
    wrong
}

fn architecture_page() -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md")).unwrap()
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
    let (_, graph) = graph();
    assert!(graph.contains_key("control"), "the check found no modules");
    let cycles = cyclic_edges(&graph);
    assert!(
        cycles.is_empty(),
        "modules that use each other:\n{}",
        describe(&graph, &cycles)
    );
}

#[test]
fn the_code_keeps_to_the_layers_the_map_draws() {
    let (modules, graph) = graph();
    assert!(
        modules.len() > 20,
        "the check found no modules: {modules:?}"
    );
    let layers = read_layers(&architecture_page()).unwrap();
    let wrong = disagreements(&modules, &graph, &layers);
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's layers and the code disagree (fix the code, or the drawing if \
         the code is right):\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn every_drawn_module_has_its_line_in_the_table() {
    let page = architecture_page();
    let drawn: BTreeSet<String> = read_layers(&page)
        .unwrap()
        .into_iter()
        .flat_map(|(_, modules)| modules)
        .collect();
    let table = page
        .split_once("| Module | What it is |")
        .expect("the page's table of modules")
        .1;
    let listed: BTreeSet<String> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `")?.split_once('`'))
        .map(|(m, _)| m.to_string())
        .collect();
    assert_eq!(drawn, listed, "the drawing's modules and the table's rows");
}

/// The check on a made-up drawing the real code does not follow: `util` on top, `dashboard`
/// among the surfaces, `weather` left out and a module that does not exist. Each must be
/// reported, so a drawing that drifts from the code cannot pass.
#[test]
fn a_drawing_the_code_does_not_follow_fails() {
    let page = "text\n<!-- layers: made up -->\n```text\n\
                util:      util\n\
                run:       cli server demo process   -- start\n\
                surfaces:  device control hosted mqtt dashboard\n\
                rest:      control_port app admin history onboarding migrate info browser\n\
                \x20          events thermostat accounts state store hub config http presence\n\
                \x20          service supervisor simulator nowhere\n\
                ```\n";
    let layers = read_layers(page).unwrap();
    assert_eq!(layers.len(), 4);
    assert_eq!(layers[3].1.len(), 21, "{:?}", layers[3]);
    let (modules, graph) = graph();
    let wrong = disagreements(&modules, &graph, &layers);
    let found = |what: &str| {
        assert!(
            wrong.iter().any(|w| w.starts_with(what)),
            "not reported: {what}\nreported:\n{}",
            wrong.join("\n")
        )
    };
    found("`cli` (run) uses `util`, in the layer above it (util)");
    found("`control_port` (rest) uses `control`, in the layer above it (surfaces)");
    found("the surface `control` uses the surface `dashboard`");
    found("`weather` is a module of src/ missing from the drawing");
    found("`nowhere` is drawn but src/ has no such module");
    // The real drawing, doctored only by moving `hub` above `state`, fails too.
    let real = architecture_page();
    let mut moved = read_layers(&real).unwrap();
    for (_, modules) in &mut moved {
        modules.retain(|m| m != "hub");
    }
    moved.insert(0, ("top".into(), vec!["hub".into()]));
    let wrong = disagreements(&modules, &graph, &moved);
    assert!(
        wrong
            .iter()
            .any(|w| w.starts_with("`state` (state) uses `hub`, in the layer above it (top)")),
        "{wrong:?}"
    );
    assert!(read_layers("no marker").is_err());
    assert!(read_layers("<!-- layers: -->\n```text\n  indented first\n```\n").is_err());
}
