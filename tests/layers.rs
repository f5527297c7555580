//! `LayerViolation` (rules/layers.dl) on a fixture with three configured
//! layers, ui above domain above infra, and one invalid `layers` entry.

use crate::common;

use common::open;
use xfile::engine::datalog::{RELATIONS, RelationKind};

#[test]
fn imports_from_a_lower_layer_into_a_higher_one_are_violations() {
    let service = open("layer_violations");
    let result = service
        .query("LayerViolation(_, _, _, _, _)")
        .expect("known relation");
    assert_eq!(
        result.args,
        ["file", "site", "imported", "file_layer", "imported_layer"]
    );
    // ui -> domain (views.py) and a same-layer import (pricing.py) are fine;
    // scripts/run.py is in no layer.
    assert_eq!(
        serde_json::json!(result.tuples),
        serde_json::json!([
            serde_json::json!([
                "shop/domain/orders.py",
                "2:5",
                "shop/ui/views.py",
                "domain",
                "ui"
            ]),
            serde_json::json!([
                "shop/infra/db.py",
                "2:11",
                "shop/domain/orders.py",
                "infra",
                "domain"
            ]),
        ])
    );
    // Found file by file, exactly as one program over everything finds them.
    common::assert_stages_match_reference(service.engine());
}

#[test]
fn the_invalid_entry_is_a_notice_and_the_others_apply() {
    let service = open("layer_violations");
    let messages: Vec<String> = service
        .notices(None)
        .into_iter()
        .map(|n| n.message)
        .collect();
    assert_eq!(
        messages,
        [
            ".cross_file_context_links.yml: `layers` entry 4 must be a list of a layer name and at least one glob; that entry is ignored"
        ]
    );
}

#[test]
fn a_violation_is_explained_down_to_the_import_line_and_the_configuration() {
    let text = open("layer_violations")
        .explain(r#"LayerViolation("shop/infra/db.py", _, _, _, _)"#)
        .expect("valid")
        .to_text();
    assert_eq!(
        text,
        r#"LayerViolation(shop/infra/db.py, 2:11, shop/domain/orders.py, infra, domain)
  [rule rules/layers.dl:16] LayerViolation(f, s, m, fl, ml) <- Imports(f, s, m), InLayer(f, fl), InLayer(m, ml), LayerAbove(ml, fl);
  Imports(shop/infra/db.py, 2:11, shop/domain/orders.py)
    [rule rules/relationships.dl:26] Imports(f, s, m) <- ImportStmt(f, s, m);
    ImportStmt(shop/infra/db.py, 2:11, shop/domain/orders.py)
      [base shop/infra/db.py:2:11] import shop.domain.orders
  InLayer(shop/infra/db.py, infra)
    [base .cross_file_context_links.yml]
  InLayer(shop/domain/orders.py, domain)
    [base .cross_file_context_links.yml]
  LayerAbove(domain, infra)
    [base .cross_file_context_links.yml]

"#
    );
}

#[test]
fn an_import_downwards_is_no_violation_and_explain_says_which_premise_fails() {
    let text = open("layer_violations")
        .explain(r#"LayerViolation("shop/ui/views.py", _, _, _, _)"#)
        .expect("valid")
        .to_text();
    assert_eq!(
        text,
        r#"LayerViolation("shop/ui/views.py", _, _, _, _) does not hold.
  [rule rules/layers.dl:16] LayerViolation(f, s, m, fl, ml) <- Imports(f, s, m), InLayer(f, fl), InLayer(m, ml), LayerAbove(ml, fl);
    with f = shop/ui/views.py, m = shop/domain/orders.py, fl = ui, ml = domain
    holds: Imports(shop/ui/views.py, 1:5, shop/domain/orders.py)
    holds: InLayer(shop/ui/views.py, ui)
    holds: InLayer(shop/domain/orders.py, domain)
    fails: LayerAbove(domain, ui): no such tuple; these differ in one argument
      near: LayerAbove(domain, infra)
"#
    );
    let outside = open("layer_violations")
        .explain(r#"LayerViolation("scripts/run.py", _, _, _, _)"#)
        .expect("valid")
        .to_text();
    assert!(
        outside.ends_with("    fails: InLayer(scripts/run.py, _): no such tuple\n"),
        "{outside}"
    );
}

#[test]
fn violations_appear_in_the_export_derived_section() {
    let export = serde_json::to_value(open("layer_violations").export()).expect("json");
    assert_eq!(
        export["derived"]["LayerViolation"]["tuples"],
        serde_json::json!([
            [
                "shop/domain/orders.py",
                "2:5",
                "shop/ui/views.py",
                "domain",
                "ui"
            ],
            [
                "shop/infra/db.py",
                "2:11",
                "shop/domain/orders.py",
                "infra",
                "domain"
            ]
        ])
    );
    // Every @output relation the export does not show in its own shape, so
    // a new rules file appears here by itself.
    let names: Vec<&str> = export["derived"]
        .as_object()
        .expect("map")
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected: Vec<&str> = RELATIONS
        .iter()
        .filter(|r| r.kind == RelationKind::Output)
        .map(|r| r.name)
        .filter(|n| {
            ![
                "Imports",
                "ImportDefinedIn",
                "Calls",
                "Inherits",
                "InCycle",
                "CycleEdge",
            ]
            .contains(n)
        })
        .collect();
    expected.sort_unstable();
    assert_eq!(names, expected);
    assert!(names.contains(&"LayerViolation") && names.contains(&"DependsOn"));
}

#[test]
fn without_layers_there_are_no_layer_facts() {
    let service = open("reexport_chain");
    for pattern in [
        "InLayer(_, _)",
        "LayerAbove(_, _)",
        "LayerViolation(_, _, _, _, _)",
    ] {
        assert!(service.query(pattern).expect(pattern).tuples.is_empty());
    }
}
