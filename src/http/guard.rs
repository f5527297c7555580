//! Only this machine's names reach the HTTP side (against DNS
//! rebinding): a web page at `http://attacker.example:3456/`, once its name
//! resolves to 127.0.0.1, would otherwise read the dashboard's JSON as
//! same-origin. Every request must name the server in `Host` by a loopback
//! name (`localhost`, `127.0.0.1`, `[::1]`, any port) or by the address it
//! listens on (any address literal when it listens on all of them: an
//! address cannot be rebound, a name can); an `Origin`, when sent, must be
//! that same `http://` host. Anything else gets 403 and a one-line reason.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The address the server listens on, which names it too.
#[derive(Clone, Copy, Debug)]
pub(super) struct Allowed {
    pub bound: SocketAddr,
}

/// Why a request was refused (the whole 403 body).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Foreign {
    NoHost,
    Host,
    Origin,
}

impl Foreign {
    fn reason(&self, bound: SocketAddr) -> String {
        let what = match self {
            Foreign::NoHost => "no Host header",
            Foreign::Host => "the Host header names another server",
            Foreign::Origin => "the request comes from another site (Origin)",
        };
        format!(
            "forbidden: {what}; open the dashboard at http://localhost:{}/\n",
            bound.port()
        )
    }
}

impl Allowed {
    /// Whether `host` (`name[:port]`, `[v6][:port]`) names this server.
    fn host(&self, host: &str) -> bool {
        let Some((name, port)) = split_port(host) else {
            return false;
        };
        if port.is_some_and(|p| p.parse::<u16>().is_err()) {
            return false;
        }
        if name.eq_ignore_ascii_case("localhost") {
            return true;
        }
        let ip = match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
            Some(v6) => v6.parse::<std::net::Ipv6Addr>().map(IpAddr::V6),
            None => name.parse::<std::net::Ipv4Addr>().map(IpAddr::V4),
        };
        let Ok(ip) = ip else {
            return false;
        };
        ip.is_loopback() || ip == self.bound.ip() || self.bound.ip().is_unspecified()
    }

    /// Whether a request with these headers (and target) may be answered.
    pub fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Foreign> {
        let host = match headers.get(header::HOST) {
            Some(value) => value.to_str().map_err(|_| Foreign::Host)?,
            None => return Err(Foreign::NoHost),
        };
        if headers.get_all(header::HOST).iter().count() > 1 || !self.host(host) {
            return Err(Foreign::Host);
        }
        // An absolute target (`GET http://name/ HTTP/1.1`) names a host too.
        if uri.authority().is_some_and(|a| !self.host(a.as_str())) {
            return Err(Foreign::Host);
        }
        for origin in headers.get_all(header::ORIGIN) {
            let same = origin
                .to_str()
                .ok()
                .and_then(|o| o.strip_prefix("http://"))
                .is_some_and(|o| o.eq_ignore_ascii_case(host));
            if !same {
                return Err(Foreign::Origin);
            }
        }
        Ok(())
    }
}

/// `name` and the port after it, if any; `None` when malformed.
fn split_port(host: &str) -> Option<(&str, Option<&str>)> {
    if host.is_empty() {
        return None;
    }
    if host.starts_with('[') {
        let end = host.find(']')?;
        let (name, rest) = host.split_at(end + 1);
        return match rest {
            "" => Some((name, None)),
            _ => Some((name, Some(rest.strip_prefix(':')?))),
        };
    }
    match host.split_once(':') {
        Some((name, port)) => Some((name, Some(port))),
        None => Some((host, None)),
    }
}

/// The middleware: a request that does not name this server gets 403.
pub(super) async fn guard(
    State(allowed): State<Allowed>,
    request: Request,
    next: Next,
) -> Response {
    match allowed.check(request.headers(), request.uri()) {
        Ok(()) => next.run(request).await,
        Err(foreign) => (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            foreign.reason(allowed.bound),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    fn verdict(bound: &str, pairs: &[(&str, &str)]) -> Result<(), Foreign> {
        let allowed = Allowed {
            bound: bound.parse().unwrap(),
        };
        allowed.check(&headers(pairs), &Uri::from_static("/api/warnings"))
    }

    #[test]
    fn only_loopback_names_and_the_bound_address_are_hosts_dns_rebinding() {
        let local = "127.0.0.1:3456";
        for host in [
            "localhost",
            "LOCALHOST:3456",
            "127.0.0.1",
            "127.0.0.1:3456",
            "127.0.0.2:80",
            "[::1]",
            "[::1]:3456",
        ] {
            assert_eq!(verdict(local, &[("host", host)]), Ok(()), "{host}");
        }
        for host in [
            "rebind.attacker.example:3456",
            "rebind.attacker.example",
            "localhost.attacker.example",
            "127.0.0.1.nip.io:3456",
            "10.0.0.5:3456",
            "localhost:port",
            "[::1",
            "",
        ] {
            assert_eq!(
                verdict(local, &[("host", host)]),
                Err(Foreign::Host),
                "{host}"
            );
        }
        assert_eq!(verdict(local, &[]), Err(Foreign::NoHost));
        assert_eq!(
            verdict(local, &[("host", "localhost"), ("host", "evil.example")]),
            Err(Foreign::Host)
        );
        // Listening on one address: that address; on all: any address.
        assert_eq!(verdict("10.0.0.5:80", &[("host", "10.0.0.5")]), Ok(()));
        assert_eq!(
            verdict("10.0.0.5:80", &[("host", "10.0.0.6")]),
            Err(Foreign::Host)
        );
        assert_eq!(verdict("0.0.0.0:80", &[("host", "192.168.1.9:80")]), Ok(()));
        assert_eq!(
            verdict("0.0.0.0:80", &[("host", "files.example:80")]),
            Err(Foreign::Host)
        );
    }

    #[test]
    fn an_origin_must_be_the_host_itself() {
        let local = "127.0.0.1:3456";
        let host = ("host", "127.0.0.1:3456");
        assert_eq!(
            verdict(local, &[host, ("origin", "http://127.0.0.1:3456")]),
            Ok(())
        );
        for origin in [
            "http://rebind.attacker.example:3456",
            "http://localhost:8080",
            "https://127.0.0.1:3456",
            "null",
        ] {
            assert_eq!(
                verdict(local, &[host, ("origin", origin)]),
                Err(Foreign::Origin),
                "{origin}"
            );
        }
    }

    #[test]
    fn an_absolute_target_must_name_this_server_too() {
        let allowed = Allowed {
            bound: "127.0.0.1:3456".parse().unwrap(),
        };
        let host = headers(&[("host", "localhost:3456")]);
        let foreign: Uri = "http://evil.example/api/warnings".parse().unwrap();
        assert_eq!(allowed.check(&host, &foreign), Err(Foreign::Host));
        let own: Uri = "http://localhost:3456/health".parse().unwrap();
        assert_eq!(allowed.check(&host, &own), Ok(()));
    }
}
