//! `xfile hook` after an Edit, MultiEdit or Write: what the edit may
//! break, from the shared service that saw the file before it, in exact
//! text; nothing for a compatible change. The project is
//! `tests/fixtures/edit_breaks`, a copy per case with a service of its own.

use crate::common;
use crate::hook::{assert_quiet, context, hook, read_call};

use std::path::Path;

use common::runtime::Runtime;
use serde_json::json;

/// An `@overload`ed function keeps its name several times: the one that
/// runs, the last, is compared, so an edit elsewhere says nothing; and a
/// comment inside a parameter list hides no parameter.
#[test]
fn overloads_and_comments_in_parameters_are_read_as_python_does() {
    let said = after_edit(
        "Edit",
        "shop/pricing.py",
        "def discount(amount, percent):",
        "from typing import overload\n\n\n@overload\ndef discount(amount: int, percent: int) -> int: ...\n\n\n\
         @overload\ndef discount(amount: float, percent: float) -> float: ...\n\n\ndef discount(amount, percent):",
    );
    assert_eq!(said, "");
    let said = after_edit(
        "Edit",
        "shop/pricing.py",
        "def net_price(amount, rate=0.2):",
        "def net_price(\n    amount,  # before tax\n    rate,  # no default now\n):",
    );
    assert_eq!(
        said,
        "[xfile: what the edit of shop/pricing.py may break]\n\
         net_price changed at line 4: `def net_price(amount, rate,)` (was `def net_price(amount, rate=0.2)`)\n  \
         shop/orders.py:12 in checkout: does not pass `rate`"
    );
}

/// An edit that leaves the file unparsable says so, and nothing of its
/// definitions; the edit that mends it is compared with the file before.
#[test]
fn an_edit_that_breaks_the_syntax_says_so_and_the_mending_edit_is_compared_with_before() {
    let project = common::copy_fixture("edit_breaks");
    let runtime = Runtime::new();
    let path = project.path().join("shop/pricing.py");
    assert_quiet(&hook(&edit_call("Edit", &path, "", ""), &runtime), "before");
    let text = std::fs::read_to_string(&path).expect("read");
    let broken = text.replace(
        "def net_price(amount, rate=0.2):",
        "def net_price(amount, rate:",
    );
    std::fs::write(&path, &broken).expect("write");
    let said = context(&hook(&edit_call("Edit", &path, "", ""), &runtime));
    assert!(
        said.starts_with(
            "[xfile: what the edit of shop/pricing.py may break]\nshop/pricing.py does not parse (line "
        ),
        "{said}"
    );
    assert!(!said.contains("removed"), "{said}");
    let mended = text.replace(
        "def net_price(amount, rate=0.2):",
        "def net_price(amount, rate):",
    );
    std::fs::write(&path, mended).expect("write");
    let said = context(&hook(&edit_call("Edit", &path, "", ""), &runtime));
    assert!(
        said.ends_with("shop/orders.py:12 in checkout: does not pass `rate`"),
        "{said}"
    );
    runtime.kill_services();
}

/// The documented input of an edit of `file` by `tool`.
pub(crate) fn edit_call(tool: &str, file: &Path, old: &str, new: &str) -> String {
    let input = match tool {
        "Write" => json!({"file_path": file, "content": new}),
        "MultiEdit" => {
            json!({"file_path": file, "edits": [{"old_string": old, "new_string": new}]})
        }
        _ => json!({"file_path": file, "old_string": old, "new_string": new}),
    };
    json!({
        "session_id": "edit-session",
        "cwd": file.parent(),
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_response": {"filePath": file},
    })
    .to_string()
}

/// Starts the project's service (the hook's first call is answered once
/// the index is built, and says nothing: nothing was edited), replaces
/// `old` by `new` in `file` as `tool` would, and returns what the hook
/// then says; empty when it prints nothing.
fn after_edit(tool: &str, file: &str, old: &str, new: &str) -> String {
    let project = common::copy_fixture("edit_breaks");
    let runtime = Runtime::new();
    let path = project.path().join(file);
    assert_quiet(
        &hook(&edit_call(tool, &path, old, old), &runtime),
        "before the edit",
    );
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(old), "{old} in {file}");
    std::fs::write(&path, text.replacen(old, new, 1)).expect("write");
    let output = hook(&edit_call(tool, &path, old, new), &runtime);
    let said = match output.stdout.is_empty() {
        true => {
            assert_quiet(&output, "no break");
            String::new()
        }
        false => context(&output),
    };
    // Asked once, an edit is not told again.
    assert_quiet(
        &hook(&edit_call(tool, &path, old, new), &runtime),
        "the same edit asked about again",
    );
    runtime.kill_services();
    said
}

#[test]
fn a_compatible_change_says_nothing() {
    let said = after_edit(
        "Edit",
        "shop/pricing.py",
        "def net_price(amount, rate=0.2):",
        "def net_price(amount, rate=0.2, *, currency=\"EUR\"):",
    );
    assert_eq!(said, "");
    let body = after_edit(
        "Edit",
        "shop/pricing.py",
        "return round(value, 2)",
        "return round(value + 0.0, 2)",
    );
    assert_eq!(body, "");
}

#[test]
fn a_removed_default_names_the_calls_that_relied_on_it() {
    let said = after_edit(
        "Edit",
        "shop/pricing.py",
        "def net_price(amount, rate=0.2):",
        "def net_price(amount, rate):",
    );
    // report.py passes `rate` by keyword: it still fits.
    assert_eq!(
        said,
        "[xfile: what the edit of shop/pricing.py may break]\n\
         net_price changed at line 4: `def net_price(amount, rate)` (was `def net_price(amount, rate=0.2)`)\n  \
         shop/orders.py:12 in checkout: does not pass `rate`"
    );
}

#[test]
fn a_renamed_keyword_names_the_call_and_the_override_left_behind() {
    let said = after_edit(
        "MultiEdit",
        "shop/pricing.py",
        "    def add(self, item, quantity=1):\n        self.items.append((item, quantity))",
        "    def add(self, item, count=1):\n        self.items.append((item, count))",
    );
    assert_eq!(
        said,
        "[xfile: what the edit of shop/pricing.py may break]\n\
         Basket.add changed at line 22: `def add(self, item, count=1)` (was `def add(self, item, quantity=1)`)\n  \
         shop/orders.py:11 in checkout: passes `quantity=`, no such parameter\n  \
         shop/orders.py:5 GiftBasket.add overrides it, not taking all it now takes: `def add(self, item, quantity=1)`"
    );
}

#[test]
fn an_init_change_reaches_the_constructor_calls_of_the_class_and_its_subclasses() {
    let said = after_edit(
        "Edit",
        "shop/pricing.py",
        "def __init__(self, owner, currency=\"EUR\"):",
        "def __init__(self, owner, currency, vat):",
    );
    assert_eq!(
        said,
        "[xfile: what the edit of shop/pricing.py may break]\n\
         Basket.__init__ changed at line 17: `def __init__(self, owner, currency, vat)` (was `def __init__(self, owner, currency=\"EUR\")`)\n  \
         shop/orders.py:10 in checkout: does not pass `currency`\n  \
         shop/orders.py:18 in gift: does not pass `vat`"
    );
}

#[test]
fn a_removed_function_names_its_importers_and_callers() {
    let said = after_edit(
        "Edit",
        "shop/pricing.py",
        "def round_cents(value):\n    return round(value, 2)\n",
        "",
    );
    assert_eq!(
        said,
        "[xfile: what the edit of shop/pricing.py may break]\n\
         round_cents removed; still used:\n  \
         shop/orders.py:1 imports it\n  \
         shop/orders.py:14 in checkout calls it"
    );
}

#[test]
fn a_renamed_function_is_named_with_its_new_name() {
    let said = after_edit(
        "Write",
        "shop/pricing.py",
        "def discount(amount, percent):",
        "def apply_discount(amount, percent):",
    );
    assert_eq!(
        said,
        "[xfile: what the edit of shop/pricing.py may break]\n\
         discount renamed to apply_discount; still used as before:\n  \
         shop/orders.py:1 imports it\n  \
         shop/orders.py:13 in checkout calls it"
    );
}

#[test]
fn a_name_the_file_no_longer_imports_is_named_where_it_is_used() {
    let said = after_edit(
        "Edit",
        "shop/orders.py",
        "from shop.pricing import Basket, discount, net_price, round_cents",
        "from shop.pricing import Basket, discount, net_price",
    );
    assert_eq!(
        said,
        "[xfile: what the edit of shop/orders.py may break]\n\
         shop/orders.py uses names it no longer defines or imports:\n  \
         `round_cents` at line 14"
    );
}

#[test]
fn a_new_file_written_says_nothing() {
    let project = common::copy_fixture("edit_breaks");
    let runtime = Runtime::new();
    let orders = project.path().join("shop/orders.py");
    let read = context(&hook(&read_call(&orders, None, None), &runtime));
    assert!(read.contains("def discount(amount, percent)"), "{read}");
    let new = project.path().join("shop/coupons.py");
    let text = "from shop.pricing import discount\n\n\ndef coupon(total):\n    return discount(total, 5)\n";
    std::fs::write(&new, text).expect("write");
    assert_quiet(
        &hook(&edit_call("Write", &new, "", text), &runtime),
        "a new file",
    );
    runtime.kill_services();
}

/// A constructor call runs `__init__`: the callers of `Basket.__init__`
/// are the calls of `Basket` and of `GiftBasket`, which inherits it.
#[test]
fn the_callers_of_an_init_are_the_constructor_calls() {
    use xfile::service::calls::Direction;
    let service = common::open("edit_breaks");
    let graph = service
        .call_graph(
            "shop/pricing.py::Basket.__init__",
            Direction::Callers,
            1,
            100,
        )
        .expect("a symbol");
    let calls: Vec<String> = graph
        .calls
        .iter()
        .map(|c| format!("{}:{} {} -> {}", c.file, c.line, c.caller, c.callee))
        .collect();
    assert_eq!(
        calls,
        [
            "shop/orders.py:10 shop/orders.py::checkout -> shop/pricing.py::Basket",
            "shop/orders.py:18 shop/orders.py::gift -> shop/orders.py::GiftBasket",
        ]
    );
}
