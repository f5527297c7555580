//! search_with_context: matching modes, expansion
//! states, expansion by cluster id, token budgets, over MCP too.

use crate::common;

use common::mcp_client::Client;
use serde_json::{Value, json};
use xfile::service::Service;
use xfile::service::search::{Expand, Expandable, MatchKind, SearchOptions, State};

fn open() -> Service {
    common::open("symbol_search")
}

/// The first seed of the first cluster: (symbol, how it matched).
fn first(service: &Service, query: &str) -> (String, MatchKind) {
    let answer = service.search(query, &SearchOptions::default()).unwrap();
    let Some(cluster) = answer.clusters.first() else {
        panic!("{query}: nothing found");
    };
    let seed = &cluster.seeds[0];
    (seed.symbol.clone(), seed.matched)
}

#[test]
fn each_matching_mode_finds_the_intended_definition() {
    let service = open();
    let cases = [
        ("Order", "shop/models.py::Order", MatchKind::Exact),
        ("order", "shop/models.py::Order", MatchKind::Exact),
        (
            "Order.save",
            "shop/models.py::Order.save",
            MatchKind::Qualified,
        ),
        (
            "shop.models.Entity",
            "shop/models.py::Entity",
            MatchKind::Qualified,
        ),
        // Re-exported by the package: found under the name it is imported by.
        ("shop.Order", "shop/models.py::Order", MatchKind::Qualified),
        (
            "shop/models.py::Entity.save",
            "shop/models.py::Entity.save",
            MatchKind::Qualified,
        ),
        (
            "retry_w",
            "shop/services.py::retry_with_backoff",
            MatchKind::Prefix,
        ),
        (
            "get user",
            "shop/models.py::get_active_user",
            MatchKind::WordParts,
        ),
        (
            "server config",
            "shop/services.py::HTTPServerConfig",
            MatchKind::WordParts,
        ),
        (
            "active",
            "shop/models.py::get_active_user",
            MatchKind::Substring,
        ),
        (
            "ctive_use",
            "shop/models.py::get_active_user",
            MatchKind::Infix,
        ),
        (
            "GetActiveUser",
            "shop/models.py::get_active_user",
            MatchKind::SameWords,
        ),
        (
            "OrdreService",
            "shop/services.py::OrderService",
            MatchKind::Fuzzy,
        ),
        (
            "retry_with_bakcoff",
            "shop/services.py::retry_with_backoff",
            MatchKind::Fuzzy,
        ),
    ];
    for (query, symbol, matched) in cases {
        assert_eq!(
            first(&service, query),
            (symbol.to_string(), matched),
            "{query}"
        );
    }
    // A query that matches nothing answers no clusters; an empty one is an error.
    let none = service.search("zzzqqq", &SearchOptions::default()).unwrap();
    assert!(none.clusters.is_empty() && none.total_matches == 0);
    assert!(service.search("  ", &SearchOptions::default()).is_err());
}

#[test]
fn ranking_prefers_used_and_nearby_definitions_among_equal_matches() {
    let service = open();
    // Three `save` methods match exactly; Order.save is the one called from
    // another file, so it leads.
    let answer = service.search("save", &SearchOptions::default()).unwrap();
    let seeds: Vec<&str> = answer
        .clusters
        .iter()
        .flat_map(|c| &c.seeds)
        .map(|s| s.symbol.as_str())
        .collect();
    assert_eq!(seeds[0], "shop/models.py::Order.save", "{seeds:?}");
    assert_eq!(answer.total_matches, 3);
    // Each class is its own cluster.
    assert_eq!(answer.clusters.len(), 3);
}

#[test]
fn cheap_containers_load_at_once_and_expensive_ones_when_asked() {
    let service = open();
    let answer = service
        .search("Order.save", &SearchOptions::default())
        .unwrap();
    let cluster = &answer.clusters[0];
    let related = &cluster.related;
    assert_eq!(related.colocated.state, State::Loaded);
    assert_eq!(related.siblings.state, State::Loaded);
    let siblings: Vec<&str> = related
        .siblings
        .data
        .iter()
        .map(|r| r.symbol.as_str())
        .collect();
    assert_eq!(
        siblings,
        [
            "shop/models.py::Order.total_price",
            "shop/models.py::Order.add_item"
        ]
    );
    assert!(
        related
            .colocated
            .data
            .iter()
            .any(|r| r.symbol == "shop/models.py::get_active_user")
    );
    for container in [&related.callers, &related.callees, &related.type_family] {
        assert_eq!(container.state, State::NotLoaded);
        assert!(container.data.is_empty());
    }
    assert!(
        answer
            .expansion_hints
            .recommended_expansions
            .iter()
            .any(|h| h.contains("callers") && h.contains(&cluster.id))
    );

    // Expanded in the search: callers, callees and the type family.
    let options = SearchOptions {
        expand: Expand::all(),
        ..SearchOptions::default()
    };
    let answer = service.search("Order.save", &options).unwrap();
    let related = &answer.clusters[0].related;
    assert_eq!(related.callers.state, State::Loaded);
    let callers: Vec<&str> = related
        .callers
        .data
        .iter()
        .map(|r| r.symbol.as_str())
        .collect();
    // SpecialOrder.save calls it through super(); api.handle is two calls
    // away (expansionDepth 2).
    assert_eq!(
        callers,
        [
            "shop/models.py::SpecialOrder.save",
            "shop/services.py::OrderService.place",
            "shop/api.py::handle"
        ]
    );
    assert_eq!(related.callees.state, State::Loaded);
    assert!(
        related
            .callees
            .data
            .iter()
            .any(|r| r.symbol == "shop/models.py::Entity.save"),
        "{:?}",
        related.callees.data
    );
    let family: Vec<(&str, &str)> = related
        .type_family
        .data
        .iter()
        .map(|r| (r.symbol.as_str(), r.relation))
        .collect();
    assert_eq!(
        family,
        [
            ("shop/models.py::Entity.save", "overrides"),
            ("shop/models.py::SpecialOrder.save", "overridden_by")
        ]
    );
}

#[test]
fn more_related_symbols_than_fit_are_truncated_with_their_count() {
    let service = open();
    let options = SearchOptions {
        expand: Expand {
            callers: true,
            ..Expand::default()
        },
        ..SearchOptions::default()
    };
    let answer = service.search("retry_with_backoff", &options).unwrap();
    let cluster = &answer.clusters[0];
    let callers = &cluster.related.callers;
    assert_eq!(callers.state, State::Truncated);
    // 20 callers in many.py, OrderService.place and, two calls away
    // (expansionDepth 2), api.handle.
    assert_eq!(callers.total_count, Some(22));
    assert!(callers.data.len() < 22 && !callers.data.is_empty());
    let hint = &answer.expansion_hints.truncated_relationships[0];
    assert_eq!(
        (
            hint.cluster_id.as_str(),
            hint.relationship,
            hint.available_count
        ),
        (cluster.id.as_str(), "callers", 22)
    );
}

#[test]
fn sections_keep_to_their_token_budgets() {
    let service = open();
    let options = SearchOptions {
        expand: Expand::all(),
        ..SearchOptions::default()
    };
    let answer = service.search("save", &options).unwrap();
    let budgets = [
        ("seeds", 400),
        ("callers", 300),
        ("callees", 300),
        ("typeFamily", 200),
        ("colocated", 150),
        ("siblings", 100),
    ];
    for cluster in &answer.clusters {
        for (section, budget) in budgets {
            let used = cluster.token_usage.get(section).copied().unwrap_or(0);
            assert!(used <= budget, "{section}: {used} > {budget}");
        }
        assert!(cluster.token_usage["total"] < 2000);
        for seed in &cluster.seeds {
            let preview = seed.preview.as_deref().unwrap();
            assert!(xfile::service::context::count_tokens(preview) <= 200);
            assert!(
                preview.contains(&format!("{}:{}", seed.file, seed.line)),
                "{preview}"
            );
        }
    }
    assert_eq!(
        answer.token_usage.estimated,
        answer.token_usage.query + answer.token_usage.per_cluster.iter().sum::<usize>()
    );
    assert_eq!(
        answer.token_usage.query,
        xfile::service::context::count_tokens("save")
    );
    // Without previews there are none.
    let bare = SearchOptions {
        include_preview: false,
        ..SearchOptions::default()
    };
    let answer = service.search("Order", &bare).unwrap();
    assert!(answer.clusters[0].seeds.iter().all(|s| s.preview.is_none()));
}

#[test]
fn clusters_expand_by_id_and_fail_when_their_file_is_gone() {
    let dir = common::copy_fixture("symbol_search");
    let root = dir.path().canonicalize().unwrap();
    let live = xfile::service::live::Live::open(&root).unwrap();
    let answer = live.read(|s| s.search("Order.save", &SearchOptions::default()).unwrap());
    let id = answer.clusters[0].id.clone();
    let expanded = live.read(|s| s.expand_cluster(&id, Expandable::Callers).unwrap());
    assert_eq!(expanded.container.state, State::Loaded);
    assert!(
        expanded
            .container
            .data
            .iter()
            .any(|r| r.symbol == "shop/services.py::OrderService.place")
    );
    // An unknown id says to search again.
    let unknown = live.read(|s| s.expand_cluster("c999", Expandable::Callers).unwrap_err());
    assert!(
        unknown.to_string().contains("search_with_context again"),
        "{unknown}"
    );
    // The seed's file deleted: the expansion fails and says why.
    std::fs::remove_file(root.join("shop/models.py")).unwrap();
    live.apply(&[root.join("shop/models.py")], "api").unwrap();
    let failed = live.read(|s| s.expand_cluster(&id, Expandable::Callers).unwrap());
    assert_eq!(failed.container.state, State::Failed);
    assert!(
        failed
            .container
            .error
            .as_deref()
            .unwrap()
            .contains("shop/models.py"),
        "{failed:?}"
    );
}

#[test]
fn search_and_expansion_over_mcp() {
    let dir = common::copy_fixture("symbol_search");
    let mut client = Client::start(dir.path());
    let (is_error, text) = client.call("search_with_context", json!({"query": "OrderService"}));
    assert!(!is_error, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let cluster = &answer["clusters"][0];
    assert_eq!(
        cluster["seeds"][0]["symbol"],
        "shop/services.py::OrderService"
    );
    assert_eq!(cluster["related"]["callers"]["state"], "not_loaded");
    assert_eq!(cluster["related"]["colocated"]["state"], "loaded");
    let id = cluster["id"].as_str().unwrap();

    // Expanded by id.
    let (is_error, text) = client.call(
        "expand_cluster_relationship",
        json!({"clusterId": id, "relationshipType": "callers"}),
    );
    assert!(!is_error, "{text}");
    let expansion: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        expansion["container"]["data"][0]["symbol"],
        "shop/api.py::handle"
    );
    let (is_error, text) = client.call(
        "expand_cluster_relationship",
        json!({"clusterId": "nope", "relationshipType": "callers"}),
    );
    assert!(is_error);
    assert!(text.contains("cluster_not_found"), "{text}");
}

/// The index is rebuilt only for changed files after an edit, and answers
/// as a fresh index of the same tree does.
#[test]
fn the_index_follows_edits_like_a_fresh_index() {
    let dir = common::copy_fixture("symbol_search");
    let root = dir.path().canonicalize().unwrap();
    let live = xfile::service::live::Live::open(&root).unwrap();
    let before = live.read(|s| s.search("refund", &SearchOptions::default()).unwrap());
    assert!(before.clusters.is_empty());
    let models = root.join("shop/models.py");
    let text = std::fs::read_to_string(&models).unwrap();
    std::fs::write(
        &models,
        text.replace("def add_item(self, item)", "def refund_order(self, item)"),
    )
    .unwrap();
    live.apply(&[models], "api").unwrap();
    let fresh = Service::open(&root).unwrap();
    for query in [
        "refund",
        "add_item",
        "Order",
        "save",
        "OrdreService",
        "shop.models.Order",
    ] {
        let seeds = |s: &Service| -> Vec<String> {
            let answer = s.search(query, &SearchOptions::default()).unwrap();
            answer
                .clusters
                .iter()
                .flat_map(|c| c.seeds.iter().map(|seed| seed.symbol.clone()))
                .collect()
        };
        assert_eq!(live.read(seeds), seeds(&fresh), "{query}");
    }
    let after = live.read(|s| s.search("refund", &SearchOptions::default()).unwrap());
    assert_eq!(
        after.clusters[0].seeds[0].symbol,
        "shop/models.py::Order.refund_order"
    );
}

/// Hot spots: precomputed clusters serve searches and are computed again
/// once a file they touch changes or their seed gains a dependent.
#[test]
fn hot_spots_serve_searches_and_are_invalidated_by_edits() {
    let dir = common::copy_fixture("symbol_search");
    let root = dir.path().canonicalize().unwrap();
    let live = xfile::service::live::Live::open(&root).unwrap();
    // Order is re-exported by the package: an entry point.
    let computed = live.read(|s| s.precompute_hot_spots());
    assert!(computed > 0);
    assert_eq!(
        live.read(|s| s.hot_spot_hits("shop/models.py::Order")),
        Some(0)
    );
    let callers = |live: &xfile::service::live::Live| -> Vec<String> {
        let options = SearchOptions {
            expand: Expand {
                callers: true,
                ..Expand::default()
            },
            ..SearchOptions::default()
        };
        let answer = live.read(|s| s.search("shop.models.Order", &options).unwrap());
        let related = &answer.clusters[0].related;
        // What was not asked for stays not loaded, even from the cache.
        assert_eq!(related.callees.state, State::NotLoaded);
        related
            .callers
            .data
            .iter()
            .map(|r| r.symbol.clone())
            .collect()
    };
    let before = callers(&live);
    assert_eq!(
        before,
        [
            "shop/services.py::OrderService.place",
            "shop/api.py::handle"
        ]
    );
    assert_eq!(
        live.read(|s| s.hot_spot_hits("shop/models.py::Order")),
        Some(1)
    );

    // A new file calls Order: the seed file has a new dependent.
    let new = root.join("shop/checkout.py");
    std::fs::write(
        &new,
        "from shop.models import Order\n\n\ndef checkout():\n    return Order()\n",
    )
    .unwrap();
    live.apply(&[new], "api").unwrap();
    // The refresh after an update computes the stale entry again, so the
    // next search is served from the cache, fresh.
    assert!(live.read(|s| s.refresh_hot_spots()) >= 1);
    assert_eq!(live.read(|s| s.refresh_hot_spots()), 0);
    let hits = live.read(|s| s.hot_spot_hits("shop/models.py::Order"));
    let after = callers(&live);
    assert_eq!(
        live.read(|s| s.hot_spot_hits("shop/models.py::Order")),
        hits.map(|n| n + 1)
    );
    assert!(
        after.contains(&"shop/checkout.py::checkout".to_string()),
        "{after:?}"
    );
    // The same answer as without any cache.
    let fresh = Service::open(&root).unwrap();
    let options = SearchOptions {
        expand: Expand {
            callers: true,
            ..Expand::default()
        },
        ..SearchOptions::default()
    };
    let expected: Vec<String> = fresh
        .search("shop.models.Order", &options)
        .unwrap()
        .clusters[0]
        .related
        .callers
        .data
        .iter()
        .map(|r| r.symbol.clone())
        .collect();
    assert_eq!(after, expected);

    // Without a refresh, the search itself finds the entry stale.
    let other = root.join("shop/returns.py");
    std::fs::write(
        &other,
        "from shop.models import Order\n\n\ndef give_back():\n    return Order()\n",
    )
    .unwrap();
    live.apply(&[other], "api").unwrap();
    assert!(callers(&live).contains(&"shop/returns.py::give_back".to_string()));
}

// Regression: a 10 MB query was searched for 9 s and echoed whole
// (a 10.5 MB answer, tokenUsage.estimated 0). Over the limit it is refused
// as an invalid parameter that names the limit; at the limit, the echo is
// cut short and counted in the answer's tokens.
#[test]
fn search_refuses_a_query_over_the_limit_and_its_echo_stays_in_budget() {
    use xfile::service::context::count_tokens;
    use xfile::service::search::{MAX_QUERY_CHARS, SearchError};

    let service = open();
    let long = "Order".repeat(2 * 1024 * 1024 / 5);
    match service.search(&long, &SearchOptions::default()) {
        Err(error @ SearchError::QueryTooLong(_)) => {
            assert_eq!(error.code(), "invalid_parameter");
            assert!(error.to_string().contains("1000"), "{error}");
        }
        other => panic!("a 2 MB query: {other:?}"),
    }

    let dir = common::copy_fixture("symbol_search");
    let mut client = Client::start(dir.path());
    let (is_error, text) = client.call("search_with_context", json!({"query": long}));
    assert!(is_error, "{}", &text[..text.len().min(300)]);
    assert!(
        text.len() < 1_000,
        "the refusal echoes the query: {} bytes",
        text.len()
    );
    let refusal: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(refusal["code"], "invalid_parameter");
    assert!(
        refusal["message"].as_str().unwrap().contains("limit of"),
        "{refusal}"
    );

    // At the limit: answered, the echo cut short and paid for.
    let at_limit: String = "Order "
        .repeat(MAX_QUERY_CHARS)
        .chars()
        .take(MAX_QUERY_CHARS)
        .collect();
    let (is_error, text) = client.call("search_with_context", json!({"query": at_limit}));
    assert!(!is_error, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let echoed = answer["query"].as_str().unwrap();
    assert!(
        echoed.len() < at_limit.len() && echoed.ends_with("..."),
        "{echoed}"
    );
    let usage = &answer["tokenUsage"];
    let estimated = usage["estimated"].as_u64().unwrap() as usize;
    assert_eq!(usage["query"], count_tokens(echoed), "{usage}");
    assert!(estimated >= count_tokens(echoed), "{usage}");
    assert!(
        estimated <= usage["budget"].as_u64().unwrap() as usize,
        "{usage}"
    );
}
