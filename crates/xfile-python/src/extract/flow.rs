//! What a local bound more than once holds at a point of a function body:
//! the value of the last binding, as long as straight-line code leads from
//! it to the use. `form = Form(a); form.is_valid(); form = Form(b);
//! form.is_valid()` knows both calls' receivers.
//!
//! A compound statement (`for`, `while`, `try`, `match`, a `with` whose
//! context manager may swallow an exception) can skip, repeat or leave
//! early any part of its body, so where its branches
//! meet again (after it, at a loop's next iteration, in an exception
//! handler) every local it binds anywhere is forgotten. After an `if`, a
//! local holds what every path that goes on gives it (one of them,
//! `ExprKind::Either`, when they differ), or is forgotten when a path
//! gives it nothing known. A local bound once keeps its value everywhere
//! (`Frame::values`), as before; a nested function sees only those, since
//! it runs later.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use rustc_hash::{FxHashMap, FxHashSet};

use super::{
    Extractor, Frame, FrameKind, attribute_heads, collect_locals, last_name, setattr_object,
    target_names,
};
use crate::facts::ExprId;

/// The reaching values of one function frame.
pub(super) type Reaching = FxHashMap<String, ExprId>;

/// A statement being walked; for a compound one, the flow where it
/// starts, and (once asked) the locals it binds anywhere.
pub(super) struct Entry<'a> {
    stmt: &'a Stmt,
    compound: bool,
    before: Reaching,
    /// For an `if`: the flow at the end of each path that goes on after
    /// it, joined there (`Extractor::join`).
    ends: Option<Vec<Reaching>>,
    bound: Option<FxHashSet<String>>,
}

impl Extractor<'_> {
    /// The innermost frame when flow is followed there (a function body or
    /// a `__main__` block).
    fn function_frame(&mut self) -> Option<&mut Frame> {
        self.scopes.last_mut().filter(|f| f.flows)
    }

    /// A local of the current function now holds `value` (or something
    /// unknown).
    pub(super) fn reach(&mut self, name: &str, value: Option<ExprId>) {
        if let Some(frame) = self.function_frame() {
            match value {
                Some(id) => frame.reaching.insert(name.to_string(), id),
                None => frame.reaching.remove(name),
            };
        }
    }

    /// Every local `target` binds now holds something unknown.
    pub(super) fn forget_targets(&mut self, target: &Expr) {
        let mut names = Vec::new();
        target_names(target, &mut names);
        for name in names {
            self.reach(name, None);
        }
    }

    /// An assignment expression binds in the nearest function, not in the
    /// comprehension it may stand in: forgotten in every frame.
    pub(super) fn forget_everywhere(&mut self, target: &Expr) {
        let mut names = Vec::new();
        target_names(target, &mut names);
        for frame in &mut self.scopes {
            for name in &names {
                frame.reaching.remove(*name);
            }
        }
    }

    pub(super) fn enter<'a>(&mut self, stmt: &'a Stmt) -> Entry<'a> {
        let compound = match stmt {
            Stmt::If(_) | Stmt::For(_) | Stmt::While(_) | Stmt::Try(_) | Stmt::Match(_) => true,
            Stmt::With(with) => may_swallow(with),
            _ => false,
        };
        let before = match self.function_frame() {
            Some(frame) if compound => frame.reaching.clone(),
            _ => Reaching::default(),
        };
        Entry {
            stmt,
            compound,
            before,
            ends: None,
            bound: None,
        }
    }

    /// After a compound statement, its paths meet.
    pub(super) fn leave(&mut self, entry: &mut Entry) {
        if !entry.compound {
            return;
        }
        match entry.ends.take() {
            Some(ends) if !ends.is_empty() => self.join(entry, &ends),
            _ => self.merge(entry),
        }
    }

    /// The end of one path through an `if` (a branch's body, or the
    /// statement skipped), unless the path leaves (`return`, `raise`,
    /// `break`, `continue`).
    pub(super) fn path_end(&mut self, entry: &mut Entry, body: Option<&[Stmt]>) {
        let leaves = body.and_then(<[Stmt]>::last).is_some_and(|last| {
            matches!(
                last,
                Stmt::Return(_) | Stmt::Raise(_) | Stmt::Break(_) | Stmt::Continue(_)
            )
        });
        if leaves {
            return;
        }
        let end = match body {
            Some(_) => self.snapshot(),
            None => entry.before.clone(),
        };
        if self.function_frame().is_some() {
            entry.ends.get_or_insert_with(Vec::new).push(end);
        }
    }

    /// Where the paths through an `if` meet: a local bound in it holds a
    /// value there when every path gives it one, the one value if all give
    /// the same, else one of them (`ExprKind::Either`, known when every
    /// alternative gives the same class).
    fn join(&mut self, entry: &mut Entry, ends: &[Reaching]) {
        self.merge(entry);
        let bound: Vec<String> = entry
            .bound
            .get_or_insert_with(|| bound_names(std::slice::from_ref(entry.stmt)))
            .iter()
            .cloned()
            .collect();
        let at = entry.stmt.range().start();
        for name in bound {
            let Some(values) = ends
                .iter()
                .map(|end| end.get(&name).copied())
                .collect::<Option<Vec<ExprId>>>()
            else {
                continue;
            };
            let mut joined = values[0];
            for &value in &values[1..] {
                if value != joined {
                    let site = self.add_site(at);
                    joined = self.push_expression(
                        site,
                        crate::facts::ExprKind::Either {
                            first: joined,
                            second: value,
                        },
                    );
                }
            }
            if let Some(frame) = self.function_frame() {
                frame.reaching.insert(name, joined);
            }
        }
    }

    /// Back to the flow where the statement started (an `if`'s next
    /// branch).
    pub(super) fn branch(&mut self, entry: &Entry) {
        if let Some(frame) = self.function_frame() {
            frame.reaching.clone_from(&entry.before);
        }
    }

    /// A point several paths through the statement reach: what it started
    /// with, less every local it binds.
    pub(super) fn merge(&mut self, entry: &mut Entry) {
        if self.function_frame().is_none() {
            return;
        }
        let mut reaching = entry.before.clone();
        if !reaching.is_empty() {
            let bound = entry
                .bound
                .get_or_insert_with(|| bound_names(std::slice::from_ref(entry.stmt)));
            reaching.retain(|name, _| !bound.contains(name));
        }
        if let Some(frame) = self.function_frame() {
            frame.reaching = reaching;
        }
    }

    /// The current flow, to come back to (a `try`'s `else` follows its body).
    pub(super) fn snapshot(&mut self) -> Reaching {
        self.function_frame()
            .map(|f| f.reaching.clone())
            .unwrap_or_default()
    }

    pub(super) fn restore(&mut self, reaching: Reaching) {
        if let Some(frame) = self.function_frame() {
            frame.reaching = reaching;
        }
    }
}

/// Context managers whose exit may swallow an exception from the body
/// (`suppress`, pytest's `raises`, unittest's and Django's `assertRaises*`
/// and `assertWarns*`; an `ExitStack` when a callback says so), by the
/// last name of what the `with` calls or names.
const SWALLOWERS: &[&str] = &[
    "suppress",
    "raises",
    "assertRaises",
    "assertRaisesRegex",
    "assertRaisesRegexp",
    "assertRaisesMessage",
    "assertWarns",
    "assertWarnsRegex",
    "assertWarnsMessage",
    "ExitStack",
    "AsyncExitStack",
];

/// Whether a `with` may leave its body early and go on after it. Type
/// checkers read a context manager as letting exceptions through unless
/// its `__exit__` is declared to return `bool`; without types, the known
/// swallowers above stand for those. Any other `with` body is
/// straight-line code, so a local it binds keeps its value after it
/// (`with open(p) as f: data = load(f)`, then `data.items()`). A project
/// context manager whose `__exit__` returns true is not told apart: none
/// of Django, Flask, httpx or rich has one.
fn may_swallow(with: &ast::StmtWith) -> bool {
    with.items.iter().any(|item| {
        let manager = match &item.context_expr {
            Expr::Call(call) => call.func.as_ref(),
            other => other,
        };
        last_name(manager).is_some_and(|name| SWALLOWERS.contains(&name.as_str()))
    })
}

/// The names `stmts` bind anywhere outside nested scopes.
fn bound_names(stmts: &[Stmt]) -> FxHashSet<String> {
    let mut frame = Frame::new(FrameKind::Deferred, FxHashMap::default());
    collect_locals(stmts, &mut frame);
    frame.counts.into_keys().collect()
}

/// What code nested in `body` (functions and class bodies) can change in
/// the enclosing function at any time: locals it declares `nonlocal`
/// (`Frame::rebound_inside`) and locals whose attributes it sets
/// (`Frame::patched`).
pub(super) fn nested_changes(body: &[Stmt], frame: &mut Frame) {
    visitor::walk_body(&mut Changes { frame }, body);
}

/// [`nested_changes`] of a lambda's body.
pub(super) fn nested_changes_in(body: &Expr, frame: &mut Frame) {
    Changes { frame }.visit_expr(body);
}

struct Changes<'f> {
    frame: &'f mut Frame,
}

impl<'a> Visitor<'a> for Changes<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        stacker::maybe_grow(super::RED_ZONE, super::STACK_SEGMENT, || {
            match stmt {
                Stmt::Nonlocal(nonlocal) => {
                    let names = nonlocal.names.iter().map(|n| n.to_string());
                    self.frame.rebound_inside.extend(names);
                }
                Stmt::Assign(assign) => {
                    for target in &assign.targets {
                        attribute_heads(target, &mut self.frame.patched);
                    }
                }
                Stmt::AugAssign(assign) => attribute_heads(&assign.target, &mut self.frame.patched),
                Stmt::AnnAssign(assign) => attribute_heads(&assign.target, &mut self.frame.patched),
                Stmt::Delete(delete) => {
                    for target in &delete.targets {
                        attribute_heads(target, &mut self.frame.patched);
                    }
                }
                _ => {}
            }
            visitor::walk_stmt(self, stmt);
        });
    }
    fn visit_expr(&mut self, expr: &'a Expr) {
        stacker::maybe_grow(super::RED_ZONE, super::STACK_SEGMENT, || {
            if let Expr::Call(call) = expr {
                setattr_object(call, &mut self.frame.patched);
            }
            visitor::walk_expr(self, expr);
        });
    }
}
