//! String-keyed links: Django signals, pluggy hooks and
//! entry-point groups as relations (rules/plugin_keys.dl, rules/plugins.dl,
//! rules/plugins_linked.dl) and as `Service::string_links`, on the
//! `string_links` fixture: a host package `corelib`, an app that receives
//! and sends its signals, and a `plugins/shipping` sub-project that
//! implements its hooks and declares an entry point.

use crate::common;

use serde_json::json;
use xfile::service::links::{LinkKind, StringLink};

fn tuples(pattern: &str) -> serde_json::Value {
    let service = common::open("string_links");
    json!(service.query(pattern).expect("known relation").tuples)
}

#[test]
fn receivers_and_senders_link_to_the_signal_definition_through_imports() {
    assert_eq!(
        tuples("SignalReceiver(_, _, _, _)"),
        json!([
            // `from corelib import user_saved`: re-exported by the package.
            [
                "app/receivers.py",
                "9:10",
                "corelib/signals.py",
                "user_saved"
            ],
            // `@receiver([user_saved, order_placed])`: one per signal.
            [
                "app/receivers.py",
                "14:11",
                "corelib/signals.py",
                "user_saved"
            ],
            [
                "app/receivers.py",
                "14:23",
                "corelib/signals.py",
                "order_placed"
            ],
            // Django's own signal, from outside the project.
            [
                "app/receivers.py",
                "23:10",
                "<third-party:django.db.models.signals>",
                "post_save"
            ],
        ])
    );
    assert_eq!(
        tuples("SignalSender(_, _, _, _)"),
        json!([
            ["app/senders.py", "7:15", "corelib/signals.py", "user_saved"],
            [
                "app/senders.py",
                "12:17",
                "corelib/signals.py",
                "order_placed"
            ],
            [
                "app/senders.py",
                "13:23",
                "corelib/signals.py",
                "order_placed"
            ],
        ])
    );
}

#[test]
fn a_connect_on_no_signal_or_on_a_conditionally_bound_one_links_nothing() {
    // The front end sees both `.connect` calls; the rules relate neither:
    // `audit_logged` is bound under an `if` (no `SignalDef`), `load` is a
    // function. `smtplib.SMTP.send` is not even a candidate.
    assert_eq!(
        tuples(r#"ConnectsSignal("app/receivers.py", _, _, _)"#),
        json!([
            [
                "app/receivers.py",
                "9:10",
                "corelib/__init__.py",
                "user_saved"
            ],
            [
                "app/receivers.py",
                "14:11",
                "corelib/__init__.py",
                "user_saved"
            ],
            [
                "app/receivers.py",
                "14:23",
                "corelib/signals.py",
                "order_placed"
            ],
            [
                "app/receivers.py",
                "23:10",
                "<third-party:django.db.models.signals>",
                "post_save"
            ],
            [
                "app/receivers.py",
                "24:13",
                "corelib/signals.py",
                "audit_logged"
            ],
            ["app/receivers.py", "25:5", "corelib/host.py", "load"],
        ])
    );
    assert_eq!(
        tuples("SignalDef(_, _, _)"),
        json!([
            ["corelib/signals.py", "5:0", "user_saved"],
            ["corelib/signals.py", "6:0", "order_placed"],
        ])
    );
    assert_eq!(
        tuples(r#"SendsSignal("app/senders.py", _, _, _)"#)
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}

#[test]
fn hook_implementations_link_to_specifications_by_project_and_name() {
    assert_eq!(
        tuples("HookSpec(_, _, _, _)"),
        json!([
            ["corelib/hookspecs.py", "7:5", "shop", "on_order"],
            ["corelib/hookspecs.py", "11:5", "shop", "shipping_cost"],
        ])
    );
    assert_eq!(
        tuples("HookImpl(_, _, _, _)"),
        json!([
            [
                "plugins/shipping/shipping/plugin.py",
                "7:5",
                "shop",
                "on_order"
            ],
            // `specname="shipping_cost"` names the hook, not the function.
            [
                "plugins/shipping/shipping/plugin.py",
                "11:5",
                "shop",
                "shipping_cost"
            ],
            [
                "plugins/shipping/shipping/plugin.py",
                "15:5",
                "shop",
                "on_refund"
            ],
        ])
    );
    // on_refund has no specification in the project.
    assert_eq!(
        tuples("ImplementsHook(_, _, _, _)"),
        json!([
            [
                "plugins/shipping/shipping/plugin.py",
                "7:5",
                "corelib/hookspecs.py",
                "7:5"
            ],
            [
                "plugins/shipping/shipping/plugin.py",
                "11:5",
                "corelib/hookspecs.py",
                "11:5"
            ],
        ])
    );
}

#[test]
fn entry_points_link_their_definition_and_the_hosts_that_load_their_group() {
    assert_eq!(
        tuples("EntryPointDecl(_, _, _)"),
        json!([
            // A module, no attribute: declared, but no definition to link.
            ["plugins/shipping/pyproject.toml", "shop.plugins", "rates"],
            [
                "plugins/shipping/pyproject.toml",
                "shop.plugins",
                "shipping"
            ],
            ["pyproject.toml", "shop.plugins", "audit"],
        ])
    );
    assert_eq!(
        tuples("EntryPoint(_, _, _, _, _)"),
        json!([
            [
                "plugins/shipping/pyproject.toml",
                "shop.plugins",
                "shipping",
                "plugins/shipping/shipping/plugin.py",
                "ShippingPlugin"
            ],
            [
                "pyproject.toml",
                "shop.plugins",
                "audit",
                "app/receivers.py",
                "audit_plugin"
            ],
        ])
    );
    // Every literal group, however it is looked up; `group=group_name`
    // (line 15) is not a literal and loads nothing known.
    assert_eq!(
        tuples("LoadsEntryPoints(_, _, _)"),
        json!([
            ["corelib/host.py", "10:12", "shop.plugins"],
            ["corelib/host.py", "11:12", "shop.plugins"],
            ["corelib/host.py", "12:47", "shop.exporters"],
            ["corelib/host.py", "13:13", "shop.legacy"],
            ["corelib/host.py", "14:32", "shop.pkg_resources"],
        ])
    );
    assert_eq!(
        tuples("PluginOf(_, _, _)"),
        json!([
            ["app/receivers.py", "corelib/host.py", "shop.plugins"],
            [
                "plugins/shipping/shipping/plugin.py",
                "corelib/host.py",
                "shop.plugins"
            ],
        ])
    );
    common::assert_stages_match_reference(common::open("string_links").engine());
}

fn link(kind: LinkKind, key: &str, file: &str, line: u32, context: &str) -> StringLink {
    StringLink {
        kind,
        key: key.to_string(),
        file: file.to_string(),
        line,
        context: context.to_string(),
    }
}

#[test]
fn string_links_list_every_end_with_its_key_in_file_and_line_order() {
    use LinkKind::*;
    let service = common::open("string_links");
    let receivers = "app/receivers.py";
    let shipping = "plugins/shipping/shipping/plugin.py";
    assert_eq!(
        service.string_links(),
        vec![
            link(
                SignalReceiver,
                "corelib.signals.user_saved",
                receivers,
                9,
                "@receiver(user_saved)"
            ),
            link(
                SignalReceiver,
                "corelib.signals.order_placed",
                receivers,
                14,
                r#"@receiver([user_saved, order_placed], sender="shop.Order")"#
            ),
            link(
                SignalReceiver,
                "corelib.signals.user_saved",
                receivers,
                14,
                r#"@receiver([user_saved, order_placed], sender="shop.Order")"#
            ),
            link(
                SignalReceiver,
                "django.db.models.signals.post_save",
                receivers,
                23,
                "post_save.connect(on_model_saved)"
            ),
            link(
                SignalSender,
                "corelib.signals.user_saved",
                "app/senders.py",
                7,
                "user_saved.send(sender=type(user), user=user)"
            ),
            link(
                SignalSender,
                "corelib.signals.order_placed",
                "app/senders.py",
                12,
                "order_placed.send_robust(sender=None, order=order)"
            ),
            link(
                SignalSender,
                "corelib.signals.order_placed",
                "app/senders.py",
                13,
                "await order_placed.asend(sender=None, order=order)"
            ),
            link(
                HookSpec,
                "shop.on_order",
                "corelib/hookspecs.py",
                7,
                "@hookspec"
            ),
            link(
                HookSpec,
                "shop.shipping_cost",
                "corelib/hookspecs.py",
                11,
                "@hookspec(firstresult=True)"
            ),
            link(
                EntryPointLoaded,
                "shop.plugins",
                "corelib/host.py",
                10,
                r#"manager.load_setuptools_entrypoints("shop.plugins")"#
            ),
            link(
                EntryPointLoaded,
                "shop.plugins",
                "corelib/host.py",
                11,
                r#"found = entry_points(group="shop.plugins")"#
            ),
            link(
                EntryPointLoaded,
                "shop.exporters",
                "corelib/host.py",
                12,
                r#"found += importlib.metadata.entry_points().select(group="shop.exporters")"#
            ),
            link(
                EntryPointLoaded,
                "shop.legacy",
                "corelib/host.py",
                13,
                r#"found += entry_points()["shop.legacy"]"#
            ),
            link(
                EntryPointLoaded,
                "shop.pkg_resources",
                "corelib/host.py",
                14,
                r#"found += list(pkg_resources.iter_entry_points("shop.pkg_resources"))"#
            ),
            link(
                SignalDefinition,
                "corelib.signals.user_saved",
                "corelib/signals.py",
                5,
                "user_saved = Signal()"
            ),
            link(
                SignalDefinition,
                "corelib.signals.order_placed",
                "corelib/signals.py",
                6,
                "order_placed = Signal()"
            ),
            link(
                EntryPointProvided,
                "shop.plugins",
                "plugins/shipping/pyproject.toml",
                5,
                r#"shipping = "shipping.plugin:ShippingPlugin""#
            ),
            link(
                EntryPointProvided,
                "shop.plugins",
                "plugins/shipping/pyproject.toml",
                6,
                r#"rates = "shipping.rates""#
            ),
            link(HookImpl, "shop.on_order", shipping, 7, "@hookimpl"),
            link(
                HookImpl,
                "shop.shipping_cost",
                shipping,
                11,
                r#"@hookimpl(tryfirst=True, specname="shipping_cost")"#
            ),
            link(HookImpl, "shop.on_refund", shipping, 15, "@hookimpl"),
            link(
                EntryPointProvided,
                "shop.plugins",
                "pyproject.toml",
                8,
                r#"audit = "app.receivers:audit_plugin""#
            ),
        ]
    );
}

#[test]
fn a_receiver_is_explained_down_to_the_decorator_and_the_definition() {
    let service = common::open("string_links");
    let text = service
        .explain(r#"SignalReceiver("app/receivers.py", _, _, order_placed)"#)
        .expect("valid pattern")
        .to_text();
    assert_eq!(
        text,
        r#"
SignalReceiver(app/receivers.py, 14:23, corelib/signals.py, order_placed)
  [rule rules/plugins.dl:34] SignalReceiver(f, s, df, dn) <- ConnectsSignal(f, s, m, n), SignalAt(m, n, df, dn);
  ConnectsSignal(app/receivers.py, 14:23, corelib/signals.py, order_placed)
    [base app/receivers.py:14:23] @receiver([user_saved, order_placed], sender="shop.Order")
  SignalAt(corelib/signals.py, order_placed, corelib/signals.py, order_placed)
    [rule rules/plugin_keys.dl:25] SignalAt(m, n, df, dn) <- Resolves(m, n, df, dn), SignalDef(df, _, dn);
    Resolves(corelib/signals.py, order_placed, corelib/signals.py, order_placed)
      [rule rules/resolution.dl:43] Resolves(m, n, df, dn) <- Candidate(m, n, df, dn), !Ambiguous(m, n);
      Candidate(corelib/signals.py, order_placed, corelib/signals.py, order_placed)
        [rule rules/resolution.dl:31] Candidate(m, n, m, n) <- Defines(m, n);
        Defines(corelib/signals.py, order_placed)
          [base corelib/signals.py:6] order_placed = Signal()
      !Ambiguous(corelib/signals.py, order_placed)
        [absent]
    SignalDef(corelib/signals.py, 6:0, order_placed)
      [base corelib/signals.py:6:0] order_placed = Signal()

"#
        .trim_start()
    );
    // An entry point's declaration is shown at its line of pyproject.toml.
    let text = service
        .explain(r#"EntryPoint("plugins/shipping/pyproject.toml", _, shipping, _, _)"#)
        .expect("valid pattern")
        .to_text();
    assert!(
        text.contains("    [base plugins/shipping/pyproject.toml:5] shipping = \"shipping.plugin:ShippingPlugin\"\n"),
        "{text}"
    );
}

#[test]
fn an_edited_sub_project_pyproject_relinks_its_entry_points_as_a_fresh_index_does() {
    let dir = common::copy_fixture("string_links");
    let live = xfile::service::live::Live::open(dir.path()).expect("opens");
    let pyproject = dir.path().join("plugins/shipping/pyproject.toml");
    std::fs::write(
        &pyproject,
        "[project]\nname = \"shop-shipping\"\n\n[project.entry-points.\"shop.exporters\"]\nshipping = \"shipping.plugin:ShippingPlugin\"\n",
    )
    .expect("writes");
    let report = live.apply(&[pyproject], "test").expect("applies");
    assert!(report.layout_changed);
    let plugins = |s: &xfile::service::Service| json!(s.query("PluginOf(_, _, _)").unwrap().tuples);
    let incremental = live.read(plugins);
    assert_eq!(
        incremental,
        json!([
            ["app/receivers.py", "corelib/host.py", "shop.plugins"],
            [
                "plugins/shipping/shipping/plugin.py",
                "corelib/host.py",
                "shop.exporters"
            ],
        ])
    );
    let fresh = xfile::service::Service::open(dir.path()).expect("opens");
    assert_eq!(incremental, plugins(&fresh));
    assert_eq!(live.read(|s| s.string_links()), fresh.string_links());
}
