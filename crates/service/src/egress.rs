//! One egress policy for every outbound call the service makes on behalf of
//! API users: agent endpoints (dispatch, cancel notices, progress checks,
//! message pushes, calls for proposals) and webhooks.
//!
//! The policy judges the *resolved* address, never the URL's text: each
//! [`Client`] resolves names through [`Policy`] (a reqwest DNS resolver that
//! drops refused addresses) and checks IP-literal hosts itself before sending
//! (reqwest does not ask the resolver about those; the `url` crate has already
//! normalised `2130706433`, `127.1` and `0x7f.1` to `127.0.0.1`). Redirects
//! are never followed. A refused call never connects, so its record
//! ([`REFUSED`]) cannot tell an open port from a closed one.
//!
//! The LLM planner's URL is set by the operator, not by API users, and is
//! outside this policy.

use std::{
    collections::HashMap,
    fmt,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::{Arc, RwLock},
    time::Duration,
};

use ipnet::IpNet;
use reqwest::Url;

/// What a refused call records (delivery log, attempt error).
pub const REFUSED: &str = "refused by egress policy";

/// How long registration waits for a name to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

/// The cloud metadata service (AWS, GCP, Azure, …).
const METADATA_V4: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
/// AWS's IPv6 metadata address.
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);

/// The kind of an address, as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `0.0.0.0/8`, `::` (connecting to them reaches this host on Linux).
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918, shared `100.64.0.0/10`, ULA `fc00::/7`, site-local `fec0::/10`.
    Private,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// `169.254.169.254`, `fd00:ec2::254`.
    Metadata,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// Documentation, benchmarking, reserved and other special-purpose ranges.
    Reserved,
    /// Everything else: the public Internet.
    Public,
}

impl Class {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Class::Unspecified => "unspecified",
            Class::Loopback => "loopback",
            Class::Private => "private",
            Class::LinkLocal => "link-local",
            Class::Metadata => "cloud metadata",
            Class::Multicast => "multicast",
            Class::Broadcast => "broadcast",
            Class::Reserved => "reserved",
            Class::Public => "public",
        }
    }
}

/// `ip` with an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) turned into its
/// IPv4 address: the kernel connects to that IPv4 address.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The class of `ip` (IPv4-mapped addresses are judged as their IPv4 address).
pub fn classify(ip: IpAddr) -> Class {
    match canonical(ip) {
        IpAddr::V4(a) => classify_v4(a),
        IpAddr::V6(a) => classify_v6(a),
    }
}

fn classify_v4(a: Ipv4Addr) -> Class {
    let o = a.octets();
    if a == METADATA_V4 {
        Class::Metadata
    } else if o[0] == 0 {
        Class::Unspecified
    } else if a.is_loopback() {
        Class::Loopback
    } else if a.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64) {
        Class::Private
    } else if a.is_link_local() {
        Class::LinkLocal
    } else if a.is_broadcast() {
        Class::Broadcast
    } else if a.is_multicast() {
        Class::Multicast
    } else if o[0] >= 240
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        || a.is_documentation()
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
    {
        Class::Reserved
    } else {
        Class::Public
    }
}

fn classify_v6(a: Ipv6Addr) -> Class {
    let s = a.segments();
    if a == METADATA_V6 {
        Class::Metadata
    } else if a.is_unspecified() {
        Class::Unspecified
    } else if a.is_loopback() {
        Class::Loopback
    } else if a.is_multicast() {
        Class::Multicast
    } else if (s[0] & 0xffc0) == 0xfe80 {
        Class::LinkLocal
    } else if (s[0] & 0xfe00) == 0xfc00 || (s[0] & 0xffc0) == 0xfec0 {
        Class::Private
    } else if let Some(v4) = embedded_v4(a) {
        // NAT64 and 6to4 reach the embedded IPv4 address: judge that one.
        classify_v4(v4)
    } else if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        // Local-use NAT64 (RFC 8215): translated inside the operator's network.
        Class::Private
    } else if s[0] == 0
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || (s[0] == 0x2001 && s[1] == 0)
        || (s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0)
    {
        // IPv4-compatible and other `::/16` forms, documentation, Teredo, discard-only.
        Class::Reserved
    } else {
        Class::Public
    }
}

/// The IPv4 address inside a NAT64 (`64:ff9b::/96`) or 6to4 (`2002::/16`) address.
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    let pair = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(pair(s[6], s[7]))
    } else if s[0] == 0x2002 {
        Some(pair(s[1], s[2]))
    } else {
        None
    }
}

/// Parses a comma-separated CIDR list (`127.0.0.0/8,::1/128`); a bare
/// address means that one address. Empty text is an empty list.
pub fn parse_networks(text: &str) -> Result<Vec<IpNet>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<IpNet>()
                .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                .map(|n| n.trunc())
                .map_err(|_| format!("{s:?} is not a CIDR network (e.g. 10.0.0.0/8 or fd00::/8)"))
        })
        .collect()
}

/// The default agent networks: loopback, so the quick start and the
/// embedded mode work out of the box.
pub fn default_agent_networks() -> Vec<IpNet> {
    parse_networks("127.0.0.0/8,::1/128").unwrap_or_default()
}

/// Names with fixed addresses, consulted before DNS: a stub for tests (a
/// name that resolves one way at registration and another at dispatch).
/// Empty in production. Clones share the same table.
#[derive(Debug, Clone, Default)]
pub struct Hosts(Arc<RwLock<HashMap<String, Vec<IpAddr>>>>);

impl Hosts {
    /// Makes `name` resolve to `addrs` from now on.
    pub fn set(&self, name: &str, addrs: Vec<IpAddr>) {
        let mut map = self.0.write().unwrap_or_else(|p| p.into_inner());
        map.insert(name.to_ascii_lowercase(), addrs);
    }

    fn get(&self, name: &str) -> Option<Vec<IpAddr>> {
        let map = self.0.read().unwrap_or_else(|p| p.into_inner());
        map.get(&name.to_ascii_lowercase()).cloned()
    }
}

/// The egress settings of a service (`--agent-networks`, `--webhook-networks`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Networks agent endpoints may be in (default: loopback).
    pub agent_networks: Vec<IpNet>,
    /// Networks webhooks may reach besides public addresses (default: none).
    pub webhook_networks: Vec<IpNet>,
    /// Fixed name → addresses, for tests; empty otherwise.
    pub hosts: Hosts,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            agent_networks: default_agent_networks(),
            webhook_networks: Vec::new(),
            hosts: Hosts::default(),
        }
    }
}

/// Why a URL or an address is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The address is outside the policy.
    #[error("{REFUSED}")]
    Refused,
    /// The name has no address.
    #[error("the name does not resolve")]
    Unresolved,
}

/// Which addresses one purpose (agent endpoints, webhooks) may reach.
#[derive(Debug, Clone)]
pub struct Policy {
    /// `agent endpoint` or `webhook`, for messages.
    purpose: &'static str,
    /// The flag that widens it, for messages.
    flag: &'static str,
    /// Public addresses are allowed without being listed.
    public: bool,
    /// Networks the operator listed.
    networks: Vec<IpNet>,
    hosts: Hosts,
}

impl Policy {
    /// Agent endpoints: only the listed networks.
    pub fn agents(networks: Vec<IpNet>, hosts: Hosts) -> Self {
        Policy {
            purpose: "agent endpoint",
            flag: "--agent-networks",
            public: false,
            networks,
            hosts,
        }
    }

    /// Webhooks: public addresses, plus the listed networks.
    pub fn webhooks(extra: Vec<IpNet>, hosts: Hosts) -> Self {
        Policy {
            purpose: "webhook",
            flag: "--webhook-networks",
            public: true,
            networks: extra,
            hosts,
        }
    }

    /// Whether a connection to `ip` is allowed. Link-local addresses need a
    /// listed network inside the link-local range, the metadata address
    /// needs itself listed (so `0.0.0.0/0` admits neither); unspecified,
    /// multicast and broadcast addresses are never allowed.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        let class = classify(ip);
        let mut listed = self.networks.iter().filter(|n| n.contains(&ip));
        match class {
            Class::Unspecified | Class::Multicast | Class::Broadcast => false,
            Class::Metadata => listed.any(|n| n.prefix_len() == n.max_prefix_len()),
            Class::LinkLocal => {
                let range: IpNet = match ip {
                    IpAddr::V4(_) => IpNet::V4(ipnet::Ipv4Net::new_assert(
                        Ipv4Addr::new(169, 254, 0, 0),
                        16,
                    )),
                    IpAddr::V6(_) => IpNet::V6(ipnet::Ipv6Net::new_assert(
                        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
                        10,
                    )),
                };
                listed.any(|n| range.contains(n))
            }
            Class::Public => self.public || listed.next().is_some(),
            Class::Loopback | Class::Private | Class::Reserved => listed.next().is_some(),
        }
    }

    /// What the policy allows, for messages.
    fn describe(&self) -> String {
        let listed: Vec<String> = self.networks.iter().map(ToString::to_string).collect();
        match (self.public, listed.is_empty()) {
            (true, true) => "public addresses only".to_owned(),
            (true, false) => format!("public addresses and {}", listed.join(", ")),
            (false, true) => "no networks".to_owned(),
            (false, false) => listed.join(", "),
        }
    }

    /// The message for a refused address.
    fn refusal(&self, what: &str, ip: IpAddr) -> String {
        format!(
            "{what} is a {} address, outside the {} egress policy ({}; see {})",
            classify(ip).name(),
            self.purpose,
            self.describe(),
            self.flag
        )
    }

    /// The addresses of `host`: the test stub first, then the system resolver.
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        if let Some(fixed) = self.hosts.get(host) {
            return Ok(fixed);
        }
        let found = tokio::net::lookup_host((host, 0)).await?;
        Ok(found.map(|a| a.ip()).collect())
    }

    /// Resolves `host` for a connection: only allowed addresses come back;
    /// none allowed is a refusal.
    pub async fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, Refusal> {
        let all = self.lookup(host).await.map_err(|_| Refusal::Unresolved)?;
        if all.is_empty() {
            return Err(Refusal::Unresolved);
        }
        let allowed: Vec<IpAddr> = all.into_iter().filter(|ip| self.allows(*ip)).collect();
        if allowed.is_empty() {
            Err(Refusal::Refused)
        } else {
            Ok(allowed)
        }
    }

    /// Checks a URL's host at registration: an IP literal at once, a name
    /// by resolving it (within [`RESOLVE_TIMEOUT`]); refused when none of
    /// its addresses is allowed. The error says why.
    pub async fn admit(&self, url: &Url) -> Result<(), String> {
        let Some(host) = url.host_str() else {
            return Err("the URL has no host".to_owned());
        };
        if let Some(ip) = literal(url) {
            return if self.allows(ip) {
                Ok(())
            } else {
                Err(self.refusal(host, ip))
            };
        }
        let found = tokio::time::timeout(RESOLVE_TIMEOUT, self.lookup(host))
            .await
            .map_err(|_| {
                format!(
                    "{host} did not resolve within {} s",
                    RESOLVE_TIMEOUT.as_secs()
                )
            })?
            .map_err(|_| format!("{host} does not resolve"))?;
        match found.first() {
            None => Err(format!("{host} does not resolve")),
            Some(_) if found.iter().any(|ip| self.allows(*ip)) => Ok(()),
            Some(first) => Err(self.refusal(&format!("{host} resolves to {first}, which"), *first)),
        }
    }
}

/// The IP address of a URL whose host is an IP literal (already normalised
/// by the URL parser: `2130706433` is `127.0.0.1`).
fn literal(url: &Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// The reqwest resolver of a [`Client`]: answers only allowed addresses.
struct Resolver(Arc<Policy>);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let ips = policy.resolve(&host).await?;
            let addrs: reqwest::dns::Addrs =
                Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// An HTTP client bound to one policy: every request it sends is checked,
/// and it follows no redirects.
#[derive(Clone)]
pub struct Client {
    inner: reqwest::Client,
    policy: Arc<Policy>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("policy", &self.policy)
            .finish()
    }
}

impl Client {
    /// A client for `policy`.
    pub fn new(policy: Policy) -> Result<Client, reqwest::Error> {
        let policy = Arc::new(policy);
        let inner = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(Duration::from_secs(30))
            // A 302/307 would take the request somewhere the policy never saw.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve the target itself, out of the policy's sight.
            .no_proxy()
            .dns_resolver(Resolver(policy.clone()))
            .build()?;
        Ok(Client { inner, policy })
    }

    /// The agent client with the default networks (loopback).
    pub fn default_agents() -> Client {
        let policy = Policy::agents(default_agent_networks(), Hosts::default());
        // Building fails only when the TLS backend cannot start, which
        // `reqwest::Client::new` treats as fatal too.
        Client::new(policy).unwrap_or_else(|e| panic!("cannot build the HTTP client: {e}"))
    }

    /// The policy this client applies.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Whether a request to `url` may be sent: an IP-literal host is judged
    /// here (names are judged by the resolver when connecting).
    pub fn check(&self, url: &Url) -> Result<(), Refusal> {
        match literal(url) {
            Some(ip) if !self.policy.allows(ip) => Err(Refusal::Refused),
            _ => Ok(()),
        }
    }

    /// A POST to `url`, refused at `send` if the policy forbids it.
    pub fn post(&self, url: &str) -> RequestBuilder {
        self.request(reqwest::Method::POST, url)
    }

    /// A GET of `url`, refused at `send` if the policy forbids it.
    pub fn get(&self, url: &str) -> RequestBuilder {
        self.request(reqwest::Method::GET, url)
    }

    fn request(&self, method: reqwest::Method, url: &str) -> RequestBuilder {
        let inner = match Url::parse(url) {
            Ok(parsed) => match self.check(&parsed) {
                Ok(()) => Ok(self.inner.request(method, parsed)),
                Err(_) => Err(SendError::Refused),
            },
            Err(e) => Err(SendError::BadUrl(e.to_string())),
        };
        RequestBuilder { inner }
    }
}

/// Why a request was not answered.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The egress policy refused the address; nothing was sent.
    #[error("{REFUSED}")]
    Refused,
    /// The URL does not parse.
    #[error("invalid URL: {0}")]
    BadUrl(String),
    /// The request failed.
    #[error(transparent)]
    Http(reqwest::Error),
}

impl SendError {
    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendError::Http(e) if e.is_timeout())
    }
}

impl From<reqwest::Error> for SendError {
    fn from(e: reqwest::Error) -> Self {
        // The resolver's refusal comes back wrapped in connect errors.
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(err) = source {
            if matches!(err.downcast_ref::<Refusal>(), Some(Refusal::Refused)) {
                return SendError::Refused;
            }
            source = err.source();
        }
        SendError::Http(e)
    }
}

/// A request being built by a [`Client`] (the subset of reqwest's the service uses).
pub struct RequestBuilder {
    inner: Result<reqwest::RequestBuilder, SendError>,
}

impl RequestBuilder {
    fn map(self, f: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder) -> Self {
        RequestBuilder {
            inner: self.inner.map(f),
        }
    }

    /// Per-request timeout.
    pub fn timeout(self, timeout: Duration) -> Self {
        self.map(|b| b.timeout(timeout))
    }

    /// Adds a header.
    pub fn header(self, key: &str, value: &str) -> Self {
        self.map(|b| b.header(key, value))
    }

    /// Adds headers.
    pub fn headers(self, headers: reqwest::header::HeaderMap) -> Self {
        self.map(|b| b.headers(headers))
    }

    /// A JSON body.
    pub fn json<T: serde::Serialize + ?Sized>(self, body: &T) -> Self {
        self.map(|b| b.json(body))
    }

    /// A raw body.
    pub fn body(self, body: Vec<u8>) -> Self {
        self.map(|b| b.body(body))
    }

    /// Sends the request, unless the policy refused it.
    pub async fn send(self) -> Result<reqwest::Response, SendError> {
        Ok(self.inner?.send().await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    fn nets(s: &str) -> Vec<IpNet> {
        parse_networks(s).expect("networks")
    }

    #[test]
    fn addresses_are_classified() {
        for (addr, class) in [
            ("127.0.0.1", Class::Loopback),
            ("127.255.0.9", Class::Loopback),
            ("::1", Class::Loopback),
            ("10.1.2.3", Class::Private),
            ("172.16.0.1", Class::Private),
            ("192.168.1.1", Class::Private),
            ("100.64.0.1", Class::Private),
            ("fd12::1", Class::Private),
            ("169.254.1.1", Class::LinkLocal),
            ("fe80::1", Class::LinkLocal),
            ("169.254.169.254", Class::Metadata),
            ("fd00:ec2::254", Class::Metadata),
            ("0.0.0.0", Class::Unspecified),
            ("0.1.2.3", Class::Unspecified),
            ("::", Class::Unspecified),
            ("224.0.0.1", Class::Multicast),
            ("ff02::1", Class::Multicast),
            ("255.255.255.255", Class::Broadcast),
            ("192.0.2.1", Class::Reserved),
            ("2001:db8::1", Class::Reserved),
            ("240.0.0.1", Class::Reserved),
            ("8.8.8.8", Class::Public),
            ("2606:4700::1111", Class::Public),
            // IPv4-mapped IPv6 is its IPv4 address.
            ("::ffff:127.0.0.1", Class::Loopback),
            ("::ffff:169.254.169.254", Class::Metadata),
            ("::ffff:8.8.8.8", Class::Public),
            // NAT64 and 6to4 are judged by the embedded IPv4 address.
            ("64:ff9b::7f00:1", Class::Loopback),
            ("64:ff9b::a9fe:a9fe", Class::Metadata),
            ("2002:c0a8:0101::1", Class::Private),
            ("2002:0808:0808::1", Class::Public),
            // IPv4-compatible (deprecated) is not public.
            ("::7f00:1", Class::Reserved),
        ] {
            assert_eq!(classify(ip(addr)), class, "{addr}");
        }
    }

    #[test]
    fn webhooks_reach_public_addresses_only_by_default() {
        let p = Policy::webhooks(Vec::new(), Hosts::default());
        assert!(p.allows(ip("8.8.8.8")) && p.allows(ip("2606:4700::1111")));
        for refused in [
            "127.0.0.1",
            "::1",
            "::ffff:127.0.0.1",
            "10.0.0.1",
            "169.254.169.254",
            "fd00:ec2::254",
            "169.254.10.1",
            "fe80::1",
            "0.0.0.0",
            "::",
            "64:ff9b::7f00:1",
            "2002:7f00:1::1",
        ] {
            assert!(!p.allows(ip(refused)), "{refused}");
        }
        let p = Policy::webhooks(nets("127.0.0.2/32"), Hosts::default());
        assert!(p.allows(ip("127.0.0.2")) && p.allows(ip("::ffff:127.0.0.2")));
        assert!(!p.allows(ip("127.0.0.1")));
    }

    #[test]
    fn agents_reach_only_listed_networks() {
        let p = Policy::agents(default_agent_networks(), Hosts::default());
        assert!(p.allows(ip("127.0.0.1")) && p.allows(ip("::1")) && p.allows(ip("127.9.9.9")));
        assert!(!p.allows(ip("8.8.8.8")) && !p.allows(ip("10.0.0.1")));
        let p = Policy::agents(nets("10.42.0.0/16"), Hosts::default());
        assert!(p.allows(ip("10.42.3.4")) && !p.allows(ip("10.43.0.1")));
        assert!(!p.allows(ip("127.0.0.1")));
    }

    #[test]
    fn everything_listed_still_keeps_out_metadata_and_link_local() {
        let p = Policy::agents(nets("0.0.0.0/0,::/0"), Hosts::default());
        assert!(p.allows(ip("8.8.8.8")) && p.allows(ip("10.0.0.1")) && p.allows(ip("::1")));
        for refused in [
            "169.254.169.254",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
            "169.254.1.1",
            "fe80::1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!p.allows(ip(refused)), "{refused}");
        }
        // Link-local needs its own range listed; metadata needs itself.
        let p = Policy::agents(nets("169.254.0.0/16"), Hosts::default());
        assert!(p.allows(ip("169.254.1.1")) && !p.allows(ip("169.254.169.254")));
        let p = Policy::agents(nets("169.254.169.254/32"), Hosts::default());
        assert!(p.allows(ip("169.254.169.254")) && !p.allows(ip("169.254.1.1")));
    }

    #[test]
    fn networks_parse_as_cidr_lists() {
        assert_eq!(
            nets(" 10.0.0.0/8, ::1/128 ,192.168.1.7"),
            vec![
                "10.0.0.0/8".parse::<IpNet>().expect("net"),
                "::1/128".parse().expect("net"),
                "192.168.1.7/32".parse().expect("net"),
            ]
        );
        assert_eq!(nets(""), Vec::<IpNet>::new());
        // Host bits are dropped: 10.1.2.3/8 means 10.0.0.0/8.
        assert_eq!(nets("10.1.2.3/8"), nets("10.0.0.0/8"));
        assert!(parse_networks("10.0.0.0/33").is_err());
        assert!(parse_networks("pod-network").is_err());
    }

    #[test]
    fn ip_literals_are_judged_after_the_parser_normalises_them() {
        let client = Client::new(Policy::webhooks(Vec::new(), Hosts::default())).expect("client");
        for url in [
            "http://127.0.0.1:9/",
            "http://2130706433:9/",
            "http://127.1:9/",
            "http://0x7f.1/",
            "http://[::1]:9/",
            "http://[::ffff:7f00:1]/",
            "http://169.254.169.254/latest/meta-data",
            "http://0/",
        ] {
            let parsed = Url::parse(url).expect("url");
            assert_eq!(client.check(&parsed), Err(Refusal::Refused), "{url}");
        }
        let public = Url::parse("http://8.8.8.8/").expect("url");
        assert_eq!(client.check(&public), Ok(()));
    }

    #[tokio::test]
    async fn names_resolve_through_the_policy() {
        let hosts = Hosts::default();
        hosts.set("worker.test", vec![ip("127.0.0.1")]);
        let p = Policy::agents(nets("127.0.0.1/32"), hosts.clone());
        assert_eq!(p.resolve("worker.test").await, Ok(vec![ip("127.0.0.1")]));
        let url = Url::parse("http://worker.test:9").expect("url");
        assert_eq!(p.admit(&url).await, Ok(()));
        hosts.set("worker.test", vec![ip("127.0.0.2")]);
        assert_eq!(p.resolve("worker.test").await, Err(Refusal::Refused));
        let why = p.admit(&url).await.expect_err("refused");
        assert!(
            why.contains("resolves to 127.0.0.2") && why.contains("--agent-networks"),
            "{why}"
        );
        // Allowed addresses are kept, refused ones dropped.
        hosts.set("worker.test", vec![ip("127.0.0.2"), ip("127.0.0.1")]);
        assert_eq!(p.resolve("worker.test").await, Ok(vec![ip("127.0.0.1")]));
        hosts.set("worker.test", Vec::new());
        assert_eq!(p.resolve("worker.test").await, Err(Refusal::Unresolved));
    }
}
