//! How deep a module nests, found without recursing on that depth, and a
//! syntax tree taken apart without recursing either.
//!
//! Every later walk over syntax (extraction, name chains, flow) recurses on
//! the tree, and so does dropping it. A file nested deeper than any real code
//! would otherwise cost stack (and heap, where the stack grows) in proportion
//! to its depth, or abort the process. Such a file degrades to a parse-error
//! mark instead; CPython refuses it too (its compiler gives up at about 3,000
//! levels).

use std::cell::RefCell;

use ruff_python_ast::token::TokenKind;
use ruff_python_ast::visitor::source_order::{SourceOrderVisitor, TraversalSignal};
use ruff_python_ast::visitor::transformer::{self, Transformer};
use ruff_python_ast::{self as ast, AnyNodeRef, AtomicNodeIndex, Expr, Pattern, Stmt};
use ruff_python_parser::{Mode, lexer};
use ruff_text_size::{Ranged, TextRange, TextSize};

/// The deepest syntax tree analysed. The deepest of the 11,650 files of a
/// CPython 3.11 installation with its site-packages nests 569 levels (a
/// generated table of sympy's); Django's deepest is far below that.
pub(crate) const MAX_DEPTH: usize = 1_000;

/// What the token scan before parsing lets through. It over-counts (every
/// operator of an element counts, as if each nested), so it is a multiple
/// of [`MAX_DEPTH`]; it keeps the parser, which recurses on nesting, from
/// spending memory in proportion to a hostile file's depth.
const MAX_TOKEN_DEPTH: usize = 4 * MAX_DEPTH;

/// An upper bound on how deep the parser would recurse on `source`, checked
/// against [`MAX_TOKEN_DEPTH`] as the tokens come: true once it is passed.
///
/// Brackets nest; inside one element (up to the next comma, or the end of
/// the logical line) every operator, dot, keyword operator and closed
/// bracket counts as one more level. Flat constructs real code repeats
/// thousands of times (list items, `and` chains, comparisons) do not add up.
pub(crate) fn too_deep_to_parse(source: &str) -> bool {
    let mut lexer = lexer::lex(source, Mode::Module);
    // Levels counted in each open bracket's current element, outermost first.
    let mut elements: Vec<usize> = vec![0];
    let mut blocks = 0usize;
    let mut total = 0usize;
    loop {
        match lexer.next_token() {
            TokenKind::EndOfFile => return false,
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace => {
                elements.push(0);
                total += 1;
            }
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace if elements.len() > 1 => {
                let inner = elements.pop().unwrap_or(0);
                total -= inner + 1;
                // A call or subscript is one more level of its element.
                if let Some(outer) = elements.last_mut() {
                    *outer += 1;
                    total += 1;
                }
            }
            TokenKind::Comma | TokenKind::Newline | TokenKind::Semi => {
                if let Some(element) = elements.last_mut() {
                    total -= *element;
                    *element = 0;
                }
            }
            TokenKind::Indent => {
                blocks += 1;
                total += 1;
            }
            TokenKind::Dedent if blocks > 0 => {
                blocks -= 1;
                total -= 1;
            }
            kind if nests(kind) => {
                if let Some(element) = elements.last_mut() {
                    *element += 1;
                    total += 1;
                }
            }
            _ => {}
        }
        if total > MAX_TOKEN_DEPTH {
            return true;
        }
    }
}

/// Tokens after which an expression may go one level deeper.
fn nests(kind: TokenKind) -> bool {
    use TokenKind as T;
    matches!(
        kind,
        T::Dot
            | T::Plus
            | T::Minus
            | T::Star
            | T::DoubleStar
            | T::Slash
            | T::DoubleSlash
            | T::Percent
            | T::At
            | T::Amper
            | T::Vbar
            | T::CircumFlex
            | T::LeftShift
            | T::RightShift
            | T::Tilde
            | T::Not
            | T::Await
            | T::Lambda
            | T::If
            | T::Else
            | T::Yield
            | T::ColonEqual
            | T::Colon
    )
}

/// How deep `module` nests, or the first node found deeper than
/// [`MAX_DEPTH`]; the tree is walked with a stack of its own, so the walk
/// itself cannot overflow.
pub(crate) fn depth(module: &ast::ModModule) -> Result<usize, TextRange> {
    let mut children = Children::default();
    let mut pending: Vec<(AnyNodeRef<'_>, usize)> = vec![(AnyNodeRef::from(module), 0)];
    let mut deepest = 0;
    while let Some((node, depth)) = pending.pop() {
        if depth > MAX_DEPTH {
            return Err(node.range());
        }
        deepest = deepest.max(depth);
        node.visit_source_order(&mut children);
        pending.extend(children.found.drain(..).map(|child| (child, depth + 1)));
    }
    Ok(deepest)
}

/// Trees up to this deep are dropped as usual: the recursion of their drop
/// is shallow, and taking them apart node by node costs more.
const SHALLOW: usize = 256;

/// Drops `module`, node by node when it is deeper than [`SHALLOW`].
pub(crate) fn drop_tree(module: ast::ModModule, depth: usize) {
    if depth > SHALLOW {
        drop_flat(module);
    }
}

/// Collects the nodes one level below the node being visited.
#[derive(Default)]
struct Children<'a> {
    found: Vec<AnyNodeRef<'a>>,
}

impl<'a> SourceOrderVisitor<'a> for Children<'a> {
    fn enter_node(&mut self, node: AnyNodeRef<'a>) -> TraversalSignal {
        self.found.push(node);
        TraversalSignal::Skip
    }
}

/// Drops `module` one node at a time: each statement, expression and
/// pattern is moved out of its parent onto a work list before the parent
/// is dropped, so no drop recurses more than one level.
pub(crate) fn drop_flat(mut module: ast::ModModule) {
    let detached = Detached::default();
    detached.visit_body(&mut module.body);
    drop(module);
    loop {
        let next = detached.stmts.borrow_mut().pop();
        if let Some(mut stmt) = next {
            transformer::walk_stmt(&detached, &mut stmt);
            continue;
        }
        let next = detached.exprs.borrow_mut().pop();
        if let Some(mut expr) = next {
            transformer::walk_expr(&detached, &mut expr);
            continue;
        }
        let next = detached.patterns.borrow_mut().pop();
        if let Some(mut pattern) = next {
            transformer::walk_pattern(&detached, &mut pattern);
            continue;
        }
        return;
    }
}

/// Nodes moved out of their parents, waiting to be taken apart.
#[derive(Default)]
struct Detached {
    stmts: RefCell<Vec<Stmt>>,
    exprs: RefCell<Vec<Expr>>,
    patterns: RefCell<Vec<Pattern>>,
}

impl Transformer for Detached {
    fn visit_stmt(&self, stmt: &mut Stmt) {
        let hole = Stmt::Pass(ast::StmtPass {
            node_index: AtomicNodeIndex::NONE,
            range: TextRange::empty(TextSize::default()),
        });
        self.stmts.borrow_mut().push(std::mem::replace(stmt, hole));
    }

    fn visit_expr(&self, expr: &mut Expr) {
        let hole = Expr::NoneLiteral(ast::ExprNoneLiteral::default());
        self.exprs.borrow_mut().push(std::mem::replace(expr, hole));
    }

    fn visit_pattern(&self, pattern: &mut Pattern) {
        let hole = Pattern::MatchSingleton(ast::PatternMatchSingleton {
            node_index: AtomicNodeIndex::NONE,
            range: TextRange::empty(TextSize::default()),
            value: ast::Singleton::None,
        });
        self.patterns
            .borrow_mut()
            .push(std::mem::replace(pattern, hole));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(source: &str) -> ast::ModModule {
        match ruff_python_parser::parse_module(source) {
            Ok(parsed) => parsed.into_syntax(),
            Err(error) => panic!("{source:.40}: {error}"),
        }
    }

    #[test]
    fn real_code_is_neither_too_deep_to_parse_nor_to_analyse() {
        let source = "import os\n\nclass A(B):\n    def f(self, x=-1):\n        \
                      return [(-1, 2), (3, -4)] + self.a.b.c(x)[0] or not x\n";
        assert!(!too_deep_to_parse(source));
        assert!(depth(&parsed(source)).is_ok_and(|d| d < 20));
    }

    #[test]
    fn a_long_flat_literal_is_not_deep() {
        let items: String = (0..20_000).map(|i| format!("(-{i}, 'a.b'),\n")).collect();
        let source = format!("TABLE = [\n{items}]\n");
        assert!(!too_deep_to_parse(&source));
        let module = parsed(&source);
        assert!(depth(&module).is_ok());
        drop_flat(module);
    }

    #[test]
    fn chains_past_the_limit_are_found_without_recursion() {
        // Attribute chains parse without recursion, so the token scan with
        // its larger limit lets this one through; the tree walk finds it.
        let source = format!("x = a{}\n", ".b".repeat(3 * MAX_DEPTH));
        assert!(!too_deep_to_parse(&source));
        let module = parsed(&source);
        assert!(depth(&module).is_err());
        drop_flat(module);
    }

    #[test]
    fn brackets_past_the_token_limit_are_refused_before_parsing() {
        let n = MAX_TOKEN_DEPTH + 1;
        let source = format!("x = {}a{}\n", "(".repeat(n), ")".repeat(n));
        assert!(too_deep_to_parse(&source));
        let unary = format!("x = {}a\n", "-".repeat(n));
        assert!(too_deep_to_parse(&unary));
    }

    #[test]
    fn a_tree_deeper_than_the_stack_drops_flat() {
        // A million links: a recursive drop overflows any thread's stack.
        let source = format!("x = a{}\n", ".b".repeat(1_000_000));
        drop_flat(parsed(&source));
        let calls = format!("x = a{}\n", ".b()".repeat(200_000));
        drop_flat(parsed(&calls));
    }
}
