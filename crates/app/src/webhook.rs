//! `POST /webhook`: signature first, then dedupe, then the queue.
//!
//! 1. The body is read by [`crate::server::read_body`]: 413 above
//!    `max_body_bytes` (from `Content-Length` when it says so), 503 when
//!    the body budget is full, 408 when it does not arrive in time.
//! 2. `X-Hub-Signature-256` is checked before anything else is read: an
//!    HMAC-SHA256 of the raw body under each configured secret (the current
//!    one, and the previous one during a rotation), compared in constant
//!    time (`Mac::verify_slice`). Missing or wrong: 401, nothing recorded,
//!    and the log line names the delivery id only (at most
//!    [`crate::REFUSALS_LOGGED_PER_SECOND`] such lines a second). The 401
//!    is sent `refusal_delay_ms` later ([`crate::server::SlowRefusal`]),
//!    so a flood of wrong signatures over connections that wait for their
//!    answers is slowed to one request a connection per delay, and valid
//!    deliveries on other connections keep the CPU.
//! 3. `X-GitHub-Delivery` and `X-GitHub-Event` are required (400).
//! 4. The payload is taken by its `Content-Type` ([`payload_of`]):
//!    `application/json` (or none) is the body itself;
//!    `application/x-www-form-urlencoded`, which GitHub also offers, is
//!    the `payload` field of the form (the signature is over the raw form,
//!    so it is checked first, then the form decoded). Any other type, or a
//!    form without `payload`, is 415 or 400 naming the type, `ping`
//!    included, so a setup check with `ping` fails as real events would.
//! 5. The payload is routed ([`crate::events::route`]). A delivery that
//!    brings no work (`ping`, an event not handled, one that needs nothing
//!    such as a push to another branch) is answered at once and not
//!    recorded: doing nothing a second time changes nothing, so it needs no
//!    dedupe, and no write is spent on it.
//! 6. For work, a queue slot is reserved first: with the queue full the
//!    answer is 503 and nothing is recorded, so GitHub's redelivery is not
//!    mistaken for a duplicate. Then the delivery id and the work are
//!    committed by the intake's group commit ([`crate::intake`]), and only
//!    then answered; a delivery id seen before is acknowledged (200) and
//!    ignored. The answer (202) is sent before the work is done.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::AppState;
use crate::config::Secret;
use crate::events::{Route, route};
use crate::store::{Accepted, Delivery};

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";
/// The delivery id header.
pub const DELIVERY_HEADER: &str = "x-github-delivery";
/// The event header.
pub const EVENT_HEADER: &str = "x-github-event";

/// Why a signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `X-Hub-Signature-256` header.
    #[error("no X-Hub-Signature-256 header")]
    Missing,
    /// Not `sha256=` and 64 hex digits.
    #[error("X-Hub-Signature-256 is not sha256=<64 hex digits>")]
    Malformed,
    /// No configured secret gives this signature.
    #[error("X-Hub-Signature-256 does not match the body")]
    Mismatch,
}

/// `sha256=<hex>` of `body` under `secret` (what GitHub sends).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let mut out = String::with_capacity(71);
    out.push_str("sha256=");
    for b in tag {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn unhex(d: u8) -> Option<u8> {
    match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        b'A'..=b'F' => Some(d - b'A' + 10),
        _ => None,
    }
}

/// Checks `header` against `body` under each secret, in constant time for
/// each comparison.
pub fn verify_signature(
    secrets: &[Secret],
    body: &[u8],
    header: Option<&[u8]>,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let hex = header
        .strip_prefix(b"sha256=")
        .ok_or(SignatureError::Malformed)?;
    if hex.len() != 64 {
        return Err(SignatureError::Malformed);
    }
    let mut tag = [0u8; 32];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        let (Some(h), Some(l)) = (unhex(pair[0]), unhex(pair[1])) else {
            return Err(SignatureError::Malformed);
        };
        tag[i] = (h << 4) | l;
    }
    let mut ok = false;
    for secret in secrets {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(secret.expose()).expect("HMAC takes any key length");
        mac.update(body);
        // verify_slice compares in constant time.
        ok |= mac.verify_slice(&tag).is_ok();
    }
    if ok {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// A header as text, if present, printable ASCII and at most `max` bytes.
fn header_text<'h>(headers: &'h HeaderMap, name: &str, max: usize) -> Option<&'h str> {
    let v = headers.get(name)?.to_str().ok()?;
    (!v.is_empty() && v.len() <= max && v.bytes().all(|b| b.is_ascii_graphic())).then_some(v)
}

fn reply(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

/// A delivery whose body is not a payload this server reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    /// A type GitHub does not send.
    #[error(
        "Content-Type {0} is not application/json or application/x-www-form-urlencoded: set the webhook's content type to application/json"
    )]
    Unsupported(String),
    /// A form without its `payload` field.
    #[error(
        "Content-Type application/x-www-form-urlencoded without a `payload` field: set the webhook's content type to application/json"
    )]
    FormWithoutPayload,
}

impl ContentError {
    fn status(&self) -> StatusCode {
        match self {
            ContentError::Unsupported(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ContentError::FormWithoutPayload => StatusCode::BAD_REQUEST,
        }
    }
}

/// The JSON payload of a verified delivery, by its `Content-Type`: the
/// body itself for `application/json` (or no type), the `payload` field
/// for `application/x-www-form-urlencoded`.
pub fn payload_of<'b>(
    content_type: Option<&str>,
    body: &'b [u8],
) -> Result<std::borrow::Cow<'b, [u8]>, ContentError> {
    let media = content_type
        .map(|t| t.split(';').next().unwrap_or_default().trim())
        .unwrap_or_default();
    if media.is_empty() || media.eq_ignore_ascii_case("application/json") {
        return Ok(std::borrow::Cow::Borrowed(body));
    }
    if media.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        return form_urlencoded::parse(body)
            .find(|(k, _)| k == "payload")
            .map(|(_, v)| std::borrow::Cow::Owned(v.into_owned().into_bytes()))
            .ok_or(ContentError::FormWithoutPayload);
    }
    Err(ContentError::Unsupported(benchops::excerpt::quote(media)))
}

/// The handler.
pub async fn receive(
    State(app): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let delivery = header_text(&headers, DELIVERY_HEADER, 128).unwrap_or("-");
    if let Err(e) = verify_signature(
        &app.config.webhook_secrets,
        &body,
        headers.get(SIGNATURE_HEADER).map(|v| v.as_bytes()),
    ) {
        app.metrics.signature_failure();
        app.metrics.delivery("-", "unauthorized");
        if let Some(held_back) = app.refusal_log.admit() {
            tracing::warn!(
                delivery,
                reason = %e,
                bytes = body.len(),
                held_back,
                "webhook refused"
            );
        }
        let mut refused = reply(StatusCode::UNAUTHORIZED, "bad signature\n");
        drop(body);
        if !app.config.refusal_delay.is_zero() {
            refused
                .extensions_mut()
                .insert(crate::server::SlowRefusal(app.config.refusal_delay));
        }
        return refused;
    }
    let (Some(delivery), Some(event)) = (
        header_text(&headers, DELIVERY_HEADER, 128),
        header_text(&headers, EVENT_HEADER, 64),
    ) else {
        app.metrics.delivery("-", "bad_request");
        tracing::warn!(
            delivery,
            "webhook without X-GitHub-Delivery or X-GitHub-Event"
        );
        return reply(
            StatusCode::BAD_REQUEST,
            "X-GitHub-Delivery and X-GitHub-Event are required\n",
        );
    };
    let content_type = headers
        .get(axum::http::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let payload = match payload_of(content_type.as_deref(), &body) {
        Ok(p) => p,
        Err(e) => {
            app.metrics.delivery(event, "bad_request");
            tracing::warn!(delivery, event, reason = %e, "webhook payload not understood");
            return (e.status(), format!("{e}\n")).into_response();
        }
    };
    let now = jiff::Timestamp::now();
    let routed = match route(event, &payload, &app.rules, &now.to_string()) {
        Ok(r) => r,
        Err(e) => {
            app.metrics.delivery(event, "bad_request");
            tracing::warn!(delivery, event, reason = %e.reason, "webhook payload not understood");
            return reply(StatusCode::BAD_REQUEST, "payload not understood\n");
        }
    };
    let work = match routed {
        Route::Work(work) => work,
        Route::Ping => {
            app.metrics.delivery(event, "accepted");
            tracing::info!(delivery, event, "ping");
            return reply(StatusCode::OK, "pong\n");
        }
        Route::NothingToDo(why) => {
            app.metrics.delivery(event, "ignored");
            tracing::debug!(delivery, event, why, "nothing to do");
            return reply(StatusCode::ACCEPTED, "accepted, nothing to do\n");
        }
        Route::Unhandled => {
            app.metrics.delivery(event, "ignored");
            tracing::info!(delivery, event, "event not handled, ignored");
            return reply(StatusCode::ACCEPTED, "event not handled\n");
        }
    };
    let Ok(permit) = app.queue.try_reserve() else {
        app.metrics.delivery(event, "busy");
        tracing::warn!(delivery, event, "queue full: 503 for redelivery");
        return reply(StatusCode::SERVICE_UNAVAILABLE, "busy, retry later\n");
    };
    let Ok(extract) = serde_json::to_string(&work) else {
        return reply(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n");
    };
    let accepted = app
        .intake
        .accept(Delivery {
            id: delivery.to_owned(),
            event: event.to_owned(),
            received_at: now.as_second(),
            extract: Some(extract),
        })
        .await;
    match accepted {
        Err(e) => {
            app.metrics.delivery(event, "error");
            tracing::error!(delivery, event, error = %e, "could not record the delivery");
            reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "cannot record, retry later\n",
            )
        }
        Ok(Accepted::Duplicate) => {
            app.metrics.delivery(event, "duplicate");
            tracing::info!(delivery, event, "redelivery ignored");
            reply(StatusCode::OK, "duplicate delivery, ignored\n")
        }
        Ok(Accepted::New(Some(seq))) => {
            permit.send(seq);
            app.metrics.delivery(event, "accepted");
            app.metrics
                .set_queue_depth(app.queue.max_capacity() - app.queue.capacity());
            tracing::debug!(delivery, event, seq, "queued");
            reply(StatusCode::ACCEPTED, "accepted\n")
        }
        Ok(Accepted::New(None)) => {
            // Work is always given with its extract, so the store queues it.
            app.metrics.delivery(event, "error");
            tracing::error!(delivery, event, "work recorded without a queue entry");
            reply(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GitHub's documented example: secret, payload and header.
    #[test]
    fn github_documented_vector() {
        let secret = Secret::new("It's a Secret to Everybody");
        let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(sign(secret.expose(), b"Hello, World!"), header);
        assert_eq!(
            verify_signature(
                std::slice::from_ref(&secret),
                b"Hello, World!",
                Some(header.as_bytes())
            ),
            Ok(())
        );
        assert_eq!(
            verify_signature(
                std::slice::from_ref(&secret),
                b"Hello, World?",
                Some(header.as_bytes())
            ),
            Err(SignatureError::Mismatch)
        );
        let upper = header.to_ascii_uppercase().replace("SHA256=", "sha256=");
        assert_eq!(
            verify_signature(
                std::slice::from_ref(&secret),
                b"Hello, World!",
                Some(upper.as_bytes())
            ),
            Ok(())
        );
    }

    #[test]
    fn a_form_is_read_by_its_payload_field_and_other_types_are_named() {
        let json = br#"{"zen":"a b&c=d+e"}"#;
        let form: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("payload", std::str::from_utf8(json).expect("utf8"))
            .finish();
        for t in [
            "application/x-www-form-urlencoded",
            "Application/X-WWW-Form-Urlencoded; charset=utf-8",
        ] {
            assert_eq!(
                payload_of(Some(t), form.as_bytes()).as_deref(),
                Ok(&json[..]),
                "{t}"
            );
        }
        for t in [
            None,
            Some("application/json"),
            Some("application/json; charset=utf-8"),
        ] {
            assert_eq!(payload_of(t, json).as_deref(), Ok(&json[..]), "{t:?}");
        }
        assert_eq!(
            payload_of(Some("application/x-www-form-urlencoded"), b"zen=x"),
            Err(ContentError::FormWithoutPayload)
        );
        let e = payload_of(Some("text/plain"), json).expect_err("refused");
        assert!(e.to_string().contains("text/plain"), "{e}");
    }

    #[test]
    fn malformed_missing_and_rotated_signatures() {
        let old = Secret::new("old");
        let new = Secret::new("new");
        let body = b"{}";
        let by_old = sign(b"old", body);
        assert_eq!(
            verify_signature(std::slice::from_ref(&new), body, Some(by_old.as_bytes())),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(&[new.clone(), old], body, Some(by_old.as_bytes())),
            Ok(())
        );
        assert_eq!(
            verify_signature(std::slice::from_ref(&new), body, None),
            Err(SignatureError::Missing)
        );
        for bad in ["sha1=00", "sha256=zz", "sha256=", "757107ea"] {
            assert_eq!(
                verify_signature(std::slice::from_ref(&new), body, Some(bad.as_bytes())),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
    }
}
