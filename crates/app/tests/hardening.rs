//! The server's defences against a peer that is not GitHub: the issuer it
//! trusts, what an unauthenticated request may cost, what reaches the log,
//! and the headers of its pages.

mod common;

use common::{Options, setup};

#[test]
fn an_issuer_that_only_starts_like_loopback_is_refused() {
    for issuer in [
        "http://127.0.0.1.attacker.example",
        "http://127.0.0.1@attacker.example",
    ] {
        let s = setup(&Options {
            issuer: issuer.into(),
            ..Options::default()
        });
        let e = benchops_app::config::load(&s.config).expect_err(issuer);
        let text = e.to_string();
        assert!(text.contains("`oidc.issuer`"), "{text}");
        assert!(text.contains(issuer), "{text}");
    }
    for issuer in [
        "http://127.0.0.1:9",
        "http://localhost:9",
        "https://issuer.example",
    ] {
        let s = setup(&Options {
            issuer: issuer.into(),
            ..Options::default()
        });
        benchops_app::config::load(&s.config).expect(issuer);
    }
}
