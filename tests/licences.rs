//! The licence policy in `deny.toml` (the file `cargo deny check licenses`
//! reads), applied to every package `cargo metadata` lists:
//! dependencies, build and dev dependencies, for every target platform.
//! cargo-deny takes minutes to build; this runs with every `cargo test`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// An SPDX licence expression (SPDX 2.x annex D), with the deprecated `/`
/// for OR that older crates still use.
#[derive(Debug, PartialEq)]
enum Expr {
    /// A licence identifier, with the exception `WITH` couples to it.
    Licence {
        id: String,
        exception: Option<String>,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

fn tokens(text: &str) -> Vec<String> {
    let spaced = text
        .replace('(', " ( ")
        .replace(')', " ) ")
        .replace('/', " OR ");
    spaced.split_whitespace().map(str::to_string).collect()
}

/// Parses `text`: OR binds loosest, then AND, then WITH.
fn parse(text: &str) -> Result<Expr, String> {
    let tokens = tokens(text);
    let mut parser = Parser {
        tokens: &tokens,
        next: 0,
    };
    let expr = parser.or()?;
    match tokens.get(parser.next) {
        None => Ok(expr),
        Some(extra) => Err(format!("unexpected `{extra}`")),
    }
}

struct Parser<'a> {
    tokens: &'a [String],
    next: usize,
}

impl Parser<'_> {
    fn peek_is(&self, word: &str) -> bool {
        self.tokens
            .get(self.next)
            .is_some_and(|t| t.eq_ignore_ascii_case(word))
    }

    fn take(&mut self) -> Result<&str, String> {
        let token = self
            .tokens
            .get(self.next)
            .ok_or("the expression ends too early")?;
        self.next += 1;
        Ok(token)
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while self.peek_is("OR") {
            self.next += 1;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.with()?;
        while self.peek_is("AND") {
            self.next += 1;
            left = Expr::And(Box::new(left), Box::new(self.with()?));
        }
        Ok(left)
    }

    fn with(&mut self) -> Result<Expr, String> {
        if self.peek_is("(") {
            self.next += 1;
            let inner = self.or()?;
            return match self.take()? {
                ")" => Ok(inner),
                other => Err(format!("expected `)`, found `{other}`")),
            };
        }
        let id = self.take()?.to_string();
        if ["AND", "OR", "WITH", ")"]
            .iter()
            .any(|op| id.eq_ignore_ascii_case(op))
        {
            return Err(format!("expected a licence, found `{id}`"));
        }
        let exception = if self.peek_is("WITH") {
            self.next += 1;
            Some(self.take()?.to_string())
        } else {
            None
        };
        Ok(Expr::Licence { id, exception })
    }
}

/// Whether the terms can be met with allowed licences only: one side of
/// each OR, both sides of each AND. A licence with an exception is allowed
/// only as written (`Apache-2.0 WITH LLVM-exception`), as cargo-deny does.
fn satisfied(expr: &Expr, allowed: &dyn Fn(&str) -> bool) -> bool {
    match expr {
        Expr::Licence {
            id,
            exception: None,
        } => allowed(id),
        Expr::Licence {
            id,
            exception: Some(exception),
        } => allowed(&format!("{id} WITH {exception}")),
        Expr::And(a, b) => satisfied(a, allowed) && satisfied(b, allowed),
        Expr::Or(a, b) => satisfied(a, allowed) || satisfied(b, allowed),
    }
}

/// `[licenses]` of deny.toml, the parts this check applies.
struct Policy {
    allow: BTreeSet<String>,
    /// Licences allowed for one crate only, by crate name.
    exceptions: BTreeMap<String, BTreeSet<String>>,
    /// Expressions standing in for a crate's missing `license` field.
    clarify: BTreeMap<String, String>,
}

/// The crate an `exceptions` or `clarify` entry names: `crate` (`name` or
/// `name@version`) or, in older files, `name`.
fn entry_crate(entry: &toml::Value) -> Option<String> {
    let spec = entry.get("crate").or_else(|| entry.get("name"))?.as_str()?;
    Some(spec.split('@').next().unwrap_or(spec).to_string())
}

fn strings(value: Option<&toml::Value>) -> BTreeSet<String> {
    value
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

fn policy() -> Policy {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deny.toml");
    let text = std::fs::read_to_string(&path).expect("deny.toml at the crate root");
    let config: toml::Value = toml::from_str(&text).expect("deny.toml is valid TOML");
    let licenses = config.get("licenses").expect("deny.toml has [licenses]");
    let entries = |key: &str| -> Vec<toml::Value> {
        licenses
            .get(key)
            .and_then(toml::Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut exceptions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in entries("exceptions") {
        let name = entry_crate(&entry).expect("every exception names its crate");
        exceptions
            .entry(name)
            .or_default()
            .extend(strings(entry.get("allow")));
    }
    let clarify = entries("clarify")
        .iter()
        .map(|entry| {
            let name = entry_crate(entry).expect("every clarification names its crate");
            let expression = entry
                .get("expression")
                .and_then(toml::Value::as_str)
                .expect("every clarification has an expression")
                .to_string();
            (name, expression)
        })
        .collect();
    Policy {
        allow: strings(licenses.get("allow")),
        exceptions,
        clarify,
    }
}

#[test]
fn every_dependency_has_an_allowed_licence() {
    let policy = policy();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    // Not offline: the packages of other platforms, which `cargo test`
    // never downloads, are fetched here, so `cargo test` alone suffices.
    assert!(
        output.status.success(),
        "cargo metadata failed; check the network or run `cargo fetch`, then test again:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("a package list");
    assert!(packages.len() > 100, "too few packages: {}", packages.len());
    let mut offending = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or("?");
        let version = package["version"].as_str().unwrap_or("?");
        let expression = match (package["license"].as_str(), policy.clarify.get(name)) {
            (_, Some(clarified)) => clarified.as_str(),
            (Some(license), None) => license,
            (None, None) => {
                let file = package["license_file"].as_str().unwrap_or("none");
                offending.push(format!(
                    "{name} {version}: no SPDX licence (licence file: {file}); \
                     read it and add a [[licenses.clarify]] entry to deny.toml"
                ));
                continue;
            }
        };
        let extra = policy.exceptions.get(name);
        let allowed = |licence: &str| {
            policy.allow.contains(licence) || extra.is_some_and(|e| e.contains(licence))
        };
        match parse(expression) {
            Ok(expr) if satisfied(&expr, &allowed) => {}
            Ok(_) => offending.push(format!("{name} {version}: {expression}")),
            Err(error) => offending.push(format!(
                "{name} {version}: cannot read the licence `{expression}` ({error})"
            )),
        }
    }
    assert!(
        offending.is_empty(),
        "licences not allowed by deny.toml (replace the crate, or add an \
         exception with a comment saying why):\n  {}",
        offending.join("\n  ")
    );
}

#[test]
fn every_exception_and_clarification_names_a_crate_in_use() {
    let policy = policy();
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock"))
        .expect("Cargo.lock");
    for name in policy.exceptions.keys().chain(policy.clarify.keys()) {
        assert!(
            lock.contains(&format!("name = \"{name}\"\n")),
            "deny.toml names {name}, which is no longer a dependency: remove its entry"
        );
    }
}

#[test]
fn the_expression_evaluator_follows_spdx() {
    let allow: BTreeSet<&str> = ["MIT", "Apache-2.0", "Unicode-3.0"].into();
    let ok = |text: &str| satisfied(&parse(text).expect(text), &|l: &str| allow.contains(l));
    assert!(ok("MIT OR Apache-2.0"));
    assert!(ok("(MIT OR Apache-2.0) AND Unicode-3.0"));
    assert!(ok("MIT/Apache-2.0"));
    assert!(ok("LGPL-2.1-or-later OR MIT"));
    assert!(!ok("GPL-3.0"));
    assert!(!ok("MIT AND GPL-3.0"));
    assert!(!ok("(MIT OR Apache-2.0) AND Unicode-DFS-2016"));
    // An exception makes a distinct licence.
    assert!(!ok("Apache-2.0 WITH LLVM-exception"));
    assert!(ok("Apache-2.0 WITH LLVM-exception OR Apache-2.0 OR MIT"));
    // AND binds tighter than OR.
    assert!(ok("GPL-3.0 AND Zlib OR MIT"));
    assert_eq!(
        parse("MIT OR Apache-2.0 AND Zlib"),
        parse("MIT OR (Apache-2.0 AND Zlib)")
    );
    for bad in ["", "MIT OR", "(MIT", "MIT)", "AND MIT", "MIT WITH"] {
        assert!(parse(bad).is_err(), "{bad:?} parsed");
    }
}
