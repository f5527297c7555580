//! Which files are test modules: the default pytest patterns
//! always, plus the project's own `python_files` and `testpaths` when its
//! pytest configuration sets them. Reading that configuration is the
//! workspace's job; this only matches paths.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Test files anywhere in the tree, as pytest finds them by default, plus
/// everything under a `tests` directory and pytest's `conftest.py`.
const DEFAULT_PATTERNS: &[&str] = &[
    "**/test_*.py",
    "**/*_test.py",
    "**/tests/**",
    "**/conftest.py",
];

/// The project's pytest settings that name test files, as configured.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TestPatterns {
    /// `python_files` globs: on the file name, or on the root-relative path
    /// when they hold a `/`.
    pub python_files: Vec<String>,
    /// `testpaths`: root-relative directories (or globs) whose Python files
    /// are all test modules.
    pub testpaths: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct TestMatcher {
    /// What the set was built from: two matchers are equal when these are.
    patterns: TestPatterns,
    set: GlobSet,
}

impl PartialEq for TestMatcher {
    fn eq(&self, other: &Self) -> bool {
        self.patterns == other.patterns
    }
}

impl Eq for TestMatcher {}

impl TestMatcher {
    /// Invalid globs are skipped here; the workspace reports them when it
    /// reads the configuration.
    pub(crate) fn new(patterns: &TestPatterns) -> Self {
        let python_files = patterns.python_files.iter().map(|p| {
            if p.contains('/') {
                p.trim_start_matches("./").to_string()
            } else {
                format!("**/{p}")
            }
        });
        let testpaths = patterns.testpaths.iter().map(|p| {
            let dir = p.trim_start_matches("./").trim_end_matches('/');
            format!("{dir}/**")
        });
        let mut builder = GlobSetBuilder::new();
        for pattern in DEFAULT_PATTERNS
            .iter()
            .map(|p| p.to_string())
            .chain(python_files)
            .chain(testpaths)
        {
            if let Ok(glob) = GlobBuilder::new(&pattern).literal_separator(true).build() {
                builder.add(glob);
            }
        }
        let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
        Self {
            patterns: patterns.clone(),
            set,
        }
    }

    /// `path` is root-relative with `/` separators.
    pub(crate) fn is_test(&self, path: &str) -> bool {
        self.set.is_match(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_patterns_dd3() {
        let matcher = TestMatcher::new(&TestPatterns::default());
        for test in [
            "test_app.py",
            "pkg/test_app.py",
            "pkg/app_test.py",
            "tests/helpers.py",
            "src/tests/deep/util.py",
            "conftest.py",
            "pkg/conftest.py",
        ] {
            assert!(matcher.is_test(test), "{test}");
        }
        for source in [
            "app.py",
            "pkg/testing.py",
            "contest.py",
            "tests.py",
            "latest_app.py",
        ] {
            assert!(!matcher.is_test(source), "{source}");
        }
    }

    #[test]
    fn pytest_python_files_and_testpaths() {
        let matcher = TestMatcher::new(&TestPatterns {
            python_files: vec!["check_*.py".into()],
            testpaths: vec!["./integration/".into()],
        });
        assert!(matcher.is_test("pkg/check_app.py"));
        assert!(matcher.is_test("integration/flows.py"));
        assert!(!matcher.is_test("pkg/app.py"));
        assert!(!matcher.is_test("integration.py"));
    }
}
