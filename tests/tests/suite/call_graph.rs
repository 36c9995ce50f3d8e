//! The store's jobs call no other job: each job file (`store/jobs/`) and the commit path
//! (`store/write/commit.rs`) may call the parts (`store/*.rs`), the write path's entry for
//! what a job writes (`write_own_redo`), the read path and everything below the store, but
//! no function another job file defines. The one file that runs jobs one after another is
//! the supervisor (`store/jobs/maintain.rs`: the maintenance thread's turn, what a commit
//! asks for after it, and `Db::compact`'s sequence). Method calls are not imports, so the
//! module-graph check cannot see these loops; this one reads the calls from the sources
//! with `syn`, by name: a function defined in two job files, or in a job file and outside
//! the jobs, is ambiguous by name and is named in the failure so that one is renamed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::module_graph::is_cfg_test;
use syn::punctuated::Punctuated;
use syn::visit::Visit;

fn engine_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/src")
}

/// The files of `store/jobs/` that are no job: the supervisor, the thread's own files, and
/// what the jobs share (files, progress, the state they keep between runs).
const NOT_JOBS: [&str; 6] = [
    "maintain",
    "background",
    "mailbox",
    "progress",
    "segments",
    "turns",
];

/// Functions a file defines for other files to call (free, and in `impl` blocks, with a
/// visibility: a private one cannot be called from another file), outside `#[cfg(test)]`
/// items.
#[derive(Default)]
struct Defined {
    visible: BTreeSet<String>,
    /// Private ones too.
    all: BTreeSet<String>,
}

/// Functions a file calls by name (method calls and path calls), outside tests.
#[derive(Default)]
struct Called(BTreeMap<String, usize>);

impl<'ast> Visit<'ast> for Defined {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_cfg_test(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_cfg_test(&item.attrs) {
            self.define(&item.sig.ident, &item.vis);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&item.attrs) {
            self.define(&item.sig.ident, &item.vis);
        }
    }
}

impl Defined {
    fn define(&mut self, name: &syn::Ident, visibility: &syn::Visibility) {
        self.all.insert(name.to_string());
        if !matches!(visibility, syn::Visibility::Inherited) {
            self.visible.insert(name.to_string());
        }
    }
}

impl<'ast> Visit<'ast> for Called {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_cfg_test(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let line = call.method.span().start().line;
        self.0.entry(call.method.to_string()).or_insert(line);
        syn::visit::visit_expr_method_call(self, call);
    }

    /// A macro's arguments, when they read as expressions (`warn_on_error!(self.job(), "..")`).
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let parser = Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(arguments) = mac.parse_body_with(parser) {
            for argument in &arguments {
                self.visit_expr(argument);
            }
        }
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(path) = call.func.as_ref()
            && let Some(last) = path.path.segments.last()
        {
            let line = last.ident.span().start().line;
            self.0.entry(last.ident.to_string()).or_insert(line);
        }
        syn::visit::visit_expr_call(self, call);
    }
}

fn parse(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{file:?}: {e}"))
}

/// Every `.rs` file under `dir`, by its path below the store.
fn files(dir: &Path, below: &Path, out: &mut Vec<(String, PathBuf)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, below, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .strip_prefix(below)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((name, path));
        }
    }
}

/// The calls from a job file (or the commit path) to a function another job file defines,
/// as "caller -> callee (defined in): line"; and the names defined in a job file and
/// elsewhere too, which a check by name cannot tell apart.
fn crossings() -> (Vec<String>, Vec<String>) {
    let root = engine_src();
    let mut all = Vec::new();
    files(&root, &root, &mut all);
    let job = |name: &str| {
        name.strip_prefix("store/jobs/")
            .and_then(|n| n.strip_suffix(".rs"))
            .is_some_and(|n| !NOT_JOBS.contains(&n) && n != "mod")
    };
    // Who defines each name for other files to call, over the whole engine.
    let mut defined_by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut callers = Vec::new();
    for (name, path) in &all {
        let syntax = parse(path);
        let mut defined = Defined::default();
        defined.visit_file(&syntax);
        for function in &defined.visible {
            defined_by
                .entry(function.clone())
                .or_default()
                .push(name.clone());
        }
        if job(name) || name == "store/write/commit.rs" {
            let mut called = Called::default();
            called.visit_file(&syntax);
            callers.push((name.clone(), defined.all, called.0));
        }
    }
    let mut crossing = Vec::new();
    let mut ambiguous = BTreeSet::new();
    for (caller, own, called) in &callers {
        for (function, line) in called {
            let Some(owners) = defined_by.get(function) else {
                continue;
            };
            // The caller's own function (a private helper of the same name included).
            if own.contains(function) || !owners.iter().any(|o| job(o)) {
                continue;
            }
            if owners.len() > 1 {
                ambiguous.insert(format!("{function}: defined in {owners:?}"));
                continue;
            }
            crossing.push(format!("{caller}:{line} calls {function} ({})", owners[0]));
        }
    }
    (crossing, ambiguous.into_iter().collect())
}

#[test]
fn no_job_calls_another_job() {
    let (crossing, ambiguous) = crossings();
    assert!(
        crossing.is_empty() && ambiguous.is_empty(),
        "calls from one job to another (run them from store/jobs/maintain.rs, or move what \
         they share out of the jobs):\n{}\nnames a check by name cannot tell apart:\n{}",
        crossing.join("\n"),
        ambiguous.join("\n")
    );
}
