//! read_with_context: class skeletons, preview tiers, import expansion, line
//! ranges, the hard token budget, switching the context off, its log and
//! usage counts.

use crate::common;

use xfile::service::context::count_tokens;
use xfile::service::{ReadOptions, Service};

/// A copy of `fixture` (reads log injections) with `config` as its
/// configuration file.
fn open(fixture: &str, config: &str) -> (tempfile::TempDir, Service) {
    let dir = common::copy_fixture(fixture);
    std::fs::write(dir.path().join(".cross_file_context_links.yml"), config).unwrap();
    let service = Service::open(dir.path()).unwrap();
    (dir, service)
}

/// The context section of a read (everything before the file content).
fn section(service: &Service, file: &str, options: &ReadOptions) -> String {
    let text = service.read_with_options(file, options).unwrap();
    let end = text.find("[File Content").unwrap();
    text[..end].to_string()
}

/// A read of lines `start..=end`.
fn lines(start: u32, end: u32) -> ReadOptions {
    ReadOptions {
        start_line: Some(start),
        end_line: Some(end),
        ..ReadOptions::default()
    }
}

fn depth(depth: u32) -> ReadOptions {
    ReadOptions {
        import_depth: Some(depth),
        ..ReadOptions::default()
    }
}

#[test]
fn a_used_class_is_a_skeleton_with_the_members_the_file_uses_first() {
    let (_dir, service) = open("context_skeletons", "");
    // Admin overrides save (reached through User's order in Model) and
    // make calls User.create, then delete on the Model it returns; they
    // lead User's skeleton, labelled with the class that defines them,
    // before User's own members.
    assert_eq!(
        section(&service, "app.py", &ReadOptions::default()),
        r#"[Cross-File Context]
Definitions these lines use, most relevant first:
class User(Model)  # shop/user.py:4-10
    """A person who can sign in."""
    def save(self, force: bool = False) -> None  # Model shop/base.py:9
    @classmethod def create(cls, **fields) -> "Model"  # Model shop/base.py:16
    def delete(self)  # Model shop/base.py:12
    address: "Address"  # shop/user.py:7
    def greet(self, other: "User") -> str  # shop/user.py:9
def slugify(text: str) -> str  # shop/helpers.py:4-6
    """Make a URL slug."""

---

"#
    );
}

#[test]
fn depth_two_adds_the_types_signatures_mention_once_through_a_cycle() {
    let (_dir, service) = open("context_skeletons", "");
    let two = section(&service, "app.py", &depth(2));
    assert!(
        two.ends_with(
            r#"Types those signatures mention:
class Model  # shop/base.py:1
    def __init__(self, **fields)  # shop/base.py:6
    table: str = ""  # shop/base.py:4
    self.fields = fields  # shop/base.py:7
    def save(self, force: bool = False) -> None  # shop/base.py:9
    def delete(self)  # shop/base.py:12
    @classmethod def create(cls, **fields) -> "Model"  # shop/base.py:16
    @property def pk(self) -> int  # shop/base.py:20
class Address  # shop/address.py:4
    owner: "User"  # shop/address.py:5
    def format(self) -> str  # shop/address.py:7

---

"#
        ),
        "{two}"
    );
    // Address names User again: the cycle ends, so one more hop adds
    // nothing, and the configuration key gives the same as the parameter.
    assert_eq!(section(&service, "app.py", &depth(3)), two);
    let (_dir, configured) = open("context_skeletons", "import_depth: 2\n");
    assert_eq!(section(&configured, "app.py", &ReadOptions::default()), two);
}

#[test]
fn a_star_import_expands_to_the_names_the_file_uses() {
    let (_dir, service) = open("context_skeletons", "");
    assert_eq!(
        section(&service, "star_reader.py", &ReadOptions::default()),
        r#"[Cross-File Context]
Definitions these lines use, most relevant first:
def slugify(text: str) -> str  # shop/helpers.py:4-6
    """Make a URL slug."""
RATE = 3  # shop/helpers.py:1

---

"#
    );
}

#[test]
fn show_available_lists_the_sibling_modules_public_names() {
    let (_dir, service) = open("context_skeletons", "");
    let options = ReadOptions {
        show_available: true,
        ..ReadOptions::default()
    };
    let text = section(&service, "shop/user.py", &options);
    assert!(
        text.contains(
            "Available in this package:\naddress.py: Address\nbase.py: Model\nhelpers.py: slugify(), unused()\n"
        ),
        "{text}"
    );
    // Off by default.
    let plain = section(&service, "shop/user.py", &ReadOptions::default());
    assert!(!plain.contains("Available"), "{plain}");
}

#[test]
fn a_line_range_reads_those_lines_and_injects_what_they_use() {
    let (_dir, service) = open("context_skeletons", "");
    let options = lines(11, 14);
    let text = service.read_with_options("app.py", &options).unwrap();
    // `make` names User (imported above the range) and calls User.create,
    // then delete on what it returns (`-> "Model"`, a forward reference);
    // slugify, used only above, is not injected.
    assert_eq!(
        text,
        r#"[Cross-File Context]
Definitions these lines use, most relevant first:
class User(Model)  # shop/user.py:4-10
    """A person who can sign in."""
    @classmethod def create(cls, **fields) -> "Model"  # Model shop/base.py:16
    def delete(self)  # Model shop/base.py:12
    address: "Address"  # shop/user.py:7
    def greet(self, other: "User") -> str  # shop/user.py:9

---

[File Content: lines 11-14 of 14]
def make() -> User:
    user = User.create(name="x")
    user.delete()
    return user
"#
    );
    for (start, end) in [(0, 3), (15, 20), (9, 4)] {
        let options = lines(start, end);
        let error = service.read_with_options("app.py", &options).unwrap_err();
        assert_eq!(error.code(), "invalid_parameter", "{start}-{end}");
        assert!(error.to_string().contains("14 lines"), "{error}");
    }
}

#[test]
fn small_budgets_fall_back_to_lower_tiers_and_name_the_rest() {
    // Only the minimal tier of the first definition fits; the other is named.
    let (_dir, service) = open("context_skeletons", "context_token_limit: 45\n");
    assert_eq!(
        section(&service, "app.py", &ReadOptions::default()),
        "[Cross-File Context]
Also used (name, kind, location):
User class shop/user.py:4
Not shown for the 45-token budget: 1 definition; get_dependencies app.py lists them.

---

"
    );
    // A little more: User at the minimal tier with the members the file
    // uses (overrides and calls), each named, before slugify, ranked
    // lower, which is named on the closing line.
    let (_dir, service) = open("context_skeletons", "context_token_limit: 80\n");
    assert_eq!(
        section(&service, "app.py", &ReadOptions::default()),
        "[Cross-File Context]
Also used (name, kind, location):
User class shop/user.py:4
    Model.save method shop/base.py:9
    Model.create method shop/base.py:16
    Model.delete method shop/base.py:12
Not shown for the 80-token budget: 1 definition (slugify); get_dependencies app.py lists them.

---

"
    );
}

#[test]
fn no_section_ever_exceeds_the_budget() {
    let fixtures: [(&str, &[&str]); 2] = [
        (
            "context_skeletons",
            &[
                "app.py",
                "star_reader.py",
                "shop/user.py",
                "shop/address.py",
            ],
        ),
        ("context_used_members", &["app.py"]),
    ];
    for limit in (5..=240).step_by(7) {
        for (fixture, files) in fixtures {
            let (_dir, service) = open(
                fixture,
                &format!("context_token_limit: {limit}\nenable_injection_logging: false\n"),
            );
            for file in files {
                for options in [depth(1), depth(3)] {
                    let text = section(&service, file, &options);
                    let tokens = count_tokens(&text);
                    assert!(tokens <= limit, "{file} at {limit}: {tokens}\n{text}");
                }
            }
        }
    }
}

#[test]
fn the_budget_keeps_the_first_used_definitions_and_names_the_rest_fr10() {
    let (dir, service) = open("token_budget", "context_token_limit: 60\n");
    let text = service.read_with_context("main.py").unwrap();
    let (context, content) = text.split_once("[File Content]\n").unwrap();
    assert_eq!(
        content,
        std::fs::read_to_string(dir.path().join("main.py")).unwrap()
    );
    assert_eq!(
        context,
        "[Cross-File Context]
Also used (name, kind, location):
first_helper function helpers.py:1
second_helper function helpers.py:6
Not shown for the 60-token budget: 1 definition (third_helper); get_dependencies main.py lists them.

---

"
    );
}

#[test]
fn disabled_injection_returns_the_plain_file_fr12() {
    let service = common::open("injection_disabled");
    let text = service.read_with_context("main.py").unwrap();
    assert_eq!(text, "from util import helper\n\nhelper()\n");
}

#[test]
fn each_injected_definition_is_logged_as_one_jsonl_line_fr26() {
    let (dir, service) = open("token_budget", "context_token_limit: 60\n");
    service.read_with_context("main.py").unwrap();
    service.read_with_context("main.py").unwrap();
    let log = std::fs::read_to_string(dir.path().join(".cross_file_context_logs/injections.jsonl"))
        .unwrap();
    assert_eq!(log.lines().count(), 4, "{log}");
    let events = service.recent_injections(Some("main.py"), 10).unwrap();
    let summary: Vec<(&str, &str, &str, bool)> = events
        .iter()
        .map(|e| {
            (
                e.source_file.as_str(),
                e.symbol.as_str(),
                e.lines.as_str(),
                e.cache_hit,
            )
        })
        .collect();
    // Newest first: the second read came from the cache.
    assert_eq!(
        summary,
        [
            ("helpers.py", "second_helper", "6-8", true),
            ("helpers.py", "first_helper", "1-3", true),
            ("helpers.py", "second_helper", "6-8", false),
            ("helpers.py", "first_helper", "1-3", false),
        ]
    );
    assert_eq!(events[1].snippet, "first_helper function helpers.py:1");
    assert!(events[0].token_count > 0);
    assert_eq!(
        service.recent_injections(Some("main.py"), 1).unwrap().len(),
        1
    );
    assert!(
        service
            .recent_injections(Some("helpers.py"), 10)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn injection_logging_can_be_switched_off() {
    let (dir, service) = open("token_budget", "enable_injection_logging: false\n");
    service.read_with_context("main.py").unwrap();
    assert!(!dir.path().join(".cross_file_context_logs").exists());
}

#[test]
fn notes_for_missing_dependencies_ec14_and_broken_ones() {
    let dir = common::copy_fixture("relative_imports");
    std::fs::write(dir.path().join("app/core/models.py"), "class Model(:\n").unwrap();
    let service = Service::open(dir.path()).unwrap();
    let text = service.read_with_context("app/core/deep/leaf.py").unwrap();
    assert!(
        text.contains("Note: line 5 imports .missing, which is not in the project (deleted, moved or not created yet)."),
        "{text}"
    );
    assert!(
        text.contains("Note: app/core/models.py has a syntax error at line 1; its definitions are not available."),
        "{text}"
    );
}

#[test]
fn widely_used_definitions_say_how_many_files_use_them_fr19() {
    let dir = common::copy_sample();
    for name in ["a", "b"] {
        std::fs::write(
            dir.path().join(format!("app/user_{name}.py")),
            "from app.utils.retry import retry_with_backoff\n\nretry_with_backoff(print)\n",
        )
        .unwrap();
    }
    let service = Service::open(dir.path()).unwrap();
    assert_eq!(
        service.usage_count("app/utils/retry.py", "retry_with_backoff"),
        4
    );
    let text = service.read_with_context("app/bot.py").unwrap();
    assert!(
        text.contains("# app/utils/retry.py:7-15, used in 4 files\n"),
        "{text}"
    );
    assert!(!text.contains("Storage is used in"), "{text}");
}

#[test]
fn used_members_are_named_before_anything_ranked_lower() {
    // Cache's method calls five members of its base Store and five
    // functions once each. Store ranks first: its used members are named
    // (compactly at the minimal tier) before the functions, which the
    // closing line names; Store's other members are not listed as used.
    let (_dir, service) = open("context_used_members", "context_token_limit: 120\n");
    assert_eq!(
        section(&service, "app.py", &ReadOptions::default()),
        "[Cross-File Context]
Also used (name, kind, location):
Store class lib/store.py:1
    Store.open method lib/store.py:4
    Store.read method lib/store.py:7
    Store.write method lib/store.py:10
    Store.flush method lib/store.py:13
    Store.close method lib/store.py:16
checksum_of function lib/tools.py:5
log_access function lib/tools.py:9
Not shown for the 120-token budget: 3 definitions (normalize_key, +2 more); get_dependencies app.py lists them.

---

"
    );
    // With room for Store's signature tier, every used member keeps its
    // line; the members not used (compact, stats, path) are only counted.
    let (_dir, service) = open("context_used_members", "context_token_limit: 250\n");
    let text = section(&service, "app.py", &ReadOptions::default());
    assert!(
        text.starts_with(
            "[Cross-File Context]
Definitions these lines use, most relevant first:
class Store  # lib/store.py:1
    def open(self, path: str, mode: str = \"r\") -> None  # lib/store.py:4
    def read(self, key: str) -> bytes  # lib/store.py:7
    def write(self, key: str, value: bytes, overwrite: bool = True) -> None  # lib/store.py:10
    def flush(self) -> None  # lib/store.py:13
    def close(self) -> None  # lib/store.py:16
    ...  # 3 more members
"
        ),
        "{text}"
    );
    assert!(
        !text.contains("compact") && !text.contains("stats"),
        "{text}"
    );
}

#[test]
fn attributes_read_without_a_call_are_used_definitions() {
    let (_dir, service) = open("attribute_reads", "");
    // `fields.DecimalField`, `fields.CASCADE` (a class attribute's value),
    // `isinstance(value, fields.ForeignKey)` and `fields.LIMIT` name what
    // the module holds; `partial(self.clean_field, ...)` (a call of it,
    // so first in lines 11-15) and the property
    // `self.errors` are Form's members the file uses. `self.label` (an
    // attribute's value) and `self.own` (Shape's own) are not: Form lists
    // label among its other members only.
    assert_eq!(
        section(&service, "app.py", &ReadOptions::default()),
        r#"[Cross-File Context]
Definitions these lines use, most relevant first:
class Form  # pkg/forms.py:1-12
    def clean_field(self, name)  # pkg/forms.py:4
    @property def errors(self)  # pkg/forms.py:8
    label = "form"  # pkg/forms.py:2
    def is_valid(self)  # pkg/forms.py:11
class DecimalField  # pkg/fields.py:13-14
def CASCADE(collector, field)  # pkg/fields.py:4-5
class ForeignKey  # pkg/fields.py:8-10
    def __init__(self, to)  # pkg/fields.py:9
    self.to = to  # pkg/fields.py:10
LIMIT = 10  # pkg/fields.py:1

---

"#
    );
    assert_eq!(
        section(&service, "app.py", &lines(11, 15)),
        r#"[Cross-File Context]
Definitions these lines use, most relevant first:
def clean_field(self, name)  # Form pkg/forms.py:4-5
class ForeignKey  # pkg/fields.py:8-10
    def __init__(self, to)  # pkg/fields.py:9
    self.to = to  # pkg/fields.py:10
@property def errors(self)  # Form pkg/forms.py:8-9

---

"#
    );
    // A parameter named like the module hides it, and an unknown
    // receiver names nothing: no context.
    assert_eq!(
        section(&service, "app.py", &lines(21, 22)),
        "[Cross-File Context]\n\n---\n\n"
    );
    // A local bound to `Form()`: its property `errors` is used; `label`
    // (an attribute's value) is only among Form's other members.
    assert_eq!(
        section(&service, "app.py", &lines(25, 27)),
        r#"[Cross-File Context]
Definitions these lines use, most relevant first:
class Form  # pkg/forms.py:1-12
    @property def errors(self)  # pkg/forms.py:8
    label = "form"  # pkg/forms.py:2
    def clean_field(self, name)  # pkg/forms.py:4
    def is_valid(self)  # pkg/forms.py:11

---

"#
    );
    // Two links, from self (lines 34-36) and from a parameter of a known
    // class (lines 44-46): a property of what the attribute holds.
    for (first, last) in [(34, 36), (44, 46)] {
        assert_eq!(
            section(&service, "app.py", &lines(first, last)),
            r#"[Cross-File Context]
Definitions these lines use, most relevant first:
@property def errors(self)  # Form pkg/forms.py:8-9

---

"#,
            "lines {first}-{last}"
        );
    }
    // One link from a call: a property of what `Form()` gives.
    assert_eq!(
        section(&service, "app.py", &lines(39, 41)),
        r#"[Cross-File Context]
Definitions these lines use, most relevant first:
class Form  # pkg/forms.py:1-12
    @property def errors(self)  # pkg/forms.py:8
    label = "form"  # pkg/forms.py:2
    def clean_field(self, name)  # pkg/forms.py:4
    def is_valid(self)  # pkg/forms.py:11

---

"#
    );
}

#[test]
fn methods_called_on_a_value_of_unknown_class_are_guessed_by_a_name_few_define() {
    let (_dir, service) = open("context_guesses", "");
    let handle = lines(7, 24);
    // `request` and `factory()` have no known class. is_secure, get_host
    // and finish are each one project method (the test module's
    // FakeJob.finish and the tools sub-project's Session.is_secure do not
    // count): guessed, and marked. Not guessed:
    // get (a builtin type's member), render (three classes), headers (a
    // method of one class, set on self in another), request.session (no
    // such member), the two-letter ab, self.is_secure(), json.loads(),
    // and factory().state, only read.
    assert_eq!(
        section(&service, "web/middleware.py", &handle),
        r#"[Cross-File Context]
Guessed by name only (the value's class is not known; the project's only definitions of it, overrides aside):
def is_secure(self)  # Request web/request.py:2-3
def get_host(self)  # Request web/request.py:5-6
def finish(self)  # Job web/request.py:17-18

---

"#
    );
    // Read whole, the file also calls get_host and finish for certain,
    // and uses Request itself: is_secure is still only a guess, and says
    // so apart from Request's members; scheme, only read, is no guess.
    assert_eq!(
        section(&service, "web/middleware.py", &ReadOptions::default()),
        r#"[Cross-File Context]
Definitions these lines use, most relevant first:
class Request  # web/request.py:1-13
    def get_host(self)  # web/request.py:5
    def is_secure(self)  # web/request.py:2
    def get(self, key)  # web/request.py:8
    @property def scheme(self)  # web/request.py:12
def make()  # web/request.py:25-26
def finish(self)  # Job web/request.py:17-18
Guessed by name only (the value's class is not known; the project's only definitions of it, overrides aside):
def is_secure(self)  # Request web/request.py:2-3
def run_query(self, query)  # Compiler web/compilers.py:2-3

---

"#
    );
    // Three definitions of run_query, two overriding the first: the one
    // they override is the guess, whatever subclass the value is.
    assert_eq!(
        section(&service, "web/middleware.py", &lines(38, 41)),
        r#"[Cross-File Context]
Guessed by name only (the value's class is not known; the project's only definitions of it, overrides aside):
def run_query(self, query)  # Compiler web/compilers.py:2-3

---

"#
    );
}

#[test]
fn a_name_its_module_binds_under_a_condition_shows_the_projects_definitions_marked() {
    let (_dir, service) = open("context_conditional", "");
    // compat.py binds Encoder by `from fastjson import Encoder`, or, if
    // that fails, by its own class: which one runs is not known, so the
    // class comes under its own heading, never as a certain definition.
    assert_eq!(
        section(&service, "app.py", &lines(8, 9)),
        r#"[Cross-File Context]
Bound conditionally (a `try`/`except` or an `if` picks one when the program runs; the project's definitions of it):
class Encoder  # compat.py:4-8
    """Pure-Python fallback."""
    def encode(self, value)  # compat.py:7

---

"#
    );
    // dumps is bound once: certain. Lines that do not use Encoder get
    // nothing of it, and neither does an attribute of the same name.
    assert_eq!(
        section(&service, "app.py", &lines(4, 5)),
        r#"[Cross-File Context]
Definitions these lines use, most relevant first:
def dumps(value)  # compat.py:11-12

---

"#
    );
    assert_eq!(
        section(&service, "app.py", &lines(12, 13)),
        "[Cross-File Context]\n\n---\n\n"
    );
    // The reader's own `try: from fast import parse` / `except
    // ImportError: from slow import parse`: both definitions, marked.
    assert_eq!(
        section(&service, "app.py", &lines(22, 23)),
        r#"[Cross-File Context]
Bound conditionally (a `try`/`except` or an `if` picks one when the program runs; the project's definitions of it):
def parse(text)  # fast.py:1-2
def parse(text)  # slow.py:1-2

---

"#
    );
}

#[test]
fn a_larger_names_limit_names_every_used_definition_and_upgrades_nothing_past_the_context_limit() {
    // The hook's read: names within 120 tokens, the rest within the
    // configured 45. Everything used is named at the minimal tier; no
    // signature is shown, for that would pass 45.
    let (_dir, service) = open("context_skeletons", "context_token_limit: 45\n");
    let hook = ReadOptions {
        names_limit: Some(120),
        ..ReadOptions::default()
    };
    let text = section(&service, "app.py", &hook);
    assert_eq!(
        text,
        "[Cross-File Context]
Also used (name, kind, location):
User class shop/user.py:4
    Model.save method shop/base.py:9
    Model.create method shop/base.py:16
    Model.delete method shop/base.py:12
slugify function shop/helpers.py:4

---

"
    );
    assert!(count_tokens(&text) <= 120);
    // A names limit below the context limit changes nothing.
    let (_dir, service) = open("context_skeletons", "");
    let lower = ReadOptions {
        names_limit: Some(10),
        ..ReadOptions::default()
    };
    assert_eq!(
        section(&service, "app.py", &lower),
        section(&service, "app.py", &ReadOptions::default())
    );
}
