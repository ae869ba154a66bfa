//! The private-network guard: which hosts and addresses a model-chosen URL may
//! reach. Everything here is a pure function over URLs and addresses; the
//! fetcher applies it to the URL's host before a request, and to every address
//! a name resolves to (see `fetch::GuardedResolver`), so the connection goes
//! only to an address that was checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// The blocked range an address falls in, named for the error message
/// (`"loopback 127.0.0.0/8"`), or `None` for a public address.
///
/// IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4,
/// Teredo) are judged by the address they embed, so `::ffff:127.0.0.1` is
/// loopback however it is written.
pub fn blocked_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let range = match (a, b, c) {
        (0, ..) => "\"this network\" 0.0.0.0/8",
        (10, ..) => "private 10.0.0.0/8",
        (100, 64..=127, _) => "shared address space (CGNAT) 100.64.0.0/10",
        (127, ..) => "loopback 127.0.0.0/8",
        (169, 254, _) => "link-local 169.254.0.0/16 (cloud metadata lives here)",
        (172, 16..=31, _) => "private 172.16.0.0/12",
        (192, 0, 0) => "IETF protocol assignments 192.0.0.0/24",
        (192, 0, 2) => "documentation 192.0.2.0/24",
        (192, 88, 99) => "6to4 relay anycast 192.88.99.0/24",
        (192, 168, _) => "private 192.168.0.0/16",
        (198, 18..=19, _) => "benchmarking 198.18.0.0/15",
        (198, 51, 100) => "documentation 198.51.100.0/24",
        (203, 0, 113) => "documentation 203.0.113.0/24",
        (224..=239, ..) => "multicast 224.0.0.0/4",
        (255, 255, 255) if ip == Ipv4Addr::BROADCAST => "broadcast 255.255.255.255",
        (240..=255, ..) => "reserved 240.0.0.0/4",
        _ => return None,
    };
    Some(range)
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded = |high: u32| Ipv4Addr::from(high);
    let low32 = (u32::from(s[6]) << 16) | u32::from(s[7]);
    if ip.is_unspecified() {
        return Some("unspecified ::/128");
    }
    if ip.is_loopback() {
        return Some("loopback ::1/128");
    }
    // Forms that carry an IPv4 address: judged by it.
    let carried = match s {
        [0, 0, 0, 0, 0, 0xffff, ..] => Some(("IPv4-mapped ::ffff:0:0/96", embedded(low32))),
        [0, 0, 0, 0, 0xffff, 0, ..] => Some(("IPv4-translated ::ffff:0:0:0/96", embedded(low32))),
        [0, 0, 0, 0, 0, 0, ..] => Some(("IPv4-compatible ::/96", embedded(low32))),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(("NAT64 64:ff9b::/96", embedded(low32))),
        [0x64, 0xff9b, 1, ..] => Some(("local-use NAT64 64:ff9b:1::/48", embedded(low32))),
        [0x2002, ..] => Some(("6to4 2002::/16", embedded((u32::from(s[1]) << 16) | u32::from(s[2])))),
        // Teredo: the client's address is stored inverted in the low 32 bits.
        [0x2001, 0, ..] => Some(("Teredo 2001::/32", embedded(!low32))),
        _ => None,
    };
    if let Some((form, v4)) = carried {
        if let Some(range) = blocked_v4(v4) {
            return Some(range);
        }
        // A mapped or NAT64 form of a public address is that address.
        if form.starts_with("IPv4-mapped") || form.starts_with("NAT64") {
            return None;
        }
    }
    let range = match s[0] {
        // What is left of ::/8 (the compatible and translated forms of public addresses included) routes nowhere.
        0x0000..=0x00ff => "reserved ::/8",
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only 100::/64",
        0x2001 if s[1] == 0x0db8 => "documentation 2001:db8::/32",
        0x2001 if s[1] == 0x0002 && s[2] == 0 => "benchmarking 2001:2::/48",
        0xfc00..=0xfdff => "unique-local fc00::/7",
        0xfe80..=0xfebf => "link-local fe80::/10",
        0xfec0..=0xfeff => "site-local fec0::/10",
        0xff00..=0xffff => "multicast ff00::/8",
        _ => return None,
    };
    Some(range)
}

/// Names that are loopback by definition (RFC 6761): `localhost` and
/// `*.localhost`, with or without the trailing dot. Refused before any lookup.
pub fn is_loopback_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// A host as `allow_hosts` compares it: lowercase, no trailing dot, IPv6 without brackets.
pub fn normalize_host(host: &str) -> String {
    let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase();
    // The form URLs serialize to (`127.000.0.1` → `127.0.0.1`, `0:0::1` → `::1`, U-labels → punycode).
    match url::Host::parse(&host) {
        Ok(url::Host::Ipv6(v6)) => v6.to_string(),
        Ok(h) => h.to_string(),
        Err(_) => match host.parse::<std::net::Ipv6Addr>() {
            Ok(v6) => v6.to_string(),
            Err(_) => host,
        },
    }
}

/// What the guard allows a fetcher to do.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub allow_private_networks: bool,
    /// Normalized hosts exempt from the address checks.
    pub allow_hosts: Vec<String>,
}

impl Policy {
    pub fn exempt(&self, host: &str) -> bool {
        self.allow_private_networks || self.allow_hosts.iter().any(|h| *h == normalize_host(host))
    }
}

/// Why a URL is refused, before any traffic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a URL, not http(s), no host, or longer than the limit.
    Invalid(String),
    /// A user name, a password or both before the host (`user@`, `user:pass@`): which.
    Credentials(&'static str),
    /// A name that is loopback by definition.
    LoopbackName(String),
    /// An IP literal in a blocked range.
    Address { host: String, range: &'static str },
}

/// The URL checks that need no lookup: syntax, scheme, length, credentials,
/// loopback names, and IP-literal hosts (which never reach a resolver, so they
/// are checked here). A name that passes still has its addresses checked when
/// it is resolved.
pub fn check_url(raw: &str, max_length: usize, policy: &Policy) -> Result<Url, Refusal> {
    if raw.len() > max_length {
        return Err(Refusal::Invalid(format!("the URL is {} bytes long; the limit is {max_length}", raw.len())));
    }
    let url = Url::parse(raw.trim()).map_err(|e| Refusal::Invalid(format!("not a URL: {e}")))?;
    check_parsed(&url, policy)?;
    Ok(url)
}

/// [`check_url`] for a URL already parsed (a redirect's target).
pub fn check_parsed(url: &Url, policy: &Policy) -> Result<(), Refusal> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refusal::Invalid(format!("scheme `{}` is not http or https", url.scheme())));
    }
    match (!url.username().is_empty(), url.password().is_some()) {
        (false, false) => {}
        (true, false) => return Err(Refusal::Credentials("a user name")),
        (false, true) => return Err(Refusal::Credentials("a password")),
        (true, true) => return Err(Refusal::Credentials("a user name and a password")),
    }
    let host_str = url.host_str().unwrap_or_default();
    if policy.exempt(host_str) {
        return Ok(());
    }
    let ip = match url.host() {
        None => return Err(Refusal::Invalid("the URL has no host".into())),
        Some(Host::Domain(name)) => {
            if is_loopback_name(name) {
                return Err(Refusal::LoopbackName(name.to_owned()));
            }
            return Ok(());
        }
        Some(Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(Host::Ipv6(v6)) => IpAddr::V6(v6),
    };
    match blocked_range(ip) {
        Some(range) => Err(Refusal::Address { host: host_str.to_owned(), range }),
        None => Ok(()),
    }
}

/// Whether two URLs share an origin: scheme, host and port (default ports filled in).
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme() && a.host() == b.host() && a.port_or_known_default() == b.port_or_known_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the guard says of a URL before any lookup.
    #[derive(Debug, PartialEq)]
    enum Verdict {
        /// Passes; a name still has its addresses checked on lookup.
        Pass,
        Blocked(&'static str),
        LoopbackName,
        Credentials,
        Invalid,
    }
    use Verdict::*;

    fn verdict(raw: &str) -> Verdict {
        match check_url(raw, 2048, &Policy::default()) {
            Ok(_) => Pass,
            Err(Refusal::Address { range, .. }) => Blocked(range),
            Err(Refusal::LoopbackName(_)) => LoopbackName,
            Err(Refusal::Credentials(_)) => Credentials,
            Err(Refusal::Invalid(_)) => Invalid,
        }
    }

    const LOOP4: &str = "loopback 127.0.0.0/8";
    const LOOP6: &str = "loopback ::1/128";
    const META: &str = "link-local 169.254.0.0/16 (cloud metadata lives here)";

    /// URLs as a model might write them, and what the guard makes of each.
    /// The WHATWG parser turns decimal, octal, hex and short IPv4 forms into
    /// one address, so each trick lands on the range it really names.
    #[test]
    fn urls_are_classified_before_any_traffic() {
        let table: &[(&str, Verdict)] = &[
            ("http://127.0.0.1/", Blocked(LOOP4)),
            ("http://127.1/", Blocked(LOOP4)),
            ("http://127.0.1/", Blocked(LOOP4)),
            ("http://2130706433/", Blocked(LOOP4)),
            ("http://0x7f000001/", Blocked(LOOP4)),
            ("http://0x7f.0.0.1/", Blocked(LOOP4)),
            ("http://0177.0.0.1/", Blocked(LOOP4)),
            ("http://017700000001/", Blocked(LOOP4)),
            ("http://127.255.255.254:8080/x", Blocked(LOOP4)),
            ("http://0/", Blocked("\"this network\" 0.0.0.0/8")),
            ("http://0.0.0.0:80/", Blocked("\"this network\" 0.0.0.0/8")),
            ("http://10.1.2.3/", Blocked("private 10.0.0.0/8")),
            ("http://012.1.2.3/", Blocked("private 10.0.0.0/8")),
            ("http://172.16.0.1/", Blocked("private 172.16.0.0/12")),
            ("http://172.31.255.255/", Blocked("private 172.16.0.0/12")),
            ("http://172.32.0.1/", Pass),
            ("http://192.168.1.1/", Blocked("private 192.168.0.0/16")),
            ("http://0xc0a80101/", Blocked("private 192.168.0.0/16")),
            ("http://3232235777/", Blocked("private 192.168.0.0/16")),
            ("http://169.254.169.254/latest/meta-data/", Blocked(META)),
            ("http://0xa9fea9fe/", Blocked(META)),
            ("http://2852039166/", Blocked(META)),
            ("http://100.64.0.1/", Blocked("shared address space (CGNAT) 100.64.0.0/10")),
            ("http://100.127.255.255/", Blocked("shared address space (CGNAT) 100.64.0.0/10")),
            ("http://100.128.0.1/", Pass),
            ("http://192.0.0.8/", Blocked("IETF protocol assignments 192.0.0.0/24")),
            ("http://192.0.2.1/", Blocked("documentation 192.0.2.0/24")),
            ("http://198.51.100.7/", Blocked("documentation 198.51.100.0/24")),
            ("http://203.0.113.9/", Blocked("documentation 203.0.113.0/24")),
            ("http://198.18.0.1/", Blocked("benchmarking 198.18.0.0/15")),
            ("http://198.19.255.255/", Blocked("benchmarking 198.18.0.0/15")),
            ("http://198.20.0.1/", Pass),
            ("http://224.0.0.1/", Blocked("multicast 224.0.0.0/4")),
            ("http://239.255.255.250/", Blocked("multicast 224.0.0.0/4")),
            ("http://255.255.255.255/", Blocked("broadcast 255.255.255.255")),
            ("http://240.0.0.1/", Blocked("reserved 240.0.0.0/4")),
            ("http://8.8.8.8/", Pass),
            ("https://93.184.215.14/", Pass),
            ("http://[::1]/", Blocked(LOOP6)),
            ("http://[0:0:0:0:0:0:0:1]/", Blocked(LOOP6)),
            ("http://[::]/", Blocked("unspecified ::/128")),
            ("http://[::ffff:127.0.0.1]/", Blocked(LOOP4)),
            ("http://[::ffff:7f00:1]/", Blocked(LOOP4)),
            ("http://[::ffff:169.254.169.254]/", Blocked(META)),
            ("http://[::ffff:8.8.8.8]/", Pass),
            ("http://[::ffff:0:127.0.0.1]/", Blocked(LOOP4)),
            ("http://[::ffff:0:a9fe:a9fe]/", Blocked(META)),
            ("http://[::ffff:0:8.8.8.8]/", Blocked("reserved ::/8")),
            ("http://[::8.8.8.8]/", Blocked("reserved ::/8")),
            ("http://[::127.0.0.1]/", Blocked(LOOP4)),
            ("http://[::10.0.0.1]/", Blocked("private 10.0.0.0/8")),
            ("http://[64:ff9b::127.0.0.1]/", Blocked(LOOP4)),
            ("http://[64:ff9b::a9fe:a9fe]/", Blocked(META)),
            ("http://[64:ff9b::808:808]/", Pass),
            ("http://[64:ff9b:1::c0a8:101]/", Blocked("private 192.168.0.0/16")),
            ("http://[2002:7f00:1::]/", Blocked(LOOP4)),
            ("http://[2002:c0a8:101::1]/", Blocked("private 192.168.0.0/16")),
            ("http://[2002:808:808::1]/", Pass),
            ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", Blocked(LOOP4)),
            ("http://[fc00::1]/", Blocked("unique-local fc00::/7")),
            ("http://[fd12:3456::1]/", Blocked("unique-local fc00::/7")),
            ("http://[fe80::1]/", Blocked("link-local fe80::/10")),
            ("http://[febf::1]/", Blocked("link-local fe80::/10")),
            ("http://[fec0::1]/", Blocked("site-local fec0::/10")),
            ("http://[ff02::1]/", Blocked("multicast ff00::/8")),
            ("http://[2001:db8::1]/", Blocked("documentation 2001:db8::/32")),
            ("http://[2001:2::1]/", Blocked("benchmarking 2001:2::/48")),
            ("http://[100::1]/", Blocked("discard-only 100::/64")),
            ("http://[2606:4700::1111]/", Pass),
            // Zone ids are not part of the URL standard: not a URL.
            ("http://[fe80::1%25eth0]/", Invalid),
            ("http://[fe80::1%eth0]/", Invalid),
            ("http://localhost/", LoopbackName),
            ("http://LOCALHOST:8080/", LoopbackName),
            ("http://localhost./", LoopbackName),
            ("http://localhost../", LoopbackName),
            ("http://a.localhost../", LoopbackName),
            ("http://api.localhost/", LoopbackName),
            ("http://a.b.localhost./x", LoopbackName),
            ("http://localhost.example.com/", Pass),
            ("http://notlocalhost/", Pass),
            ("http://example.com./", Pass),
            ("https://example.com/path?q=1#f", Pass),
            ("http://user:pass@example.com/", Credentials),
            ("http://user@example.com/", Credentials),
            ("http://:pass@example.com/", Credentials),
            // The host is what follows the last `@` of the authority.
            ("http://example.com@127.0.0.1/", Credentials),
            ("http://example.com%40127.0.0.1/", Invalid),
            ("http://127.0.0.1#@example.com/", Blocked(LOOP4)),
            ("http://127.0.0.1\\@example.com/", Blocked(LOOP4)),
            ("ftp://example.com/", Invalid),
            ("file:///etc/passwd", Invalid),
            ("gopher://127.0.0.1/", Invalid),
            ("javascript:alert(1)", Invalid),
            ("example.com", Invalid),
            ("//example.com/", Invalid),
            ("http://", Invalid),
            ("http://256.0.0.1/", Invalid),
        ];
        assert!(table.len() >= 60);
        for (url, expected) in table {
            assert_eq!(&verdict(url), expected, "{url}");
        }
    }

    /// Addresses a name may resolve to: the resolver refuses a name if any of them is blocked.
    #[test]
    fn resolved_addresses_are_classified() {
        let table: &[(&str, Option<&str>)] = &[
            ("127.0.0.1", Some(LOOP4)),
            ("10.255.255.255", Some("private 10.0.0.0/8")),
            ("169.254.0.1", Some(META)),
            ("100.63.255.255", None),
            ("1.1.1.1", None),
            ("::1", Some(LOOP6)),
            ("::ffff:10.0.0.1", Some("private 10.0.0.0/8")),
            ("fd00::1", Some("unique-local fc00::/7")),
            ("2a00:1450:4001:80b::200e", None),
        ];
        for (addr, expected) in table {
            assert_eq!(blocked_range(addr.parse().unwrap()), *expected, "{addr}");
        }
    }

    #[test]
    fn the_length_limit_holds_at_the_boundary() {
        let url = format!("http://example.com/{}", "a".repeat(100));
        assert!(check_url(&url, url.len(), &Policy::default()).is_ok(), "at the limit");
        assert!(matches!(check_url(&url, url.len() - 1, &Policy::default()), Err(Refusal::Invalid(_))), "one past it");
    }

    #[test]
    fn allow_hosts_exempts_only_the_named_hosts() {
        let policy = Policy { allow_private_networks: false, allow_hosts: vec!["127.0.0.1".into(), "::1".into(), "docs.test".into()] };
        assert!(check_url("http://127.0.0.1:9/", 2048, &policy).is_ok());
        assert!(check_url("http://[::1]:9/", 2048, &policy).is_ok());
        assert!(policy.exempt("DOCS.test."));
        // Entries are compared in the form URLs take.
        let odd = Policy {
            allow_private_networks: false,
            allow_hosts: ["0:0:0:0:0:0:0:1", "127.000.0.1", "Bücher.Example"].map(normalize_host).to_vec(),
        };
        assert!(check_url("http://[::1]/", 2048, &odd).is_ok());
        assert!(check_url("http://127.0.0.1/", 2048, &odd).is_ok());
        assert!(odd.exempt("xn--bcher-kva.example"));
        assert!(check_url("http://127.0.0.2/", 2048, &policy).is_err());
        assert!(!policy.exempt("other.test"));
        // Credentials are refused whatever the host.
        assert_eq!(check_url("http://u:p@127.0.0.1/", 2048, &policy), Err(Refusal::Credentials("a user name and a password")));
        assert_eq!(check_url("http://u@127.0.0.1/", 2048, &policy), Err(Refusal::Credentials("a user name")));
        assert_eq!(check_url("http://:p@127.0.0.1/", 2048, &policy), Err(Refusal::Credentials("a password")));
        let open = Policy { allow_private_networks: true, allow_hosts: Vec::new() };
        assert!(check_url("http://10.0.0.1/", 2048, &open).is_ok());
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_origin(&u("http://a.test/x"), &u("http://a.test:80/y")));
        assert!(!same_origin(&u("http://a.test/"), &u("https://a.test/")));
        assert!(!same_origin(&u("http://a.test/"), &u("http://b.test/")));
        assert!(!same_origin(&u("http://a.test:8080/"), &u("http://a.test:8081/")));
    }
}
