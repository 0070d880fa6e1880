//! `DATABASE_URL`s that name several servers, in libpq's multi-host form:
//! `postgres://user:pw@h1:5432,h2:5432/db?target_session_attrs=read-write`.
//! sqlx takes one host per URL, so the list is split here into one set of
//! connect options per server; [`super::follow`] keeps the pool on the
//! writable one.

use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;

/// Which server of the list the coordinator may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAttrs {
    /// The first that accepts a connection (libpq's `any`).
    Any,
    /// Only one that is not in recovery and not read-only (libpq's
    /// `read-write` and `primary`): the coordinator writes on every path.
    ReadWrite,
}

/// The servers of a `DATABASE_URL`, in the order given.
#[derive(Debug, Clone)]
pub struct Servers {
    /// One set of connect options per listed host.
    pub options: Vec<PgConnectOptions>,
    /// Which of them may be used.
    pub attrs: SessionAttrs,
}

impl Servers {
    /// Parses a one- or many-host PostgreSQL URL. `target_session_attrs`
    /// defaults to `any` for one host (as libpq) and to `read-write` for a
    /// list: a list is there for failover, and only the primary takes writes.
    pub fn parse(url: &str) -> Result<Servers, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| "expected postgres://… or postgresql://…".to_owned())?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (userinfo, hostlist) = match authority.rfind('@') {
            Some(at) => authority.split_at(at + 1),
            None => ("", authority),
        };
        let (tail, attrs) = take_session_attrs(tail)?;
        let hosts: Vec<&str> = hostlist.split(',').collect();
        if hosts.len() > 1 && hosts.iter().any(|h| h.is_empty()) {
            return Err(format!("the host list {hostlist:?} has an empty entry"));
        }
        let options = hosts
            .iter()
            .map(|host| {
                PgConnectOptions::from_str(&format!("{scheme}://{userinfo}{host}{tail}"))
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<_>, _>>()?;
        let attrs = attrs.unwrap_or(if options.len() > 1 {
            SessionAttrs::ReadWrite
        } else {
            SessionAttrs::Any
        });
        Ok(Servers { options, attrs })
    }

    /// More than one server: the pool must follow the primary.
    pub fn is_list(&self) -> bool {
        self.options.len() > 1
    }
}

/// `tail` (path, query, fragment) without `target_session_attrs`, and its value.
fn take_session_attrs(tail: &str) -> Result<(String, Option<SessionAttrs>), String> {
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, query),
        None => return Ok((tail.to_owned(), None)),
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let mut attrs = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("target_session_attrs", value)) => {
                attrs = Some(match value {
                    "any" => SessionAttrs::Any,
                    "read-write" | "primary" => SessionAttrs::ReadWrite,
                    other => {
                        return Err(format!(
                            "target_session_attrs={other} is not supported: the coordinator \
                             writes, so use read-write (or primary, the same here) or any"
                        ));
                    }
                })
            }
            _ => kept.push(pair),
        }
    }
    let mut out = path.to_owned();
    if !kept.is_empty() {
        out.push('?');
        out.push_str(&kept.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    Ok((out, attrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(s: &Servers) -> Vec<(String, u16)> {
        s.options
            .iter()
            .map(|o| (o.get_host().to_owned(), o.get_port()))
            .collect()
    }

    #[test]
    fn one_host_is_what_sqlx_reads_and_any_server_will_do() {
        let s = Servers::parse("postgres://alice:pw@db:6543/orders?sslmode=disable").expect("url");
        assert_eq!(hosts(&s), [("db".to_owned(), 6543)]);
        assert_eq!(s.attrs, SessionAttrs::Any);
        assert!(!s.is_list());
        assert_eq!(s.options[0].get_database(), Some("orders"));
    }

    #[test]
    fn a_list_splits_into_servers_sharing_user_database_and_parameters() {
        let s = Servers::parse(
            "postgresql://alice:p%40ss@10.0.0.1:5432,10.0.0.2,[::1]:6000/orders?application_name=x&target_session_attrs=read-write",
        )
        .expect("url");
        assert_eq!(
            hosts(&s),
            [
                ("10.0.0.1".to_owned(), 5432),
                ("10.0.0.2".to_owned(), 5432),
                ("[::1]".to_owned(), 6000)
            ]
        );
        assert_eq!(s.attrs, SessionAttrs::ReadWrite);
        assert!(s.is_list());
        for o in &s.options {
            assert_eq!(o.get_database(), Some("orders"));
            assert_eq!(o.get_username(), "alice");
            assert_eq!(o.get_application_name(), Some("x"));
        }
    }

    #[test]
    fn a_list_defaults_to_the_writable_server_and_any_can_be_asked_for() {
        let s = Servers::parse("postgres://u@a:1,b:2/db").expect("url");
        assert_eq!(s.attrs, SessionAttrs::ReadWrite);
        let s = Servers::parse("postgres://u@a:1,b:2/db?target_session_attrs=any").expect("url");
        assert_eq!(s.attrs, SessionAttrs::Any);
        let s = Servers::parse("postgres://u@a/db?target_session_attrs=primary").expect("url");
        assert_eq!(s.attrs, SessionAttrs::ReadWrite);
    }

    #[test]
    fn session_attrs_the_coordinator_cannot_use_and_empty_hosts_are_refused() {
        for attrs in ["read-only", "standby", "prefer-standby", "bogus"] {
            let e = Servers::parse(&format!("postgres://u@a,b/db?target_session_attrs={attrs}"))
                .expect_err(attrs);
            assert!(e.contains(attrs), "{e}");
        }
        assert!(Servers::parse("postgres://u@a,,b/db").is_err());
        assert!(Servers::parse("db.example:5432").is_err());
        assert!(Servers::parse("postgres://u@a:notaport,b/db").is_err());
    }

    #[test]
    fn the_parameter_is_taken_out_wherever_it_stands() {
        let (tail, attrs) =
            take_session_attrs("/db?a=1&target_session_attrs=any&b=2#frag").expect("tail");
        assert_eq!(tail, "/db?a=1&b=2#frag");
        assert_eq!(attrs, Some(SessionAttrs::Any));
        let (tail, attrs) = take_session_attrs("/db?target_session_attrs=read-write").expect("t");
        assert_eq!(tail, "/db");
        assert_eq!(attrs, Some(SessionAttrs::ReadWrite));
        assert_eq!(
            take_session_attrs("/db").expect("t"),
            ("/db".to_owned(), None)
        );
    }
}
