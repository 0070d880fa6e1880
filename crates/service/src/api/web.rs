//! The built-in web board: a static page (HTML, CSS, JS from `web/`, embedded
//! in the binary) served at `/` and `/assets/{file}` without auth. The page
//! itself asks for a token and sends it on every `/v1` call it makes.

use axum::{
    Router,
    extract::Path,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

use super::AppState;
use crate::error::ApiError;

/// Routes of the web board.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{file}", get(asset))
}

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
    etag: u64,
}

/// FNV-1a, computed at compile time: the assets are not fingerprinted in
/// their names, so browsers revalidate with this as the ETag.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

macro_rules! asset {
    ($name:literal, $content_type:literal) => {{
        const BODY: &str = include_str!(concat!("../../web/", $name));
        Asset {
            name: $name,
            content_type: $content_type,
            body: BODY,
            etag: fnv1a(BODY.as_bytes()),
        }
    }};
}

const INDEX: Asset = asset!("index.html", "text/html; charset=utf-8");

/// Everything under `/assets/`: the stylesheet, the entry module and the
/// modules it imports (index.html preloads them all, so they arrive in
/// parallel rather than one import at a time).
const ASSETS: &[Asset] = &[
    asset!("board.css", "text/css; charset=utf-8"),
    asset!("board.js", "text/javascript; charset=utf-8"),
    asset!("state.js", "text/javascript; charset=utf-8"),
    asset!("dom.js", "text/javascript; charset=utf-8"),
    asset!("api.js", "text/javascript; charset=utf-8"),
    asset!("stream.js", "text/javascript; charset=utf-8"),
    asset!("missions.js", "text/javascript; charset=utf-8"),
    asset!("header.js", "text/javascript; charset=utf-8"),
    asset!("cards.js", "text/javascript; charset=utf-8"),
    asset!("graph.js", "text/javascript; charset=utf-8"),
    asset!("timeline.js", "text/javascript; charset=utf-8"),
    asset!("attention.js", "text/javascript; charset=utf-8"),
    asset!("approvals.js", "text/javascript; charset=utf-8"),
];

/// The page loads only its own scripts and styles and talks only to this origin.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

async fn index(headers: HeaderMap) -> Response {
    let mut resp = serve(&INDEX, &headers);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    // The token may sit in the address bar's fragment for a moment; keep it
    // out of anything the page links to.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(a) => serve(a, &headers),
        None => ApiError::NotFound(format!("no asset {file}")).into_response(),
    }
}

/// The asset, or 304 when the browser's copy is current.
fn serve(a: &Asset, headers: &HeaderMap) -> Response {
    let etag = format!("\"{:016x}\"", a.etag);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let common = [
        (header::ETAG, etag),
        // Same URL, new build: always revalidate (cheap, thanks to the ETag).
        (header::CACHE_CONTROL, "no-cache".to_owned()),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
    ];
    if fresh {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (
        [(header::CONTENT_TYPE, a.content_type.to_owned())],
        common,
        a.body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_the_page_names_is_served() {
        for a in ASSETS {
            assert!(
                INDEX.body.contains(&format!("/assets/{}", a.name)),
                "index.html does not load {}",
                a.name
            );
        }
    }

    #[test]
    fn every_module_a_script_imports_is_served() {
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            for import in a.body.split("from './").skip(1) {
                let name = import.split('\'').next().unwrap_or_default();
                assert!(
                    ASSETS.iter().any(|b| b.name == name),
                    "{} imports {name}, which is not in ASSETS",
                    a.name
                );
            }
        }
    }

    #[test]
    fn etags_follow_the_content() {
        assert_ne!(fnv1a(b"a"), fnv1a(b"b"));
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    }
}
