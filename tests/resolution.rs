//! Relationship detection and module resolution on fixture projects, with
//! every expected relationship asserted exactly.

use crate::common;

use common::{lines, open};

fn assert_relationships(fixture: &str, expected: &[&str]) {
    let actual = lines(&open(fixture));
    assert_eq!(actual, expected, "fixture {fixture}");
}

#[test]
fn aliases_ec3_track_original_names_and_resolve_calls_through_aliases() {
    assert_relationships(
        "aliases",
        &[
            "checkout.py:1:7 import shop/pricing.py - - alias=pr",
            "checkout.py:2:5 import shop/pricing.py compute_price 1 alias=price defined_in=shop/pricing.py",
            "checkout.py:2:5 import shop/pricing.py Discount 6 alias=D defined_in=shop/pricing.py",
            "checkout.py:5:15 inheritance shop/pricing.py Discount 6",
            "checkout.py:10:11 function_call shop/pricing.py compute_price 1",
            "checkout.py:10:35 function_call shop/pricing.py compute_price 1",
        ],
    );
}

#[test]
fn relative_imports_levels_one_to_three_and_beyond_the_top_package() {
    assert_relationships(
        "relative_imports",
        &[
            "app/core/deep/leaf.py:1:14 import app/core/deep/sibling.py sibling -",
            "app/core/deep/leaf.py:2:15 import app/core/models.py models -",
            "app/core/deep/leaf.py:3:8 import app/util/text.py slug 1 defined_in=app/util/text.py",
            "app/core/deep/leaf.py:4:9 import <unresolved:....outside> nothing -",
            "app/core/deep/leaf.py:5:6 import <unresolved:.missing> gone -",
            "app/core/deep/leaf.py:9:11 function_call app/util/text.py slug 1",
            "top.py:1:14 import <unresolved:.> anything -",
        ],
    );
}

#[test]
fn wildcard_imports_ec4_follow_dunder_all_and_skip_private_names() {
    assert_relationships(
        "wildcard",
        &[
            "consumer.py:1:5 import lib/helpers.py * - wildcard",
            "consumer.py:2:5 import lib/plain.py * - wildcard",
            "consumer.py:4:0 function_call lib/helpers.py public_helper 4",
            "consumer.py:5:0 function_call lib/plain.py plain_function 1",
        ],
    );
}

#[test]
fn wildcard_imports_ec4_follow_an_all_gathered_from_other_modules_all() {
    // `__all__ = fields_all + indexes.__all__` (pkg), then `pkg_all +
    // [...]` (gis): the names of every module whose `__all__` is added.
    // Not relating: IntField (added through a plain list, not a module's
    // `__all__`) and, from dyn, CharField (`__all__ = sorted(...)`).
    let actual: Vec<String> = lines(&open("gathered_all"))
        .into_iter()
        .filter(|l| l.starts_with("app.py") || l.starts_with("dynamic_app.py"))
        .collect();
    assert_eq!(
        actual,
        [
            "app.py:1:7 import gis/__init__.py - -",
            "app.py:2:5 import gis/__init__.py * - wildcard",
            "app.py:6:4 function_call pkg/fields.py CharField 4",
            "app.py:7:4 function_call pkg/indexes.py Index 4",
            "app.py:8:4 function_call pkg/base.py Model 1",
            "app.py:9:4 function_call gis/point.py Point 1",
            "app.py:10:8 function_call pkg/fields.py CharField 4",
            "dynamic_app.py:1:5 import dyn/__init__.py * - wildcard",
        ]
    );
}

#[test]
fn a_main_block_binds_nothing_importers_see() {
    // `if __name__ == "__main__":` runs only when the file is executed: its
    // `from pkg.live import Live as Live` does not make Live ambiguous for
    // importers; its own calls still resolve, its names being a scope of
    // their own.
    assert_relationships(
        "main_block",
        &[
            "pkg/live.py:7:9 import pkg/live.py Live 1 alias=Live condition=main_block defined_in=pkg/live.py",
            "pkg/live.py:8:9 import pkg/other.py Helper 5 condition=main_block defined_in=pkg/other.py",
            "pkg/live.py:8:9 import pkg/other.py helper 1 condition=main_block defined_in=pkg/other.py",
            "pkg/live.py:10:4 function_call pkg/other.py helper 1",
            // Its names hold their values, as a function's locals do.
            "pkg/live.py:12:13 function_call pkg/other.py Helper 5",
            "pkg/live.py:13:11 function_call pkg/other.py Helper.run 6",
            "pkg/use.py:1:5 import pkg/live.py Live 1 defined_in=pkg/live.py",
            "pkg/use.py:5:4 function_call pkg/live.py Live 1",
            "pkg/use.py:5:11 function_call pkg/live.py Live.refresh 2",
        ],
    );
}

#[test]
fn conditional_imports_ec5_are_marked_and_ambiguous_bindings_give_no_call() {
    // `parse` is bound by either branch of try/except ImportError, so the
    // call in `load` has no certain target and yields no relationship: no guess.
    assert_relationships(
        "conditional_imports",
        &[
            "service.py:1:7 import <stdlib:sys> - -",
            "service.py:2:5 import <stdlib:typing> TYPE_CHECKING -",
            "service.py:5:9 import models.py User 1 condition=type_checking defined_in=models.py",
            "service.py:8:9 import fast.py parse 1 condition=try_except defined_in=fast.py",
            "service.py:10:9 import slow.py parse 1 condition=try_except defined_in=slow.py",
            "service.py:13:11 import <stdlib:tomllib> - - condition=version_check",
            "service.py:15:11 import <third-party:tomli> - - alias=tomllib condition=version_check",
        ],
    );
}

#[test]
fn regular_package_beats_module_and_module_beats_namespace_directory() {
    // As in CPython: utils/__init__.py wins over utils.py; helpers.py
    // wins over the namespace directory helpers/, so helpers.extra is missing.
    assert_relationships(
        "package_vs_module",
        &[
            "main.py:1:7 import utils/__init__.py - -",
            "main.py:2:7 import helpers.py - -",
            "main.py:3:7 import <unresolved:helpers.extra> - -",
            "main.py:5:6 function_call utils/__init__.py from_package 1",
            "main.py:6:8 function_call helpers.py from_helpers_module 1",
        ],
    );
}

#[test]
fn reexport_chains_lead_to_the_defining_file() {
    assert_relationships(
        "reexport_chain",
        &[
            "api/__init__.py:1:6 import api/impl/__init__.py handler 1 defined_in=api/impl/core.py",
            "api/__init__.py:1:6 import api/impl/__init__.py Resource 6 defined_in=api/impl/core.py",
            "api/impl/__init__.py:1:6 import api/impl/core.py handler 1 defined_in=api/impl/core.py",
            "api/impl/__init__.py:2:6 import api/impl/core.py Resource 6 defined_in=api/impl/core.py",
            "client.py:1:5 import api/__init__.py handler 1 defined_in=api/impl/core.py",
            "client.py:2:7 import api/__init__.py - -",
            "client.py:5:19 inheritance api/impl/core.py Resource 6",
            "client.py:10:11 function_call api/impl/core.py handler 1",
        ],
    );
}

#[test]
fn src_layout_is_a_search_root() {
    assert_relationships(
        "src_layout",
        &[
            "run.py:1:5 import src/mypkg/cli.py main 5 defined_in=src/mypkg/cli.py",
            "run.py:3:0 function_call src/mypkg/cli.py main 5",
            "src/mypkg/cli.py:1:5 import src/mypkg/config.py load_config 1 defined_in=src/mypkg/config.py",
            "src/mypkg/cli.py:2:14 import src/mypkg/config.py config -",
            "src/mypkg/cli.py:6:4 function_call src/mypkg/config.py load_config 1",
            "src/mypkg/cli.py:7:11 function_call src/mypkg/config.py load_config 1",
        ],
    );
}

#[test]
fn namespace_packages_without_init_resolve() {
    assert_relationships(
        "namespace_packages",
        &[
            "ns/registry.py:1:5 import ns/plugins/alpha.py alpha -",
            "ns/registry.py:2:6 import ns/plugins/alpha.py activate 1 defined_in=ns/plugins/alpha.py",
            "ns/registry.py:3:7 import <namespace:ns> - -",
            "ns/registry.py:7:10 function_call ns/plugins/alpha.py activate 1",
            "ns/registry.py:8:4 function_call ns/plugins/alpha.py activate 1",
        ],
    );
}

#[test]
fn shadowed_names_last_binding_wins_and_locals_hide_globals() {
    // The second import of retry_with_backoff wins; the local `def helper`
    // shadows its import; parameter `len` and local `print` hide builtins.
    assert_relationships(
        "shadowed_names",
        &[
            "bot.py:1:5 import retry.py retry_with_backoff 1 defined_in=retry.py",
            "bot.py:2:5 import utils.py retry_with_backoff 1 defined_in=utils.py",
            "bot.py:3:5 import utils.py helper 5 defined_in=utils.py",
            "bot.py:11:4 function_call utils.py retry_with_backoff 1",
        ],
    );
}

#[test]
fn function_scope_imports_bind_only_inside_their_function() {
    assert_relationships(
        "function_scope_imports",
        &[
            "lazy.py:2:9 import heavy.py crunch 1 scope=function defined_in=heavy.py",
            "lazy.py:3:11 function_call heavy.py crunch 1",
            "lazy.py:7:11 import heavy.py - - scope=class",
        ],
    );
}

#[test]
fn builtin_and_stdlib_calls_become_markers() {
    let service = open("builtins_and_stdlib");
    assert_eq!(
        lines(&service),
        [
            "app.py:1:7 import <stdlib:os.path> - -",
            "app.py:2:7 import <third-party:requests> - -",
            "app.py:6:16 function_call <stdlib:os.path> join -",
            "app.py:7:4 function_call <builtin:print> print -",
            "app.py:8:20 function_call <third-party:requests> get -",
        ]
    );
}

#[test]
fn sub_projects_search_their_own_src_and_root_first_then_the_outer_roots() {
    // libs/alpha (pyproject.toml, flat layout) finds its `alpha` package
    // before the root's alpha.py; libs/beta (setup.cfg, src layout) holds
    // libs/beta/plugins/gamma (setup.py, src layout), which finds its own
    // `gamma` first and the enclosing sub-project's `beta` after it. Outside
    // the sub-projects, `alpha` is the root's module. Relative imports count
    // from the file's own root: `..` in alpha/core.py leaves the package.
    assert_relationships(
        "sub_projects",
        &[
            "libs/alpha/alpha/core.py:1:5 import libs/alpha/alpha/__init__.py hello 1 defined_in=libs/alpha/alpha/__init__.py",
            "libs/alpha/alpha/core.py:2:15 import <unresolved:..> beyond -",
            "libs/alpha/alpha/core.py:6:11 function_call libs/alpha/alpha/__init__.py hello 1",
            "libs/alpha/tests/test_core.py:1:5 import libs/alpha/alpha/core.py run 5 defined_in=libs/alpha/alpha/core.py",
            "libs/alpha/tests/test_core.py:5:11 function_call libs/alpha/alpha/core.py run 5",
            "libs/beta/plugins/gamma/setup.py:1:5 import libs/beta/plugins/gamma/src/gamma/__init__.py plug 5 defined_in=libs/beta/plugins/gamma/src/gamma/__init__.py",
            "libs/beta/plugins/gamma/src/gamma/__init__.py:1:5 import libs/beta/src/beta/api.py fetch 1 defined_in=libs/beta/src/beta/api.py",
            "libs/beta/plugins/gamma/src/gamma/__init__.py:2:5 import libs/beta/plugins/gamma/src/gamma/ext.py extend 1 defined_in=libs/beta/plugins/gamma/src/gamma/ext.py",
            "libs/beta/plugins/gamma/src/gamma/__init__.py:6:11 function_call libs/beta/plugins/gamma/src/gamma/ext.py extend 1",
            "libs/beta/plugins/gamma/src/gamma/__init__.py:6:18 function_call libs/beta/src/beta/api.py fetch 1",
            "libs/beta/src/beta/__init__.py:1:6 import libs/beta/src/beta/api.py fetch 1 defined_in=libs/beta/src/beta/api.py",
            "tools.py:1:7 import alpha.py - -",
            "tools.py:2:5 import libs/alpha/alpha/__init__.py hello 1 defined_in=libs/alpha/alpha/__init__.py",
        ],
    );
}

#[test]
fn module_names_count_from_the_files_own_search_root() {
    let service = open("sub_projects");
    let name = |path| service.engine().module_name(path);
    assert_eq!(name("libs/alpha/alpha/core.py"), "alpha.core");
    assert_eq!(name("libs/beta/src/beta/api.py"), "beta.api");
    assert_eq!(
        name("libs/beta/plugins/gamma/src/gamma/__init__.py"),
        "gamma"
    );
    assert_eq!(name("libs/beta/plugins/gamma/setup.py"), "setup");
    // A test module is named from its pytest basedir.
    assert_eq!(name("libs/alpha/tests/test_core.py"), "test_core");
    assert_eq!(name("tools.py"), "tools");
    // Files that do not exist (a deleted module) are named the same way.
    assert_eq!(name("libs/beta/src/beta/gone.py"), "beta.gone");
    let service = open("pytest_basedir");
    let name = |path| service.engine().module_name(path);
    assert_eq!(name("tests/unit/test_deep.py"), "unit.test_deep");
    assert_eq!(name("pkgtests/test_pkg.py"), "pkgtests.test_pkg");
}

#[test]
fn pytest_prepends_a_test_modules_basedir() {
    // tests/ has no __init__.py: it is the basedir of its test modules,
    // also of tests/unit/test_deep.py (tests/unit is a package), whose `..`
    // then reaches above its top-level package `unit`. pkgtests/ is a
    // package, so its basedir is the root: no `helpers` there. Modules that
    // pytest does not collect (app/main.py, pkgtests/support.py) get no
    // basedir, and inside a package no script-directory fallback either.
    assert_relationships(
        "pytest_basedir",
        &[
            "app/main.py:1:7 import <third-party:helpers> - -",
            "pkgtests/support.py:1:7 import <third-party:helpers> - -",
            "pkgtests/test_pkg.py:1:7 import <third-party:helpers> - -",
            "pkgtests/test_pkg.py:2:5 import pkgtests/helpers.py helpers - alias=mine",
            "tests/conftest.py:1:5 import tests/helpers.py make 1 defined_in=tests/helpers.py",
            "tests/test_flat.py:1:7 import tests/helpers.py - -",
            "tests/test_flat.py:5:19 function_call tests/helpers.py make 1",
            "tests/unit/test_deep.py:1:7 import tests/helpers.py - -",
            "tests/unit/test_deep.py:2:14 import tests/unit/sibling.py sibling -",
            "tests/unit/test_deep.py:3:15 import <unresolved:..> helpers - alias=above",
        ],
    );
}

#[test]
fn a_script_outside_any_package_finds_the_modules_beside_it_last() {
    // scripts/wsgi.py finds hello.py beside it (flask's
    // tests/test_apps/helloworld case), but the root's config.py comes
    // before scripts/config.py; pkg/user.py is in a package: no fallback.
    assert_relationships(
        "script_dir",
        &[
            "pkg/user.py:1:5 import <third-party:hello> app -",
            "scripts/wsgi.py:1:5 import scripts/hello.py app 1 defined_in=scripts/hello.py",
            "scripts/wsgi.py:2:7 import config.py - -",
            "scripts/wsgi.py:3:7 import <third-party:missing_module> - -",
            "scripts/wsgi.py:5:0 function_call scripts/hello.py app 1",
        ],
    );
}

#[test]
fn a_file_too_large_to_index_ec17_is_still_a_module_imports_resolve_to() {
    assert_relationships(
        "huge_module",
        &[
            "main.py:1:7 import big/table.py - -",
            "main.py:2:5 import big/table.py VALUE -",
            "main.py:3:5 import big/table.py table -",
            "main.py:4:7 import <unresolved:big.missing> - -",
        ],
    );
    // Still not indexed for content: no facts, not readable, a notice.
    let service = open("huge_module");
    assert!(!service.engine().contains("big/table.py"));
    assert!(service.engine().facts("big/table.py").is_none());
    let error = service.read_with_context("big/table.py").unwrap_err();
    assert_eq!(error.code(), "file_not_found");
    let notices = service.notices(Some("big/table.py"));
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, xfile::workspace::NoticeKind::TooLarge);
    let export = service.export();
    assert!(
        export
            .files
            .iter()
            .all(|f| f.relative_path != "big/table.py")
    );
}

/// Packages kept in `lib/` (setuptools' `packages.find where`) resolve as
/// installed; a directory a `conftest.py` puts on `sys.path` by a literal
/// name resolves for the tests, one put there by a computed name does not;
/// `xfile index` says which roots it found and from where.
#[test]
fn package_roots_come_from_packaging_metadata_and_conftest_sys_path() {
    assert_relationships(
        "package_roots",
        &[
            "lib/shop/api.py:1:5 import lib/shop/core.py price 1 defined_in=lib/shop/core.py",
            "lib/shop/api.py:5:11 function_call lib/shop/core.py price 1",
            "tests/conftest.py:1:7 import <stdlib:os> - -",
            "tests/conftest.py:2:7 import <stdlib:sys> - -",
            "tests/conftest.py:4:9 function_call <stdlib:sys.path> insert -",
            "tests/conftest.py:4:27 function_call <stdlib:os.path> join -",
            "tests/conftest.py:4:40 function_call <stdlib:os.path> dirname -",
            "tests/conftest.py:9:13 function_call <stdlib:sys.path> append -",
            "tests/conftest.py:9:28 function_call <stdlib:os.path> join -",
            "tests/conftest.py:9:41 function_call <stdlib:os.path> dirname -",
            "tests/test_app.py:1:5 import tests/apps/blueprintapp/__init__.py app 1 defined_in=tests/apps/blueprintapp/__init__.py",
            // Put on sys.path by a computed name: not followed.
            "tests/test_app.py:2:5 import <third-party:hidden> secret -",
            "tests/test_app.py:6:11 function_call tests/apps/blueprintapp/__init__.py app 1",
            "tests/test_app.py:7:11 function_call <third-party:hidden> secret -",
        ],
    );
    let service = common::open("package_roots");
    let notice = service
        .notices(None)
        .iter()
        .find(|n| n.message.starts_with("search roots"))
        .map(|n| n.message.clone());
    assert_eq!(
        notice.as_deref(),
        Some(
            "search roots from packaging and test settings: lib (pyproject.toml \
             [tool.setuptools.packages.find] where), tests/apps (tests/conftest.py sys.path)"
        )
    );
}
