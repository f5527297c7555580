//! `TestCovers`, the second worked example of docs/rule-authoring.md: a
//! relation added by a rules file alone (rules/test_covers.dl), over the
//! `TestModule` facts (default patterns or pytest settings) and the import
//! and call relations.

use crate::common;

fn explain(pattern: &str) -> String {
    let service = common::open("test_covers");
    xfile::service::explain::explain(service.engine(), pattern)
        .expect("valid pattern")
        .to_text()
}

#[test]
fn test_modules_cover_what_they_import_and_call_but_not_each_other() {
    let service = common::open("test_covers");
    let result = service.query("TestCovers(_, _)").expect("known relation");
    assert_eq!(result.args, ["test_file", "source_file"]);
    assert_eq!(
        serde_json::json!(result.tuples),
        serde_json::json!([
            // helpers.py is under tests/, so a test module too.
            ["tests/helpers.py", "shop/orders.py"],
            ["tests/test_orders.py", "shop/api.py"],
            // place() is imported from shop/api.py, defined in shop/orders.py.
            ["tests/test_orders.py", "shop/orders.py"],
            ["tests/test_orders.py", "shop/pricing.py"],
        ])
    );
    // Found file by file, exactly as one program over everything finds them.
    common::assert_stages_match_reference(service.engine());
    // And in the export, by itself.
    let export = serde_json::to_value(service.export()).unwrap();
    assert_eq!(
        export["derived"]["TestCovers"]["tuples"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
}

#[test]
fn a_covering_import_is_explained_down_to_the_test_module_fact() {
    assert_eq!(
        explain(r#"TestCovers("tests/test_orders.py", "shop/api.py")"#),
        r#"
TestCovers(tests/test_orders.py, shop/api.py)
  [rule rules/test_covers.dl:14] TestCovers(t, m) <- Imports(t, _, m), TestModule(t), !TestModule(m), (!m.is_marker());
  Imports(tests/test_orders.py, 2:5, shop/api.py)
    [rule rules/relationships.dl:26] Imports(f, s, m) <- ImportStmt(f, s, m);
    ImportStmt(tests/test_orders.py, 2:5, shop/api.py)
      [base tests/test_orders.py:2:5] from shop.api import place
  TestModule(tests/test_orders.py)
    [base tests/test_orders.py]
  !TestModule(shop/api.py)
    [absent]

"#
        .trim_start()
    );
}

#[test]
fn a_call_into_a_test_helper_is_a_near_miss_that_names_the_test_module() {
    let text = explain(r#"TestCovers("tests/test_orders.py", "tests/helpers.py")"#);
    assert!(text.starts_with(
        "TestCovers(\"tests/test_orders.py\", \"tests/helpers.py\") does not hold.\n"
    ));
    // make_order() resolves through tests/__init__.py to tests/helpers.py,
    // which is a test module itself.
    assert!(
        text.contains(
            "    holds: Calls(tests/test_orders.py, 11:30, tests/helpers.py, make_order)\n    holds: TestModule(tests/test_orders.py)\n    fails: !TestModule(tests/helpers.py): the rule requires this tuple to be absent, and it holds\n"
        ),
        "{text}"
    );
}
