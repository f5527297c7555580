//! Which calls and decorators the front end records as dynamic patterns,
//! code whose effect static analysis cannot follow. Names only: whether a
//! callee really is the built-in or stdlib function is decided by
//! resolution in the engine.

use ruff_python_ast::Expr;

/// `importlib.import_module(...)`, `import_module(...)` or `__import__(...)`.
pub(super) fn is_import_function(func: &Expr) -> bool {
    match func {
        Expr::Name(name) => matches!(name.id.as_str(), "import_module" | "__import__"),
        Expr::Attribute(attribute) => attribute.attr.as_str() == "import_module",
        _ => false,
    }
}

/// Decorators that leave the definition as written (built-in descriptors,
/// typing markers), matched on the dotted name as written.
const KEEPS_DEFINITION: &[&str] = &[
    "property",
    "classmethod",
    "staticmethod",
    "abstractmethod",
    "abc.abstractmethod",
    "overload",
    "typing.overload",
    "override",
    "typing.override",
    "typing_extensions.override",
    "final",
    "typing.final",
    "functools.wraps",
    "wraps",
    "cached_property",
    "functools.cached_property",
];

/// Common test decorators: markers, fixtures, skips and patches.
const TEST_DECORATORS: &[&str] = &[
    "pytest.fixture",
    "fixture",
    "unittest.skip",
    "unittest.skipIf",
    "unittest.skipUnless",
    "unittest.expectedFailure",
    "skip",
    "skipIf",
    "skipUnless",
    "expectedFailure",
    "patch",
    "mock.patch",
    "unittest.mock.patch",
];

/// Prefixes of common test decorator families: `pytest.mark.slow`,
/// `mock.patch.object`, `patch.dict`, ...
const TEST_DECORATOR_FAMILIES: &[&str] = &[
    "pytest.mark.",
    "patch.",
    "mock.patch.",
    "unittest.mock.patch.",
];

/// Whether decorator `name` (dotted, as written) is one that warnings leave
/// out: it keeps the definition as written, or it is a common test decorator.
pub(super) fn keeps_definition(name: &str) -> bool {
    KEEPS_DEFINITION.contains(&name)
        || TEST_DECORATORS.contains(&name)
        || TEST_DECORATOR_FAMILIES.iter().any(|p| name.starts_with(p))
        // `@x.setter` and friends of a property.
        || name
            .rsplit_once('.')
            .is_some_and(|(_, last)| matches!(last, "setter" | "getter" | "deleter"))
}
