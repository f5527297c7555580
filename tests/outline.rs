//! File outlines and one definition's source:
//! the service, the MCP tools `get_file_outline` and `get_symbol`, and the
//! CLI commands `outline` and `show`.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::mcp_client::Client;
use serde_json::json;
use xfile::service::calls::SymbolError;
use xfile::service::context::count_tokens;

const FIXTURE: &str = "nested_definitions";

#[test]
fn outline_nests_members_under_their_class_with_lines_and_docstrings() {
    let service = common::open(FIXTURE);
    let outline = service.outline("shop/models.py").unwrap();
    // Decorators before the header, async defs, a nested class with its
    // own members, instance attributes under their class; a name bound
    // twice is listed twice, the first binding marked. Functions local to
    // a function (retry's wrap and inner) are not recorded by the facts.
    assert_eq!(
        outline.to_text(),
        r#"shop/models.py (16 definitions)
RATE = 3  :5
def retry(times)  :8-21  # Retry a call a few times.
class Item  :24-54  # An item for sale.
  currency = "EUR"  :27
  def __init__(self, name, price)  :29-31
  self.name = name  :30
  self.price = price  :31
  @property def label(self)  :34-36  # The label shown in the shop.  (redefined at :39)
  @label.setter def label(self, value)  :39-40
  class Meta  :42-46
    ordering = ["name"]  :43
    def describe(self)  :45-46
  @staticmethod @retry(times=3,) async def fetch(item_id: int) -> "Item"  :52-54  # Fetch an item.
async def load_all(ids)  :57-59  # Load every item.
def total(items)  :62-63  (redefined at :66)
def total(items, discount=0)  :66-68  # Total after a discount.
"#
    );
    let json = serde_json::to_value(&outline).unwrap();
    let item = &json["definitions"][2];
    assert_eq!(item["qualname"], "Item");
    assert_eq!(item["kind"], "class");
    let meta = &item["members"][6];
    assert_eq!(meta["qualname"], "Item.Meta");
    assert_eq!(meta["members"][1]["qualname"], "Item.Meta.describe");
    assert_eq!(meta["members"][1]["kind"], "method");
    let fetch = &item["members"][7];
    assert_eq!(
        fetch["decorators"],
        json!(["staticmethod", "retry(times=3,)"])
    );
    assert_eq!(fetch["docstring"], "Fetch an item.");
    assert_eq!(
        (&fetch["start_line"], &fetch["end_line"]),
        (&json!(52), &json!(54))
    );
    assert_eq!(json["definitions"][3]["kind"], "async_function");
    assert_eq!(json["definitions"][4]["redefined_at"], 66);
    assert!(json["definitions"][5].get("redefined_at").is_none());
}

#[test]
fn outline_of_a_file_that_does_not_parse_says_so() {
    let dir = common::copy_fixture(FIXTURE);
    std::fs::write(dir.path().join("shop/broken.py"), "def broken(:\n").unwrap();
    let service = xfile::service::Service::open(dir.path()).unwrap();
    let text = service.outline("shop/broken.py").unwrap().to_text();
    assert!(
        text.starts_with("shop/broken.py: does not parse (line 1:"),
        "{text}"
    );
    assert!(service.outline("shop/missing.py").is_err());
}

#[test]
fn show_finds_a_symbol_by_path_dotted_or_unique_name() {
    let service = common::open(FIXTURE);
    let fetch = service.symbol_source("shop/models.py::Item.fetch").unwrap();
    // Decorators (one spanning lines) and the docstring are part of it.
    assert_eq!(
        fetch.to_text(),
        r#"shop/models.py::Item.fetch  shop/models.py:48-54
    @staticmethod
    @retry(
        times=3,
    )
    async def fetch(item_id: int) -> "Item":
        """Fetch an item."""
        return Item(str(item_id), 0)
"#
    );
    let dotted = service.symbol_source("shop.models.Item.fetch").unwrap();
    assert_eq!(dotted.to_text(), fetch.to_text());
    // Unique in the project, bare or qualified.
    assert_eq!(
        service.symbol_source("load_all").unwrap().symbol,
        "shop/models.py::load_all"
    );
    let describe = service.symbol_source("Meta.describe").unwrap();
    assert_eq!(describe.symbol, "shop/models.py::Item.Meta.describe");
    assert_eq!((describe.start_line, describe.end_line), (45, 46));
    // The last binding is the one shown; the earlier ones are named.
    let label = service.symbol_source("Item.label").unwrap();
    assert_eq!(label.earlier_bindings, [34]);
    assert_eq!(
        label.to_text(),
        "shop/models.py::Item.label  shop/models.py:38-40  (replaces the binding at :34)\n    @label.setter\n    def label(self, value):\n        self.name = value\n"
    );
}

#[test]
fn show_lists_candidates_for_an_ambiguous_name_and_rejects_unknown_ones() {
    let service = common::open(FIXTURE);
    let error = service.symbol_source("total").unwrap_err();
    assert!(matches!(error, SymbolError::Ambiguous { total: 2, .. }));
    assert_eq!(error.code(), "ambiguous_symbol");
    assert_eq!(
        error.to_string(),
        "total names 2 definitions: shop/models.py::total, shop/orders.py::Order.total; give one of them as path::Qualified.name"
    );
    let error = service.symbol_source("no_such_function").unwrap_err();
    assert_eq!(error.code(), "symbol_not_found");
    let error = service.symbol_source("shop/models.py::Nope").unwrap_err();
    assert_eq!(error.code(), "symbol_not_found");
    let error = service.symbol_source("shop.models").unwrap_err();
    assert!(matches!(error, SymbolError::Module(_)), "{error}");
    let error = service.symbol_source("/etc/hostname::f").unwrap_err();
    assert!(matches!(error, SymbolError::Path(_)), "{error}");
}

/// A copy of the fixture with a 200-token answer budget, a function of 120
/// lines and a module of 30 classes with 5 methods each.
fn small_budget_project() -> tempfile::TempDir {
    let dir = common::copy_fixture(FIXTURE);
    std::fs::write(
        dir.path().join(".cross_file_context_links.yml"),
        "answer_token_limit: 200\n",
    )
    .unwrap();
    let mut long = String::from("def long_function(value):\n    \"\"\"Adds up.\"\"\"\n");
    for i in 0..120 {
        long.push_str(&format!("    value = value + {i}\n"));
    }
    long.push_str("    return value\n");
    std::fs::write(dir.path().join("shop/long.py"), long).unwrap();
    let mut classes = String::from("def first():\n    pass\n\n\n");
    for c in 0..30 {
        classes.push_str(&format!("class Model{c}:\n"));
        for m in 0..5 {
            classes.push_str(&format!("    def method_{m}(self):\n        pass\n\n"));
        }
        classes.push('\n');
    }
    std::fs::write(dir.path().join("shop/many.py"), classes).unwrap();
    dir
}

#[test]
fn a_long_definition_is_cut_at_a_line_within_the_answer_budget() {
    let dir = small_budget_project();
    let service = xfile::service::Service::open(dir.path()).unwrap();
    let source = service.symbol_source("long_function").unwrap();
    let text = source.to_text();
    assert!(count_tokens(&text) <= 200, "{text}");
    assert!(text.starts_with("shop/long.py::long_function  shop/long.py:1-123\ndef long_function(value):\n    \"\"\"Adds up.\"\"\"\n"), "{text}");
    let shown = source.source.lines().count();
    assert!(shown > 10, "{text}");
    let note = source.truncated.as_deref().unwrap();
    assert_eq!(
        note,
        format!(
            "lines 1-{shown} of 1-123 shown, cut by the 200-token answer budget; the rest is at shop/long.py:{}",
            shown + 1
        )
    );
    assert!(text.ends_with(&format!("... {note}\n")));
    // Whole lines, exactly as in the file.
    let file = std::fs::read_to_string(dir.path().join("shop/long.py")).unwrap();
    assert!(file.starts_with(&source.source));
    assert!(source.source.ends_with('\n'));
}

#[test]
fn a_long_outline_keeps_the_top_level_and_the_members_of_the_classes_that_fit() {
    let dir = small_budget_project();
    let service = xfile::service::Service::open(dir.path()).unwrap();
    let mut outline = service.outline("shop/many.py").unwrap();
    assert!(count_tokens(&outline.to_text()) > 200);
    outline.fit(150, |o| o.to_text());
    let text = outline.to_text();
    assert!(count_tokens(&text) <= 150, "{text}");
    assert!(
        text.starts_with("shop/many.py (181 definitions)\ndef first()  :1-2\n"),
        "{text}"
    );
    let note = outline.truncated.as_deref().unwrap();
    assert!(
        note.starts_with("cut by the 150-token answer budget: the definitions from line "),
        "{note}"
    );

    // With room for every class line, the members of the first classes.
    let mut outline = service.outline("shop/many.py").unwrap();
    outline.fit(800, |o| o.to_text());
    let text = outline.to_text();
    assert!(count_tokens(&text) <= 800, "{text}");
    assert_eq!(outline.definitions.len(), 31, "{text}");
    assert!(text.contains("class Model0  :5-19\n  def method_0(self)  :6-7\n"));
    assert!(text.contains("class Model29  :"), "{text}");
    assert!(text.contains("(5 members left out)"), "{text}");
    // `first` and the classes whose members are listed.
    let expanded = outline
        .definitions
        .iter()
        .take_while(|e| e.members_left_out == 0)
        .count()
        - 1;
    assert!((2..30).contains(&expanded), "{text}");
    let note = outline.truncated.as_deref().unwrap();
    assert!(
        note.starts_with(&format!(
            "cut by the 800-token answer budget: the members of Model{}, Model{}",
            expanded,
            expanded + 1
        )),
        "{note}"
    );
    assert!(
        note.ends_with("more are left out; get_symbol on a class shows its source"),
        "{note}"
    );
}

#[test]
fn mcp_tools_answer_outlines_and_sources_within_the_budget() {
    let dir = small_budget_project();
    let mut client = Client::start(dir.path());
    let (is_error, text) = client.call("get_file_outline", json!({"file_path": "shop/many.py"}));
    assert!(!is_error, "{text}");
    assert!(count_tokens(&text) <= 200, "{text}");
    assert!(text.contains("get_symbol on a class"), "{text}");
    let (is_error, text) = client.call(
        "get_file_outline",
        json!({"file_path": "shop/many.py", "format": "json"}),
    );
    assert!(!is_error, "{text}");
    assert!(count_tokens(&text) <= 200, "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["file"], "shop/many.py");
    assert!(json["truncated"].is_string(), "{json}");

    let (is_error, text) = client.call("get_symbol", json!({"name": "long_function"}));
    assert!(!is_error, "{text}");
    assert!(count_tokens(&text) <= 200, "{text}");
    assert!(text.contains("the rest is at shop/long.py:"), "{text}");
    let (is_error, text) = client.call("get_symbol", json!({"name": "shop.models.Item.label"}));
    assert!(!is_error, "{text}");
    assert!(text.starts_with("shop/models.py::Item.label  shop/models.py:38-40"));

    // Errors are tool errors with a code, a message and a suggestion.
    for (name, code) in [
        ("total", "ambiguous_symbol"),
        ("no_such_function", "symbol_not_found"),
        ("/etc/hostname::f", "outside_root"),
    ] {
        let (is_error, text) = client.call("get_symbol", json!({"name": name}));
        assert!(is_error, "{name}: {text}");
        let body: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["code"], code, "{text}");
        assert!(body["suggestion"].as_str().is_some_and(|s| !s.is_empty()));
    }
    let (is_error, text) = client.call("get_symbol", json!({"name": "total"}));
    assert!(
        is_error && text.contains("shop/orders.py::Order.total"),
        "{text}"
    );
    let (is_error, text) = client.call("get_file_outline", json!({"file_path": "shop/nope.py"}));
    assert!(is_error, "{text}");
    assert!(text.contains("\"code\":\"file_not_found\""), "{text}");
}

fn xfile(root: &Path, args: &[&str]) -> (i32, String) {
    // No warm-start cache: its notices (a cache written by another build)
    // would join the output compared here, and the fixture stays as it is.
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .arg("--root")
        .arg(root)
        .arg("--no-cache")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code().unwrap_or(-1), stdout + &stderr)
}

#[test]
fn cli_outline_and_show_print_text_or_json() {
    let root = common::fixture(FIXTURE);
    let (status, text) = xfile(&root, &["outline", "shop/orders.py"]);
    assert_eq!(status, 0, "{text}");
    assert_eq!(
        text,
        "shop/orders.py (4 definitions)\nclass Order  :4-9\n  def __init__(self, items: list[Item])  :5-6\n  self.items = items  :6\n  def total(self)  :8-9\n"
    );
    let (status, text) = xfile(&root, &["outline", "shop/orders.py", "--json"]);
    assert_eq!(status, 0, "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        json["definitions"][0]["members"][2]["qualname"],
        "Order.total"
    );

    let (status, text) = xfile(&root, &["show", "shop.orders.Order.total"]);
    assert_eq!(status, 0, "{text}");
    assert_eq!(
        text,
        "shop/orders.py::Order.total  shop/orders.py:8-9\n    def total(self):\n        return total(self.items)\n"
    );
    let (status, text) = xfile(&root, &["show", "Order.total", "--json"]);
    assert_eq!(status, 0, "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["symbol"], "shop/orders.py::Order.total");
    assert_eq!(json["kind"], "method");
    assert_eq!(
        (json["start_line"].as_u64(), json["end_line"].as_u64()),
        (Some(8), Some(9))
    );

    // User errors exit with status 2 and say what to do.
    let (status, text) = xfile(&root, &["show", "total"]);
    assert_eq!(status, 2, "{text}");
    assert!(
        text.contains("give one of them as path::Qualified.name"),
        "{text}"
    );
    let (status, text) = xfile(&root, &["outline", "shop/nope.py"]);
    assert_eq!(status, 2, "{text}");
}
