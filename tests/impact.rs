//! `impact`: from the diff of the working tree against
//! a base, the changed definitions, their dependents at symbol level
//! (callers, subclasses, importers) to a depth, ranked, and the tests,
//! on a real repository built with `git` and indexed by xfile.

use crate::common;

use common::git_repo::GitRepo;
use xfile::service::Service;
use xfile::service::impact::Impact;

const MODELS: &str = r#"class Model:
    def save(self):
        return 1


class User(Model):
    def greet(self):
        return "hi"


def helper():
    return 2


def unused():
    return 3
"#;

const SERVICE: &str = r#"from app.models import User, helper


def register():
    user = User()
    user.save()
    return helper()


def main():
    return register()
"#;

fn project() -> GitRepo {
    let repo = GitRepo::init();
    repo.write("app/__init__.py", "");
    repo.write("app/models.py", MODELS);
    repo.write("app/service.py", SERVICE);
    repo.write(
        "app/admin.py",
        "from app.models import Model\n\n\nclass Admin(Model):\n    pass\n",
    );
    repo.write(
        "tests/test_service.py",
        "from app.service import register\n\n\ndef test_register():\n    assert register() == 2\n",
    );
    repo.commit("Ann", 1, "Project");
    repo
}

fn impact_of(repo: &GitRepo, depth: usize) -> Impact {
    let service = Service::open(&repo.path()).expect("indexes");
    service.impact(None, depth).expect("impact")
}

fn changed(impact: &Impact) -> Vec<String> {
    impact
        .changed
        .iter()
        .map(|c| {
            format!(
                "{} {:?} {}-{}",
                c.symbol, c.change, c.start_line, c.end_line
            )
        })
        .collect()
}

fn dependents(list: &[xfile::service::impact::Dependent]) -> Vec<String> {
    list.iter()
        .map(|d| {
            format!(
                "{} {:?} {} :{} d{} r{}",
                d.symbol, d.via, d.of, d.line, d.depth, d.reaches
            )
        })
        .collect()
}

#[test]
fn a_changed_method_reaches_its_callers_and_their_tests() {
    let repo = project();
    repo.write(
        "app/models.py",
        &MODELS
            .replace("return 1", "return 10")
            .replace("\n\ndef unused():\n    return 3\n", ""),
    );
    let impact = impact_of(&repo, 2);
    assert_eq!(impact.files, ["app/models.py"]);
    assert_eq!(
        changed(&impact),
        [
            "app/models.py::Model.save Modified 2-3",
            "app/models.py::unused Removed 15-16",
        ]
    );
    assert_eq!(
        dependents(&impact.dependents),
        [
            "app/service.py::register Calls app/models.py::Model.save :6 d1 r1",
            "app/service.py::main Calls app/service.py::register :11 d2 r1",
        ]
    );
    assert_eq!(
        dependents(&impact.test_dependents),
        [
            "tests/test_service.py::<module> Imports app/service.py::register :1 d2 r1",
            "tests/test_service.py::test_register Calls app/service.py::register :5 d2 r1",
        ]
    );
    let tests: Vec<(&str, &str)> = impact
        .covering_tests
        .iter()
        .map(|t| (t.test.as_str(), t.covers.as_str()))
        .collect();
    assert_eq!(tests, [("tests/test_service.py", "app/service.py")]);
    // Depth 1 stops at the direct caller.
    let near = impact_of(&repo, 1);
    assert_eq!(
        dependents(&near.dependents),
        ["app/service.py::register Calls app/models.py::Model.save :6 d1 r1"]
    );
    assert!(near.test_dependents.is_empty());
}

#[test]
fn a_changed_class_reaches_subclasses_importers_and_their_users() {
    let repo = project();
    repo.write(
        "app/models.py",
        &MODELS.replace("class Model:\n", "class Model:\n    kind = \"model\"\n\n"),
    );
    let impact = impact_of(&repo, 2);
    assert_eq!(changed(&impact), ["app/models.py::Model Modified 1-5"]);
    assert_eq!(
        dependents(&impact.dependents),
        [
            "app/admin.py::<module> Imports app/models.py::Model :1 d1 r1",
            "app/admin.py::Admin Subclasses app/models.py::Model :4 d1 r1",
            "app/models.py::User Subclasses app/models.py::Model :8 d1 r1",
            "app/service.py::<module> Imports app/models.py::User :1 d2 r1",
            "app/service.py::register Calls app/models.py::User :5 d2 r1",
        ]
    );
}

#[test]
fn module_level_code_reaches_importers_and_new_functions_are_added() {
    let repo = project();
    repo.write(
        "app/models.py",
        &format!("import os\n{MODELS}\n\ndef fresh():\n    return os.sep\n"),
    );
    let impact = impact_of(&repo, 2);
    assert_eq!(
        changed(&impact),
        [
            "app/models.py::fresh Added 20-21",
            "app/models.py::<module> Modified 1-1",
        ]
    );
    let importers: Vec<&str> = impact
        .dependents
        .iter()
        .map(|d| d.symbol.as_str())
        .collect();
    assert_eq!(
        importers,
        ["app/admin.py::<module>", "app/service.py::<module>"]
    );
    // Adding a function alone, blank lines and all, is no module change.
    repo.write(
        "app/models.py",
        &format!("{MODELS}\n\n# new\ndef fresh():\n    return 5\n"),
    );
    let impact = impact_of(&repo, 2);
    assert_eq!(changed(&impact), ["app/models.py::fresh Added 20-21"]);
    assert!(impact.dependents.is_empty());
}

#[test]
fn the_text_answer_lists_sections_and_fits_the_budget() {
    let repo = project();
    repo.write("app/models.py", &MODELS.replace("return 1", "return 10"));
    let impact = impact_of(&repo, 2);
    let text = impact.to_text(2000);
    assert_eq!(
        text,
        "## impact of the working tree against HEAD\n\n\
1 files changed, 1 symbols changed; dependents to depth 2\n\n\
### Changed\n\
- app/models.py::Model.save (modified, lines 2-3)\n\n\
### Dependents, nearest first\n\
- app/service.py::register (calls app/models.py::Model.save at line 6, depth 1)\n\
- app/service.py::main (calls app/service.py::register at line 11, depth 2)\n\n\
### Tests that use them\n\
- tests/test_service.py::<module> (imports app/service.py::register at line 1, depth 2)\n\
- tests/test_service.py::test_register (calls app/service.py::register at line 5, depth 2)\n\n\
### Test modules covering the changed and dependent files\n\
- tests/test_service.py (covers app/service.py)\n"
    );
    let small = impact.to_text(150);
    assert!(
        xfile::service::context::count_tokens(&small) <= 150,
        "{small}"
    );
    assert!(
        small.contains("not shown, cut by the answer budget"),
        "{small}"
    );
}

#[test]
fn no_change_and_no_repository_are_said() {
    let repo = project();
    let impact = impact_of(&repo, 2);
    assert!(impact.to_text(1000).ends_with("\nNo changes.\n"));
    let plain = common::copy_sample();
    let service = Service::open(&plain.path().canonicalize().unwrap()).unwrap();
    let error = service.impact(None, 2).unwrap_err();
    assert!(
        error.to_string().starts_with("Not a git repository"),
        "{error}"
    );
}

/// A removed function is still imported and called elsewhere: those uses
/// are what the removal breaks, found by name since nothing resolves to
/// it any more; the callers of the caller follow.
#[test]
fn a_removed_function_reaches_what_still_imports_and_calls_it() {
    let repo = project();
    repo.write(
        "app/models.py",
        &MODELS.replace("def helper():\n    return 2\n\n\n", ""),
    );
    let impact = impact_of(&repo, 2);
    assert_eq!(changed(&impact), ["app/models.py::helper Removed 11-12"]);
    assert_eq!(
        dependents(&impact.dependents),
        [
            "app/service.py::<module> Imports app/models.py::helper :1 d1 r1",
            "app/service.py::register Calls app/models.py::helper :7 d1 r1",
            "app/service.py::main Calls app/service.py::register :11 d2 r1",
        ]
    );
    assert_eq!(
        dependents(&impact.test_dependents),
        [
            "tests/test_service.py::<module> Imports app/service.py::register :1 d2 r1",
            "tests/test_service.py::test_register Calls app/service.py::register :5 d2 r1",
        ]
    );
}

/// A deleted module, and one moved away with `git mv`: their importers
/// still name the old module.
#[test]
fn a_deleted_or_moved_module_reaches_its_importers() {
    let repo = project();
    std::fs::remove_file(repo.path().join("app/admin.py")).expect("rm");
    let impact = impact_of(&repo, 1);
    // Nothing imports admin.py.
    assert!(impact.dependents.is_empty(), "{:?}", impact.dependents);
    repo.git(&["mv", "app/models.py", "app/entities.py"]);
    let impact = impact_of(&repo, 1);
    assert!(
        changed(&impact).contains(&"app/models.py::<module> Removed 1-1".to_string()),
        "{:?}",
        changed(&impact)
    );
    let importers: Vec<String> = dependents(&impact.dependents)
        .into_iter()
        .filter(|d| d.contains("Imports app/models.py::<module>"))
        .collect();
    assert_eq!(
        importers,
        ["app/service.py::<module> Imports app/models.py::<module> :1 d1 r1"]
    );
}

/// A new file git does not track yet is part of the change.
#[test]
fn an_untracked_file_is_a_change() {
    let repo = project();
    repo.write("app/extra.py", "def extra():\n    return 1\n");
    let impact = impact_of(&repo, 2);
    assert!(
        impact.files.contains(&"app/extra.py".to_string()),
        "{:?}",
        impact.files
    );
    assert_eq!(changed(&impact), ["app/extra.py::extra Added 1-2"]);
}
