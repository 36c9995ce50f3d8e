//! The engine's modules, read from its sources: which module names which, and whether any
//! of them form a circle (a module that, through the modules it uses, uses itself).
//!
//! A module is a file of `engine/src` (an inline `mod` counts as part of its file). Module
//! A uses module B when a path in A, outside `#[cfg(test)]` items, names B or an item of B:
//! `crate::b::..`, `super::..`, `self::..` or a child module's name, in a `use` or in code;
//! `crate::Item` for an item the crate root re-exports names the root, which is why no
//! module may import from `lib.rs`. Paths inside macro invocations are read too, from their
//! tokens. `cargo modules dependencies --acyclic` (the cargo-modules crate) checks items
//! rather than modules: a type and its own method already form a circle there, so it
//! cannot hold this rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// A module's path below the crate root (empty for the root).
type ModPath = Vec<String>;

struct Module {
    file: PathBuf,
    /// Child modules declared in the file (`mod x;`), not under `#[cfg(test)]`.
    children: BTreeSet<String>,
    /// The module's items, outside `#[cfg(test)]` ones.
    syntax: syn::File,
}

fn engine_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/src")
}

pub(crate) fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// Every module of the engine, from `lib.rs` down its `mod` declarations.
fn modules() -> BTreeMap<ModPath, Module> {
    let mut modules = BTreeMap::new();
    let mut pending = vec![(Vec::new(), engine_src().join("lib.rs"))];
    while let Some((path, file)) = pending.pop() {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        // A child's file: beside lib.rs and mod.rs, else in the folder named as the file.
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("lib.rs" | "mod.rs") => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        let mut children = BTreeSet::new();
        for item in &syntax.items {
            if let syn::Item::Mod(module) = item
                && module.content.is_none()
                && !is_cfg_test(&module.attrs)
            {
                let name = module.ident.to_string();
                let flat = dir.join(format!("{name}.rs"));
                let child = match flat.exists() {
                    true => flat,
                    false => dir.join(&name).join("mod.rs"),
                };
                let mut child_path = path.clone();
                child_path.push(name.clone());
                pending.push((child_path, child));
                children.insert(name);
            }
        }
        modules.insert(
            path,
            Module {
                file,
                children,
                syntax,
            },
        );
    }
    modules
}

/// The paths a module names, with the line of each.
struct Paths<'a> {
    /// The module the visitor is in: the file's path, then any inline modules.
    at: ModPath,
    /// How many of `at`'s last names are inline modules of the file.
    inline: usize,
    children: &'a BTreeSet<String>,
    found: Vec<(ModPath, usize)>,
}

impl Paths<'_> {
    fn resolve(&mut self, segments: &[String], line: usize) {
        let Some(first) = segments.first() else {
            return;
        };
        let absolute: ModPath = match first.as_str() {
            "crate" => segments[1..].to_vec(),
            "self" => self.at.iter().chain(&segments[1..]).cloned().collect(),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let base = &self.at[..self.at.len().saturating_sub(ups)];
                base.iter().chain(&segments[ups..]).cloned().collect()
            }
            // A child module's name, from the file's own items (not an inline module's).
            name if self.inline == 0 && self.children.contains(name) => {
                self.at.iter().chain(segments).cloned().collect()
            }
            _ => return,
        };
        self.found.push((absolute, line));
    }

    /// Paths in a macro's tokens: `crate`, `super` or `self` followed by `::` segments.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(group) => self.scan_tokens(group.stream()),
                TokenTree::Ident(ident)
                    if matches!(ident.to_string().as_str(), "crate" | "super" | "self") =>
                {
                    let line = ident.span().start().line;
                    let mut segments = vec![ident.to_string()];
                    let mut j = i + 1;
                    // `::` is two `:` punctuation tokens, then the next segment's name.
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.resolve(&segments, line);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_paths(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let mut full = prefix.clone();
            if name.ident != "self" {
                full.push(name.ident.to_string());
            }
            out.push(full);
        }
        syn::UseTree::Rename(rename) => {
            let mut full = prefix.clone();
            full.push(rename.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                use_paths(tree, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if is_cfg_test(&module.attrs) || module.content.is_none() {
            return;
        }
        self.at.push(module.ident.to_string());
        self.inline += 1;
        syn::visit::visit_item_mod(self, module);
        self.inline -= 1;
        self.at.pop();
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_item_impl(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if is_cfg_test(&item.attrs) {
            return;
        }
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        let line = item.use_token.span.start().line;
        for path in paths {
            self.resolve(&path, line);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            let line = path.segments[0].ident.span().start().line;
            self.resolve(&segments, line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.scan_tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }

    /// `pub(in crate::store)` says who may see an item, not what the item uses: its path
    /// is no use of `store`.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
}

/// Module A uses module B, with the places (file and line) that say so.
type Edges = BTreeMap<(ModPath, ModPath), Vec<String>>;

fn edges(modules: &BTreeMap<ModPath, Module>) -> Edges {
    let mut edges = Edges::new();
    for (path, module) in modules {
        let mut paths = Paths {
            at: path.clone(),
            inline: 0,
            children: &module.children,
            found: Vec::new(),
        };
        for item in &module.syntax.items {
            paths.visit_item(item);
        }
        for (absolute, line) in paths.found {
            // The module named: the longest file module the path starts with.
            let target = (0..=absolute.len())
                .rev()
                .map(|n| absolute[..n].to_vec())
                .find(|prefix| modules.contains_key(prefix))
                .expect("the root is a prefix of every path");
            if target != *path {
                let file = module
                    .file
                    .strip_prefix(engine_src())
                    .unwrap_or(&module.file);
                edges
                    .entry((path.clone(), target))
                    .or_default()
                    .push(format!("{}:{line}", file.display()));
            }
        }
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn circles(nodes: &[ModPath], edges: &Edges) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        nodes: &'a [ModPath],
        next: BTreeMap<&'a ModPath, Vec<&'a ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn connect<'a>(state: &mut State<'a>, node: &'a ModPath) {
        let index = state.index.len();
        state.index.insert(node, index);
        state.low.insert(node, index);
        state.stack.push(node);
        state.on_stack.insert(node);
        for next in state.next.get(node).cloned().unwrap_or_default() {
            if !state.index.contains_key(next) {
                connect(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top.clone());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut next: BTreeMap<&ModPath, Vec<&ModPath>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    let mut state = State {
        nodes,
        next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in state.nodes {
        if !state.index.contains_key(node) {
            connect(&mut state, node);
        }
    }
    state.found.sort();
    state.found
}

fn name(path: &ModPath) -> String {
    match path.is_empty() {
        true => "crate".to_string(),
        false => path.join("::"),
    }
}

/// Each circle as its modules and the uses inside it, for a failure message.
fn describe(circles: &[Vec<ModPath>], edges: &Edges) -> String {
    let mut out = String::new();
    for circle in circles {
        let names: Vec<String> = circle.iter().map(name).collect();
        out.push_str(&format!(
            "circle of {}: {}\n",
            circle.len(),
            names.join(", ")
        ));
        for ((from, to), places) in edges {
            if circle.contains(from) && circle.contains(to) {
                out.push_str(&format!(
                    "  {} -> {} ({})\n",
                    name(from),
                    name(to),
                    places[0]
                ));
            }
        }
    }
    out
}

#[test]
fn the_engines_modules_form_no_circle() {
    let modules = modules();
    let nodes: Vec<ModPath> = modules.keys().cloned().collect();
    let edges = edges(&modules);
    let circles = circles(&nodes, &edges);
    println!("{}", describe(&circles, &edges));
    let in_circles: usize = circles.iter().map(Vec::len).sum();
    println!(
        "{} modules, {} uses between them; {} circles over {} modules",
        nodes.len(),
        edges.len(),
        circles.len(),
        in_circles
    );
    assert!(circles.is_empty(), "{}", describe(&circles, &edges));
}

/// The check finds what it is for: a circle through the root, a parent and its child, and
/// none where the uses run one way.
#[test]
fn the_check_finds_a_circle_and_passes_a_line() {
    let path = |s: &str| -> ModPath {
        match s {
            "crate" => Vec::new(),
            s => s.split("::").map(str::to_string).collect(),
        }
    };
    let nodes = vec![path("crate"), path("a"), path("a::b"), path("c")];
    let mut edges = Edges::new();
    edges.insert((path("a"), path("a::b")), vec!["a.rs:1".into()]);
    edges.insert((path("a::b"), path("c")), vec!["a/b.rs:1".into()]);
    assert!(circles(&nodes, &edges).is_empty());
    edges.insert((path("c"), path("a")), vec!["c.rs:1".into()]);
    assert_eq!(
        circles(&nodes, &edges),
        vec![vec![path("a"), path("a::b"), path("c")]]
    );
    // The resolver: `crate::X` of a re-export names the root; `super` and children.
    let children: BTreeSet<String> = ["child".to_string()].into();
    let mut paths = Paths {
        at: path("a::b"),
        inline: 0,
        children: &children,
        found: Vec::new(),
    };
    paths.resolve(&["crate".into(), "Result".into()], 1);
    paths.resolve(&["super".into(), "X".into()], 2);
    paths.resolve(&["child".into(), "Y".into()], 3);
    paths.resolve(&["std".into(), "sync".into()], 4);
    let found: Vec<ModPath> = paths.found.into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        found,
        vec![path("Result"), path("a::X"), path("a::b::child::Y"),]
    );
    // A visibility's path is no use; a path in the item's code is.
    let item: syn::File =
        syn::parse_str("pub(in crate::store) fn f() -> crate::page::Node { todo!() }").unwrap();
    let mut paths = Paths {
        at: path("store::write"),
        inline: 0,
        children: &children,
        found: Vec::new(),
    };
    paths.visit_file(&item);
    let found: Vec<ModPath> = paths.found.into_iter().map(|(p, _)| p).collect();
    assert_eq!(found, vec![path("page::Node")]);
}

/// The cache knows nothing above it: no module under `cache` uses the page store, the cold
/// store, documents, items, records, the store or the API (it is generic over what it
/// holds, and `cached` says what the engine keeps in it).
#[test]
fn the_cache_uses_nothing_above_it() {
    let modules = modules();
    let edges = edges(&modules);
    let above = [
        "page", "cold", "document", "item", "record", "cached", "store", "api", "pattern",
    ];
    let wrong: Vec<String> = edges
        .iter()
        .filter(|((from, to), _)| {
            from.first().is_some_and(|m| m == "cache")
                && to.first().is_some_and(|m| above.contains(&m.as_str()))
        })
        .map(|((from, to), places)| format!("{} -> {} ({})", name(from), name(to), places[0]))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// No engine source file over 40 KiB: a file that large holds more than one job.
#[test]
fn no_engine_source_file_is_over_40_kib() {
    let mut over = Vec::new();
    let mut pending = vec![engine_src()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let bytes = std::fs::metadata(&path).unwrap().len();
                if bytes > 40 * 1024 {
                    over.push(format!("{} ({bytes} bytes)", path.display()));
                }
            }
        }
    }
    assert!(over.is_empty(), "over 40 KiB: {over:?}");
}

/// Research tools live beside the engine, not in it: the trace simulator, the optimum and
/// the policies kept only for comparison are `skewdb-cachesim`'s.
#[test]
fn the_simulator_and_the_optimum_are_not_in_the_engine() {
    let modules = modules();
    for (path, module) in &modules {
        let text = std::fs::read_to_string(&module.file).unwrap();
        for name in [
            "belady",
            "struct Simulator",
            "struct TinyLfu",
            "fn evict_sieve",
        ] {
            assert!(!text.contains(name), "{} holds {name}", self::name(path));
        }
    }
}

/// Test-only code is compiled only for tests: the fuzz entries, the `testing` face and
/// the storage simulation sit behind the `testing` feature (or `cfg(test)`), so no
/// application carries them.
#[test]
fn test_only_modules_are_behind_the_testing_feature() {
    let gated = |file: &str, module: &str| {
        let text = std::fs::read_to_string(engine_src().join(file)).unwrap();
        let parsed = syn::parse_file(&text).unwrap();
        let item = parsed
            .items
            .iter()
            .find_map(|item| match item {
                syn::Item::Mod(m) if m.ident == module => Some(m),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no mod {module} in {file}"));
        item.attrs.iter().any(|attr| match &attr.meta {
            syn::Meta::List(list) => {
                list.path.is_ident("cfg")
                    && list.tokens.to_string().contains("feature = \"testing\"")
            }
            _ => false,
        })
    };
    for (file, module) in [
        ("lib.rs", "fuzz"),
        ("lib.rs", "testing"),
        ("storage/mod.rs", "sim"),
    ] {
        assert!(
            gated(file, module),
            "{file}: mod {module} is in every build"
        );
    }
    // And the check sees a module that is not gated.
    assert!(!gated("lib.rs", "store"));
}
