//! The symbol model: class members, member-level calls through
//! the method resolution order, callers per call site, and the call graph,
//! on the `member_calls` fixture (locals bound more than once on
//! `local_rebinding`), each expected relationship asserted.

use crate::common;

use common::mcp_client::Client;
use common::{line, open};
use serde_json::{Value, json};

/// The function_call relationships of `file`, as `common::line` renders them.
fn calls_from(file: &str) -> Vec<String> {
    calls_in("member_calls", file)
}

fn calls_in(fixture: &str, file: &str) -> Vec<String> {
    let service = open(fixture);
    service
        .dependencies(file)
        .expect("file exists")
        .iter()
        .filter(|r| r.relationship_type.as_str() == "function_call")
        .map(line)
        .collect()
}

#[test]
fn self_cls_super_and_class_calls_resolve_through_the_mro() {
    assert_eq!(
        calls_from("shop/models.py"),
        [
            "shop/models.py:6:23 function_call shop/base.py Manager 13",
            "shop/models.py:9:23 function_call shop/base.py make_manager 18",
            // self.validate(): Product's order is Product, Entity.
            "shop/models.py:12:13 function_call shop/base.py Entity.validate 5",
            "shop/models.py:13:15 function_call <builtin:super> super -",
            "shop/models.py:13:23 function_call shop/base.py Entity.save 2",
            // cls.build() in a classmethod.
            "shop/models.py:17:19 function_call shop/base.py Entity.build 9",
            // self.manager holds what make_manager() is annotated to return.
            "shop/models.py:20:28 function_call shop/base.py Manager.filter 14",
            // Order(Audited, Cached): C3 gives Order, Audited, Cached, Entity,
            // so validate is Cached's, not Entity's.
            "shop/models.py:25:20 function_call shop/mixins.py Cached.validate 16",
            "shop/models.py:28:13 function_call shop/mixins.py Audited.log 8",
            "shop/models.py:29:15 function_call <builtin:super> super -",
            // super() in Order starts after Order: Audited.save.
            "shop/models.py:29:23 function_call shop/mixins.py Audited.save 5",
            "shop/models.py:32:11 function_call shop/base.py Manager 13",
        ]
    );
}

#[test]
fn objects_of_a_known_class_resolve_from_constructors_annotations_and_declarations() {
    assert_eq!(
        calls_from("shop/use.py"),
        [
            // A parameter annotation.
            "shop/use.py:6:12 function_call shop/models.py Product.save 11",
            "shop/use.py:7:12 function_call shop/models.py Order 23",
            // A local bound once to a constructor call; save is inherited.
            "shop/use.py:8:10 function_call shop/mixins.py Audited.save 5",
            "shop/use.py:9:12 function_call shop/models.py Product.create 16",
            "shop/use.py:10:11 function_call shop/base.py Entity.validate 5",
            "shop/use.py:11:4 function_call shop/base.py make_manager 18",
            // A function's return annotation.
            "shop/use.py:11:19 function_call shop/base.py Manager.filter 14",
            // An imported module variable bound to a constructor call.
            "shop/use.py:12:13 function_call shop/base.py Manager.filter 14",
            "shop/use.py:13:21 function_call shop/models.py Product 5",
            // A variable annotation.
            "shop/use.py:14:10 function_call shop/models.py Product.related 19",
            "shop/use.py:15:11 function_call shop/models.py Order 23",
            "shop/use.py:15:19 function_call shop/models.py Order.total 24",
            "shop/use.py:20:21 function_call shop/models.py Order 23",
            // A chain: self.order is an Order (assigned in __init__).
            "shop/use.py:23:26 function_call shop/models.py Order.store 27",
        ]
    );
}

#[test]
fn an_attribute_made_by_a_class_attribute_is_looked_up_from_the_receivers_class() {
    assert_eq!(
        calls_from("shop/client_tests.py"),
        [
            // cls.client = cls.client_class(), client_class = Client.
            "shop/client_tests.py:6:27 function_call shop/clients.py Client.get 2",
            // A subclass that sets its own client_class gets its client.
            "shop/client_tests.py:13:20 function_call shop/clients.py RecordingClient.get 7",
            // Not relating: self.other (made by a function, not a class) and
            // FactoryTests's client (client_class is a method there).
        ]
    );
}

#[test]
fn a_variable_or_class_attribute_bound_to_a_class_makes_instances_of_it() {
    assert_eq!(
        calls_from("shop/aliases.py"),
        [
            // manager_class = Manager, read on the class and through cls.
            "shop/aliases.py:10:40 function_call shop/base.py Manager.filter 14",
            "shop/aliases.py:14:35 function_call shop/base.py Manager.filter 14",
            // ManagerAlias = Manager at module level.
            "shop/aliases.py:33:26 function_call shop/base.py Manager.filter 14",
            // backend = Manager read on an instance, called into a local
            // and in a subclass: no class in their orders sets it on self.
            "shop/aliases.py:51:20 function_call shop/base.py Manager.filter 14",
            "shop/aliases.py:56:30 function_call shop/base.py Manager.filter 14",
            "shop/aliases.py:72:29 function_call shop/base.py Manager.filter 14",
            // Not relating: Unset.manager_class is None, Twice's is bound
            // to two different things, Widget sets it on self, and
            // FixedHolder's instances get `backend` from Holder.__init__,
            // which hides the class attribute (line 68).
        ]
    );
}

#[test]
fn a_class_defined_in_a_function_is_a_local_bound_to_that_class() {
    assert_eq!(
        calls_in("local_rebinding", "flow/local_classes.py"),
        [
            // Inherited members, on an instance and on the class.
            "flow/local_classes.py:9:14 function_call flow/models.py Product.save 7",
            "flow/local_classes.py:11:19 function_call flow/models.py Product.related 10",
            // Patched (an attribute set in the function, or through setattr
            // in a nested one) and a decorated class relate nothing.
            "flow/local_classes.py:27:8 function_call <builtin:setattr> setattr -",
            // Bound again to another class: each binding where it reaches.
            "flow/local_classes.py:37:12 function_call flow/models.py Order.total 15",
            // `Local = Product; Local()` constructs a Product.
            "flow/local_classes.py:39:11 function_call flow/models.py Product 6",
            "flow/local_classes.py:39:19 function_call flow/models.py Product.save 7",
            // Bound once: a nested function sees it.
            "flow/local_classes.py:55:22 function_call flow/models.py Order.total 15",
            // A lambda that patches it through setattr.
            "flow/local_classes.py:64:21 function_call <builtin:setattr> setattr -",
        ]
    );
}

#[test]
fn an_unannotated_function_returning_only_calls_of_one_class_returns_its_instances() {
    assert_eq!(
        calls_in("local_rebinding", "flow/returns.py"),
        [
            "flow/returns.py:14:4 function_call flow/models.py make_order 22",
            // return Order()
            "flow/returns.py:14:17 function_call flow/models.py Order.total 15",
            "flow/returns.py:15:4 function_call flow/models.py maybe_product 26",
            // return None or Product(): a call can only succeed on a Product.
            "flow/returns.py:15:24 function_call flow/models.py Product.save 7",
            // Not relating: either (two classes), products (a generator),
            // fetch (async: a coroutine), shadowed (Order is a local there).
            "flow/returns.py:16:4 function_call flow/models.py either 32",
            "flow/returns.py:17:4 function_call flow/models.py forwarded 38",
            // return make_order(): what that returns.
            "flow/returns.py:17:16 function_call flow/models.py Order.total 15",
            "flow/returns.py:18:4 function_call flow/models.py products 42",
            "flow/returns.py:19:4 function_call flow/models.py fetch 47",
            "flow/returns.py:20:4 function_call flow/models.py shadowed 51",
            // Store.order returns Order().
            "flow/returns.py:21:11 function_call flow/models.py Store 56",
            "flow/returns.py:21:19 function_call flow/models.py Store.order 57",
            "flow/returns.py:21:27 function_call flow/models.py Order.store 18",
        ]
    );
}

#[test]
fn a_method_returning_its_receivers_class_keeps_the_receivers_class() {
    assert_eq!(
        calls_in("fluent_returns", "query/use.py"),
        [
            // return self
            "query/use.py:5:6 function_call query/sets.py Query.where 10",
            "query/use.py:5:17 function_call query/sets.py Query.limit 38",
            // return self.__class__(...)
            "query/use.py:6:6 function_call query/sets.py Query.copy 14",
            "query/use.py:6:13 function_call query/sets.py Query.limit 38",
            // return type(self)(...)
            "query/use.py:7:6 function_call query/sets.py Query.twin 17",
            "query/use.py:7:13 function_call query/sets.py Query.limit 38",
            // filter -> _filter -> _chain -> _clone, through locals, one
            // branch returning None.
            "query/use.py:8:6 function_call query/sets.py Query.filter 20",
            "query/use.py:8:18 function_call query/sets.py Query.limit 38",
            // On a subclass instance, the subclass.
            "query/use.py:9:4 function_call query/sets.py UserQuery 64",
            "query/use.py:9:16 function_call query/sets.py Query.filter 20",
            "query/use.py:9:28 function_call query/sets.py UserQuery.active 65",
            // return cls() in a classmethod, called on the class or an
            // instance.
            "query/use.py:10:14 function_call query/sets.py Query.create 42",
            "query/use.py:10:23 function_call query/sets.py UserQuery.active 65",
            "query/use.py:11:4 function_call query/sets.py UserQuery 64",
            "query/use.py:11:16 function_call query/sets.py Query.create 42",
            "query/use.py:11:25 function_call query/sets.py UserQuery.active 65",
            // Not relating `.limit`: Weird's own _clone returns Other();
            // either returns self or Other(); deferred returns a nested
            // function's result; steps is a generator; kind returns the
            // class itself; where called on the class returns its argument.
            "query/use.py:15:4 function_call query/sets.py Weird 69",
            "query/use.py:15:12 function_call query/sets.py Query.filter 20",
            "query/use.py:16:6 function_call query/sets.py Query.either 49",
            "query/use.py:17:6 function_call query/sets.py Query.deferred 54",
            "query/use.py:18:6 function_call query/sets.py Query.steps 60",
            "query/use.py:19:10 function_call query/sets.py Query.kind 46",
            "query/use.py:20:10 function_call query/sets.py Query.where 10",
        ]
    );
}

#[test]
fn return_annotations_self_and_forward_references_name_the_class() {
    assert_eq!(
        calls_in("fluent_returns", "query/typed_use.py"),
        [
            // -> Self (typing's), then -> "Result" (defined further down).
            "query/typed_use.py:7:6 function_call query/typed.py Builder.add 6",
            "query/typed_use.py:7:13 function_call query/typed.py Builder.add 6",
            "query/typed_use.py:7:20 function_call query/typed.py Builder.done 9",
            "query/typed_use.py:7:27 function_call query/typed.py Result.show 30",
            // A classmethod -> typing.Self gives an instance of the class.
            "query/typed_use.py:8:12 function_call query/typed.py Builder.make 13",
            "query/typed_use.py:8:19 function_call query/typed.py Builder.add 6",
            // "Optional[Result]" and Optional["Result"].
            "query/typed_use.py:9:6 function_call query/typed.py Builder.maybe 16",
            "query/typed_use.py:9:14 function_call query/typed.py Result.show 30",
            "query/typed_use.py:10:6 function_call query/typed.py Builder.twice 19",
            "query/typed_use.py:10:14 function_call query/typed.py Result.show 30",
            // A parameter annotated "Result".
            "query/typed_use.py:11:6 function_call query/typed.py Result.show 30",
            // A project class named Self is that class, not the receiver's:
            // .own() (Mimic's) does not relate.
            "query/typed_use.py:12:4 function_call query/mimic.py Mimic 4",
            "query/typed_use.py:12:12 function_call query/mimic.py Mimic.other 5",
            "query/typed_use.py:12:20 function_call query/lookalike.py Self.shown 2",
            "query/typed_use.py:13:4 function_call query/mimic.py Mimic 4",
            "query/typed_use.py:13:12 function_call query/mimic.py Mimic.other 5",
            // A string with an escape, and one that does not parse: no class.
            "query/typed_use.py:14:6 function_call query/typed.py Builder.escaped 22",
            "query/typed_use.py:15:6 function_call query/typed.py Builder.broken 25",
            // from __future__ import annotations: -> Leaf before Leaf exists.
            "query/typed_use.py:16:4 function_call query/postponed.py Node 4",
            "query/typed_use.py:16:11 function_call query/postponed.py Node.next 5",
            "query/typed_use.py:16:18 function_call query/postponed.py Leaf.value 10",
        ]
    );
}

#[test]
fn an_attribute_bound_to_an_annotated_parameter_or_a_constructed_local_holds_its_class() {
    assert_eq!(
        calls_from("shop/injected.py"),
        [
            "shop/injected.py:7:16 function_call shop/clients.py make_client 11",
            // self.client = client (client: Client)
            "shop/injected.py:17:20 function_call shop/clients.py Client.get 2",
            // built = make_client(); self.built = built
            "shop/injected.py:18:19 function_call shop/clients.py Client.get 2",
            // spare: "RecordingClient" = None
            "shop/injected.py:19:19 function_call shop/clients.py RecordingClient.get 7",
            // Not relating: recorder (a parameter without annotation) and
            // changing (also bound to such a parameter in reset).
        ]
    );
}

#[test]
fn reading_a_property_gives_what_it_returns() {
    assert_eq!(
        calls_in("fluent_returns", "query/props_use.py"),
        [
            // @property -> Stack, @functools.cached_property returning Stack().
            "query/props_use.py:5:12 function_call query/props.py Stack.push 5",
            "query/props_use.py:6:13 function_call query/props.py Stack.push 5",
            "query/props_use.py:7:6 function_call query/props.py Holder.plain 18",
            "query/props_use.py:7:14 function_call query/props.py Stack.push 5",
            // Not relating: a method read without a call (line 8), and
            // calling what a property gives (line 9: the Stack, not a
            // method returning one).
            "query/props_use.py:9:6 function_call query/props.py Holder.stack 11",
        ]
    );
}

#[test]
fn a_local_bound_several_times_holds_the_binding_that_reaches_it_in_straight_line_code() {
    assert_eq!(
        calls_in("local_rebinding", "flow/rebinding.py"),
        [
            "flow/rebinding.py:8:11 function_call flow/models.py Product 6",
            "flow/rebinding.py:9:9 function_call flow/models.py Product.save 7",
            "flow/rebinding.py:10:11 function_call flow/models.py Order 14",
            "flow/rebinding.py:11:9 function_call flow/models.py Order.total 15",
            // A comprehension runs where it stands.
            "flow/rebinding.py:12:10 function_call flow/models.py Order.store 18",
            // The value is read before the target is bound; store() is not
            // annotated, so the item.save() after it relates nothing.
            "flow/rebinding.py:13:16 function_call flow/models.py Order.store 18",
            // A parameter's annotation holds until the body binds it again.
            "flow/rebinding.py:18:10 function_call flow/models.py Order.total 15",
            "flow/rebinding.py:19:12 function_call flow/models.py Product 6",
            "flow/rebinding.py:20:10 function_call flow/models.py Product.save 7",
            // if: each branch starts from before the if; after it, nothing.
            "flow/rebinding.py:24:11 function_call flow/models.py Product 6",
            "flow/rebinding.py:26:15 function_call flow/models.py Order 14",
            "flow/rebinding.py:27:13 function_call flow/models.py Order.total 15",
            "flow/rebinding.py:29:13 function_call flow/models.py Product.related 10",
            // Loops: an earlier iteration may have rebound item, so neither
            // the first statement of the body nor what follows the loop
            // relates.
            "flow/rebinding.py:34:11 function_call flow/models.py Product 6",
            "flow/rebinding.py:37:15 function_call flow/models.py Order 14",
            "flow/rebinding.py:38:13 function_call flow/models.py Order.total 15",
            "flow/rebinding.py:40:17 function_call <stdlib:random> random -",
            "flow/rebinding.py:41:15 function_call flow/models.py Product 6",
            // try: a handler may start anywhere in the body; else follows
            // the whole body.
            "flow/rebinding.py:46:11 function_call flow/models.py Product 6",
            "flow/rebinding.py:48:15 function_call flow/models.py Order 14",
            "flow/rebinding.py:52:13 function_call flow/models.py Order.total 15",
            // with: straight-line code, as type checkers read a context
            // manager not known to swallow exceptions...
            "flow/rebinding.py:57:11 function_call flow/models.py Product 6",
            "flow/rebinding.py:59:15 function_call flow/models.py Order 14",
            "flow/rebinding.py:60:13 function_call flow/models.py Order.total 15",
            "flow/rebinding.py:61:9 function_call flow/models.py Order.total 15",
            // A nested function runs later (item.save() there relates
            // nothing); one that rebinds a local through nonlocal makes it
            // unknown, even bound once.
            "flow/rebinding.py:65:11 function_call flow/models.py Product 6",
            "flow/rebinding.py:70:11 function_call flow/models.py Order 14",
            "flow/rebinding.py:75:11 function_call flow/models.py Product 6",
            "flow/rebinding.py:79:15 function_call flow/models.py Order 14",
            "flow/rebinding.py:83:11 function_call flow/models.py Manager 1",
            // An assignment expression rebinds.
            "flow/rebinding.py:87:11 function_call flow/models.py Product 6",
            // match: each case starts without what the statement binds.
            "flow/rebinding.py:93:11 function_call flow/models.py Product 6",
            "flow/rebinding.py:96:19 function_call flow/models.py Order 14",
            "flow/rebinding.py:97:17 function_call flow/models.py Order.total 15",
            // ...while after one that is (`suppress`), item may still be
            // the Order: the item.total() after it relates nothing.
            "flow/rebinding.py:106:11 function_call flow/models.py Order 14",
            "flow/rebinding.py:107:9 function_call <stdlib:contextlib> suppress -",
            "flow/rebinding.py:108:15 function_call flow/models.py Product 6",
            "flow/rebinding.py:109:13 function_call flow/models.py Product.save 7",
        ]
    );
}

#[test]
fn unknown_receivers_rebindings_patches_and_unknown_bases_relate_nothing() {
    assert_eq!(
        calls_from("shop/unknown.py"),
        [
            // value = Product(), conditionally rebound: value.save() relates
            // nothing, the constructor calls do.
            "shop/unknown.py:33:12 function_call shop/models.py Product 5",
            "shop/unknown.py:34:14 function_call <stdlib:random> random -",
            "shop/unknown.py:35:16 function_call shop/base.py Manager 13",
            // Patched.save is assigned from outside the class: only
            // validate, not patched, resolves. Dynamic() (a base computed at
            // run time) and FromDict() (dict's members are not known) relate
            // nothing beyond their own members; thing.save() (an unknown
            // parameter) and Order().missing() nothing at all. The test
            // module that assigns Entity.validate (shop/test_doubles.py)
            // makes a test double, which leaves the member known.
            "shop/unknown.py:45:14 function_call shop/base.py Entity.validate 5",
            "shop/unknown.py:46:11 function_call shop/models.py Order 23",
        ]
    );
}

#[test]
fn the_method_resolution_order_is_c3_over_resolved_bases() {
    let service = open("member_calls");
    let result = service
        .query(r#"MroNext("shop/models.py", "Order", _, _, _, _)"#)
        .expect("query");
    let rows: Vec<String> = result
        .tuples
        .iter()
        .map(|t| format!("{}.{} -> {}.{}", t[2], t[3], t[4], t[5]))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        rows,
        [
            r#""shop/mixins.py"."Audited" -> "shop/mixins.py"."Cached""#,
            r#""shop/mixins.py"."Cached" -> "shop/base.py"."Entity""#,
            r#""shop/models.py"."Order" -> "shop/mixins.py"."Audited""#,
        ]
    );
    // A base computed at run time or outside the project ends the order
    // at the class itself.
    for class in ["Dynamic", "FromDict"] {
        let next = service
            .query(&format!(
                r#"MroNext("shop/unknown.py", "{class}", _, _, _, _)"#
            ))
            .expect("query");
        assert!(next.tuples.is_empty(), "{class}: {:?}", next.tuples);
    }
}

#[test]
fn explain_follows_a_method_call_through_the_mro() {
    let service = open("member_calls");
    let text = service
        .explain(r#"Calls("shop/models.py", "25:20", _, _)"#)
        .expect("explains")
        .to_text();
    for expected in [
        "Calls(shop/models.py, 25:20, shop/mixins.py, Cached.validate)",
        "MemberRef(shop/models.py, 25:20, shop/mixins.py, Cached.validate)",
        "ExprSelf(shop/models.py,",
        "MroNext(shop/models.py, Order, shop/models.py, Order, shop/mixins.py, Audited)",
        "MroNext(shop/models.py, Order, shop/mixins.py, Audited, shop/mixins.py, Cached)",
        "!Has(shop/mixins.py, Audited, validate)",
        "HasMember(shop/mixins.py, Cached, validate, Cached.validate)",
    ] {
        assert!(text.contains(expected), "missing {expected} in\n{text}");
    }
}

#[test]
fn callers_and_callees_walk_the_call_graph_to_a_depth() {
    let service = open("member_calls");
    let graph = service
        .call_graph(
            "shop.base.Entity.save",
            xfile::service::calls::Direction::Callers,
            2,
            100,
        )
        .expect("symbol found");
    let calls: Vec<String> = graph
        .calls
        .iter()
        .map(|c| {
            format!(
                "{} {}:{} {} -> {}",
                c.depth, c.file, c.line, c.caller, c.callee
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            "1 shop/mixins.py:6 shop/mixins.py::Audited.save -> shop/base.py::Entity.save",
            "1 shop/models.py:13 shop/models.py::Product.save -> shop/base.py::Entity.save",
            "2 shop/models.py:29 shop/models.py::Order.store -> shop/mixins.py::Audited.save",
            "2 shop/use.py:8 shop/use.py::checkout -> shop/mixins.py::Audited.save",
            "2 shop/use.py:6 shop/use.py::checkout -> shop/models.py::Product.save",
        ]
    );
    assert_eq!(
        (graph.total, graph.complete, graph.truncated),
        (5, true, None)
    );

    let bounded = service
        .call_graph(
            "shop/use.py::checkout",
            xfile::service::calls::Direction::Callees,
            1,
            3,
        )
        .expect("symbol found");
    assert_eq!(bounded.calls.len(), 3);
    assert!(bounded.total > 3);
    assert!(bounded.truncated.is_some());

    for missing in ["shop/base.py::Nope", "shop.base.Entity.nope", "shop.base"] {
        assert!(
            service
                .call_graph(missing, xfile::service::calls::Direction::Callers, 1, 10)
                .is_err(),
            "{missing}"
        );
    }

    // A qualified name only one definition has names it without its path;
    // one that several have is refused with the candidates.
    let bare = service
        .call_graph(
            "Entity.save",
            xfile::service::calls::Direction::Callers,
            2,
            100,
        )
        .expect("one definition is Entity.save");
    assert_eq!(
        (bare.symbol.as_str(), bare.total),
        ("shop/base.py::Entity.save", 5)
    );
    let Err(ambiguous) =
        service.call_graph("save", xfile::service::calls::Direction::Callers, 1, 10)
    else {
        panic!("several definitions are named save");
    };
    assert_eq!(ambiguous.code(), "ambiguous_symbol");
    assert!(
        ambiguous.to_string().contains("shop/base.py::Entity.save"),
        "{ambiguous}"
    );

    // A member a class inherits names the definition its order reaches
    // first: Order(Audited, Cached) runs Audited.save.
    for inherited in ["shop.models.Order.save", "shop/models.py::Order.save"] {
        let graph = service
            .call_graph(inherited, xfile::service::calls::Direction::Callers, 1, 100)
            .expect("Order inherits save");
        assert_eq!(graph.symbol, "shop/mixins.py::Audited.save", "{inherited}");
    }
    // Not through a base that is unknown (a call) or outside the project.
    for unknown in ["shop.unknown.Dynamic.save", "shop.unknown.FromDict.keys"] {
        let Err(error) =
            service.call_graph(unknown, xfile::service::calls::Direction::Callers, 1, 10)
        else {
            panic!("{unknown} names no project definition");
        };
        assert_eq!(error.code(), "symbol_not_found", "{unknown}");
    }
}

#[test]
fn mcp_answers_callers_callees_and_member_level_dependents() {
    let fixture = common::copy_fixture("member_calls");
    let mut client = Client::start(fixture.path());
    // The default answer is text: the calls by file, then by caller, the
    // callee said once in the header.
    let (is_error, text) = client.call(
        "get_callers",
        json!({"symbol": "shop/models.py::Order.store"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(
            "Callers of shop/models.py::Order.store (depth 1):\nshop/use.py\n  Checkout.run: 23:"
        ),
        "{text}"
    );
    let (is_error, text) = client.call(
        "get_callers",
        json!({"symbol": "shop/models.py::Order.store", "format": "json"}),
    );
    assert!(!is_error, "{text}");
    let graph: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(graph["symbol"], "shop/models.py::Order.store");
    assert_eq!(graph["calls"][0]["caller"], "shop/use.py::Checkout.run");
    assert_eq!(graph["calls"][0]["line"], 23);
    assert_eq!(graph["total"], 1);

    let (is_error, text) = client.call(
        "get_callees",
        json!({"symbol": "shop.models.Order.store", "depth": 2, "format": "json"}),
    );
    assert!(!is_error, "{text}");
    let graph: Value = serde_json::from_str(&text).expect("json");
    let callees: Vec<&str> = graph["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["callee"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        callees,
        [
            "shop/mixins.py::Audited.log",
            "<builtin:super>::super",
            "shop/mixins.py::Audited.save",
            "<builtin:super>::super",
            "shop/base.py::Entity.save",
        ]
    );

    let (is_error, text) = client.call(
        "get_dependents",
        json!({"file_path": "shop/mixins.py", "symbol": "Audited.save", "format": "json"}),
    );
    assert!(!is_error, "{text}");
    let dependents: Value = serde_json::from_str(&text).expect("json");
    let sites: Vec<String> = dependents["items"]
        .as_array()
        .expect("list")
        .iter()
        .map(|r| {
            format!(
                "{}:{} {}",
                r["source_file"], r["line_number"], r["source_symbol"]
            )
        })
        .collect();
    assert_eq!(
        sites,
        [
            r#""shop/models.py":29 "Order.store""#,
            r#""shop/use.py":8 "checkout""#,
        ]
    );

    let (is_error, text) = client.call("get_callers", json!({"symbol": "shop/base.py::Nope"}));
    assert!(is_error);
    assert!(text.contains("symbol_not_found"), "{text}");
}

#[test]
fn a_value_with_alternatives_holds_a_class_only_when_every_alternative_gives_it() {
    let calls = calls_in("either_values", "app/live.py");
    let member_calls: Vec<&str> = calls
        .iter()
        .map(String::as_str)
        .filter(|c| c.contains("Console.print") || c.contains("Printer.print"))
        .collect();
    assert_eq!(
        member_calls,
        [
            // `console if console is not None else get_console()`: the
            // parameter's annotation and get_console's return agree.
            "app/live.py:19:21 function_call app/console.py Console.print 5",
            // `console or get_console()`.
            "app/live.py:20:21 function_call app/console.py Console.print 5",
            // `None or Console()`: None adds nothing.
            "app/live.py:21:22 function_call app/console.py Console.print 5",
            // Not relating: Console or Printer (line 22), a callee with no
            // known result (23), a standard-library class (24).
            "app/live.py:25:20 function_call app/console.py Console.print 5",
            // Not relating: three bindings giving Console, Console, Printer
            // (line 39). Relating: two giving Console (50), and a module
            // variable's alternatives (54).
            "app/live.py:50:20 function_call app/console.py Console.print 5",
            "app/live.py:54:8 function_call app/console.py Console.print 5",
        ]
    );
}

#[test]
fn dependents_of_a_symbol_the_file_does_not_define_are_refused_not_empty() {
    let service = open("member_calls");
    // Defined, and nothing depends on it: an empty answer.
    let none = service
        .dependents_of_symbol("shop/unknown.py", "FromDict.own")
        .expect("FromDict.own is defined");
    assert!(none.is_empty(), "{none:?}");
    // A typo would read as "nothing depends on it": refused.
    let Err(typo) = service.dependents_of_symbol("shop/base.py", "Entity.svae") else {
        panic!("Entity.svae is not defined");
    };
    assert_eq!(typo.code(), "symbol_not_found");
    assert!(
        typo.to_string().contains("shop/base.py::Entity.svae"),
        "{typo}"
    );
    // Inherited: the answer names where it is defined.
    let Err(inherited) = service.dependents_of_symbol("shop/models.py", "Order.save") else {
        panic!("Order does not define save");
    };
    assert_eq!(inherited.code(), "symbol_not_found");
    assert!(
        inherited
            .to_string()
            .contains("shop/mixins.py::Audited.save"),
        "{inherited}"
    );
}

/// `with E as x` and `async with E as x` bind `x` to what
/// `type(E).__enter__` / `__aenter__` gives: the class itself for `return
/// self` or `-> Self`, the declared class otherwise; nothing when the
/// method returns what is not known, or when `x` may hold something else.
#[test]
fn a_context_manager_binds_what_its_enter_returns() {
    assert_eq!(
        calls_in("context_managers", "net/use.py"),
        [
            "net/use.py:5:9 function_call net/client.py Client 4",
            "net/use.py:6:15 function_call net/client.py Client.get 11",
            "net/use.py:7:9 function_call net/client.py Pool 31",
            "net/use.py:8:13 function_call net/client.py Conn.send 27",
            "net/use.py:9:9 function_call net/client.py Opaque 42",
            "net/use.py:14:15 function_call net/client.py AsyncClient 15",
            "net/use.py:15:21 function_call net/client.py AsyncClient.fetch 22",
            "net/use.py:19:9 function_call net/client.py Client 4",
            "net/use.py:20:14 function_call net/client.py Client.get 11",
            "net/use.py:22:16 function_call net/client.py Pool 31",
        ]
    );
    // `def __enter__(self: T) -> T` for a `TypeVar` `T` gives the
    // receiver's class (`cls: type[U]) -> U` likewise); `(self: U) -> T`
    // does not.
    assert_eq!(
        calls_in("context_managers", "net/use_typed.py"),
        [
            "net/use_typed.py:5:9 function_call net/typed.py Sub 22",
            "net/use_typed.py:6:16 function_call net/typed.py Session.query 14",
            "net/use_typed.py:7:9 function_call net/typed.py Mismatched 26",
            "net/use_typed.py:9:15 function_call net/typed.py Session.create 18",
            "net/use_typed.py:10:9 function_call net/typed.py Session.query 14",
        ]
    );
}

/// A bare decorator is a call of the decorator with the definition:
/// `@marks.define` calls `define` as `@marks.define(slots=False)` does, and
/// `@register` calls `register`; `@property`, a builtin, is no call.
#[test]
fn a_bare_decorator_is_a_call() {
    use xfile::service::calls::Direction;
    let service = open("bare_decorators");
    let callers = |symbol: &str| -> Vec<String> {
        service
            .call_graph(symbol, Direction::Callers, 1, 100)
            .expect("a symbol")
            .calls
            .iter()
            .map(|c| format!("{}:{} {}", c.file, c.line, c.caller))
            .collect()
    };
    assert_eq!(
        callers("kit/marks.py::define"),
        [
            "kit/models.py:5 kit/models.py::<module>",
            "kit/models.py:12 kit/models.py::<module>",
        ]
    );
    assert_eq!(
        callers("kit/marks.py::register"),
        ["kit/models.py:17 kit/models.py::<module>"]
    );
    assert!(
        !calls_in("bare_decorators", "kit/models.py")
            .iter()
            .any(|c| c.contains("property")),
        "{:?}",
        calls_in("bare_decorators", "kit/models.py")
    );
}

/// A local bound once to a bound method, a function or a class calls what
/// it names; `functools.partial(f, ...)` calls `f`; a local that may hold
/// either of two callables calls neither for certain.
#[test]
fn an_alias_of_a_callable_calls_what_it_names() {
    let calls = calls_in("callable_aliases", "text/use.py");
    for expected in [
        "text/use.py:10:8 function_call text/core.py Console.get_style 2",
        "text/use.py:12:4 function_call text/core.py render 9",
        "text/use.py:14:4 function_call text/core.py Style 13",
        "text/use.py:15:29 function_call text/core.py Console.print 5",
    ] {
        assert!(
            calls.contains(&expected.to_string()),
            "{expected}: {calls:#?}"
        );
    }
    assert!(
        !calls.iter().any(|c| c.starts_with("text/use.py:24:")),
        "{calls:#?}"
    );
}

/// A local bound again in an `if` keeps a class where the paths meet when
/// every path that goes on gives it that class; two classes give nothing.
/// A local bound once holds its one value wherever it is bound at all.
#[test]
fn a_local_rebound_in_branches_keeps_the_class_every_path_gives() {
    let joins: Vec<String> = calls_in("rebinding_by_type", "web/use.py")
        .into_iter()
        .filter(|c| c.contains(".join "))
        .collect();
    assert_eq!(
        joins,
        [
            "web/use.py:8:8 function_call web/urls.py URL.join 5",
            "web/use.py:25:9 function_call web/urls.py URL.join 5",
            "web/use.py:33:10 function_call web/urls.py URL.join 5",
            "web/use.py:39:10 function_call web/urls.py URL.join 5",
        ]
    );
}

/// A test's parameters hold what the fixture of that name gives: the one
/// its own module defines, else the nearest `conftest.py`'s (returned or
/// yielded, directly or through a local, or declared `-> Iterator[T]`),
/// and `request.getfixturevalue`
/// likewise. A nearer fixture of no known class, a plain function named
/// like the parameter, a fixture renamed with `name=`, a parameter with a
/// default and a function pytest does not collect give nothing.
#[test]
fn pytest_fixtures_give_tests_the_class_the_nearest_fixture_returns() {
    let calls: Vec<String> = calls_in("pytest_fixtures", "tests/unit/test_things.py")
        .into_iter()
        .filter(|c| c.contains(" app/") && !c.contains(" Session 1"))
        .collect();
    assert_eq!(
        calls,
        [
            "tests/unit/test_things.py:12:11 function_call app/client.py Client.get 2",
            // Yielded from a local bound to connect(), which returns one.
            "tests/unit/test_things.py:16:12 function_call app/db.py Session.execute 2",
            // tests/unit/conftest.py's `user` (a User), not tests/conftest.py's (an Admin).
            "tests/unit/test_things.py:20:9 function_call app/models.py User.save 2",
            "tests/unit/test_things.py:24:13 function_call app/db.py Session.execute 2",
            "tests/unit/test_things.py:29:10 function_call app/client.py Client.get 2",
            "tests/unit/test_things.py:34:15 function_call app/client.py Client.post 5",
            // Annotated `-> Iterator[Client]`.
            "tests/unit/test_things.py:58:11 function_call app/client.py Client.get 2",
        ]
    );
    // A fixture's own parameters are fixtures too.
    assert!(
        calls_in("pytest_fixtures", "tests/unit/conftest.py").contains(
            &"tests/unit/conftest.py:8:12 function_call app/db.py Session.execute 2".to_string()
        )
    );
}

/// A choice (`a or b()`, `a if c else b()`) holds what every alternative
/// other than `None` is; one that mixes classes, or holds what is not
/// known, holds nothing. A `__main__` block follows its rebindings as a
/// function does, and `get = Class.method` calls the member. A module
/// variable a function rebinds (`global current`) holds nothing known. A
/// member read on a choice of two classes is the one both find, if they
/// find the same (`Redirect() if url else Response()`), else nothing.
#[test]
fn choices_main_blocks_and_class_member_aliases_keep_their_class() {
    let joins: Vec<String> = calls_in("rebinding_by_type", "web/choices.py")
        .into_iter()
        .filter(|c| c.contains(".join ") || c.contains(".copy_with ") || c.contains(".set_cookie "))
        .collect();
    assert_eq!(
        joins,
        [
            "web/choices.py:12:8 function_call web/urls.py URL.join 5",
            "web/choices.py:14:11 function_call web/urls.py URL.join 5",
            "web/choices.py:16:10 function_call web/urls.py URL.join 5",
            "web/choices.py:22:4 function_call web/urls.py URL.copy_with 2",
            "web/choices.py:22:10 function_call web/urls.py URL.join 5",
            "web/choices.py:27:12 function_call web/urls.py URL.join 5",
            "web/choices.py:29:12 function_call web/urls.py URL.join 5",
            "web/choices.py:31:12 function_call web/urls.py Other.join 10",
            // One of two classes that find the same member: that member.
            "web/choices.py:49:13 function_call web/urls.py Response.set_cookie 15",
            // And when one of the two is bound again in an `if`.
            "web/choices.py:55:10 function_call web/urls.py Response.set_cookie 15",
        ]
    );
}
