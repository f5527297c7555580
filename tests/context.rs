//! read_with_context: token budget and the off switch (TDD §3.8.4, FR-10, FR-12).

mod common;

use xfile::service::context::count_tokens;

#[test]
fn budget_keeps_every_import_line_and_names_what_it_left_out_fr10() {
    let dir = common::copy_fixture("token_budget");
    let service = xfile::service::Service::open(dir.path()).unwrap();
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

#[test]
fn each_injected_snippet_is_logged_as_one_jsonl_line_fr26() {
    let dir = common::copy_fixture("token_budget");
    let service = xfile::service::Service::open(dir.path()).unwrap();
    service.read_with_context("main.py").unwrap();
    service.read_with_context("main.py").unwrap();
    let log = std::fs::read_to_string(dir.path().join(".cross_file_context_logs/injections.jsonl"))
        .unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
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
            ("helpers.py", "first_helper", "1-3", true),
            ("helpers.py", "first_helper", "1-3", false)
        ]
    );
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
    let dir = common::copy_fixture("token_budget");
    std::fs::write(
        dir.path().join(".cross_file_context_links.yml"),
        "enable_injection_logging: false\n",
    )
    .unwrap();
    let service = xfile::service::Service::open(dir.path()).unwrap();
    service.read_with_context("main.py").unwrap();
    assert!(!dir.path().join(".cross_file_context_logs").exists());
}

#[test]
fn notes_for_missing_dependencies_ec14_and_broken_ones() {
    let dir = common::copy_fixture("relative_imports");
    std::fs::write(dir.path().join("app/core/models.py"), "class Model(:\n").unwrap();
    let service = xfile::service::Service::open(dir.path()).unwrap();
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
fn widely_used_definitions_get_a_usage_note_fr19() {
    let dir = common::copy_sample();
    for name in ["a", "b"] {
        std::fs::write(
            dir.path().join(format!("app/user_{name}.py")),
            "from app.utils.retry import retry_with_backoff\n\nretry_with_backoff(print)\n",
        )
        .unwrap();
    }
    let service = xfile::service::Service::open(dir.path()).unwrap();
    assert_eq!(
        service.usage_count("app/utils/retry.py", "retry_with_backoff"),
        4
    );
    let text = service.read_with_context("app/bot.py").unwrap();
    assert!(
        text.contains("Note: retry_with_backoff is used in 4 files; a signature change affects them all (get_dependents app/utils/retry.py)."),
        "{text}"
    );
    assert!(!text.contains("Storage is used in"), "{text}");
}
