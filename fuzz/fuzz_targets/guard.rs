//! The private-network guard over any URL: a refusal or a URL, never a panic;
//! a URL it lets through has an http(s) scheme, no credentials, and no host
//! that is an address in a blocked range.
#![no_main]
use libfuzzer_sys::fuzz_target;
use seam_web::guard::{Policy, blocked_range, check_url};

fuzz_target!(|raw: &str| {
    let Ok(url) = check_url(raw, 2048, &Policy::default()) else { return };
    assert!(matches!(url.scheme(), "http" | "https"), "{url}");
    assert!(url.username().is_empty() && url.password().is_none(), "{url}");
    match url.host() {
        Some(url::Host::Ipv4(ip)) => assert!(blocked_range(ip.into()).is_none(), "{url}"),
        Some(url::Host::Ipv6(ip)) => assert!(blocked_range(ip.into()).is_none(), "{url}"),
        Some(url::Host::Domain(_)) => {}
        None => panic!("no host: {url}"),
    }
});
