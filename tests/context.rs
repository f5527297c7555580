//! read_with_context: token budget and the off switch (TDD §3.8.4, FR-10, FR-12).

mod common;

use xfile::service::context::count_tokens;

#[test]
fn budget_keeps_every_import_line_and_names_what_it_left_out_fr10() {
    let service = common::open("token_budget");
    let text = service.read_with_context("main.py").unwrap();
    let (context, content) = text.split_once("\n---\n\n[File Content]\n").unwrap();
    assert_eq!(
        content,
        std::fs::read_to_string(common::fixture("token_budget/main.py")).unwrap()
    );
    // The summary line for the direct import is always there.
    assert!(
        context.contains("- helpers.py: first_helper, second_helper, third_helper"),
        "{context}"
    );
    // The first-used definition fits; the rest is named, with where to get it.
    assert!(context.contains("def first_helper(a, b)"), "{context}");
    assert!(!context.contains("def second_helper"), "{context}");
    assert!(
        context.contains(
            "Left out for the 60-token context budget: 2 definitions (second_helper, third_helper)"
        ),
        "{context}"
    );
    assert!(context.contains("get_dependencies"));
    // Everything but the left-out notice itself fits the budget.
    let notice_start = context.find("\nLeft out").unwrap();
    assert!(
        count_tokens(&context[..notice_start]) <= 60,
        "{}",
        count_tokens(&context[..notice_start])
    );
}

#[test]
fn disabled_injection_returns_the_plain_file_fr12() {
    let service = common::open("injection_disabled");
    let text = service.read_with_context("main.py").unwrap();
    assert_eq!(text, "from util import helper\n\nhelper()\n");
}
