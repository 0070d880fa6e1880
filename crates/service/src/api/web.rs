//! The built-in web board: static pages (HTML, CSS, JS from `web/`, embedded
//! in the binary) served at `/` (the board), `/workflow` (a workflow
//! instance as a diagram, drawn by the vendored bpmn-js viewer) and
//! `/assets/{file}` without auth. The pages themselves ask for a token and
//! send it on every `/v1` call they make.

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
        .route("/workflow", get(workflow))
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
    ($name:literal, $content_type:literal) => {
        asset!($name, $name, $content_type)
    };
    // Served as `/assets/{name}`, read from `web/{path}` (the vendored files).
    ($name:literal, $path:literal, $content_type:literal) => {{
        const BODY: &str = include_str!(concat!("../../web/", $path));
        Asset {
            name: $name,
            content_type: $content_type,
            body: BODY,
            etag: fnv1a(BODY.as_bytes()),
        }
    }};
}

const INDEX: Asset = asset!("index.html", "text/html; charset=utf-8");
const WORKFLOW: Asset = asset!("workflow.html", "text/html; charset=utf-8");

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
    // The workflow instance page and bpmn-js (see web/vendor/bpmn-js/README.md).
    asset!("workflow.css", "text/css; charset=utf-8"),
    asset!("workflow.js", "text/javascript; charset=utf-8"),
    asset!(
        "bpmn-navigated-viewer.js",
        "vendor/bpmn-js/bpmn-navigated-viewer.production.min.js",
        "text/javascript; charset=utf-8"
    ),
    asset!(
        "diagram-js.css",
        "vendor/bpmn-js/diagram-js.css",
        "text/css; charset=utf-8"
    ),
    asset!(
        "bpmn-js.css",
        "vendor/bpmn-js/bpmn-js.css",
        "text/css; charset=utf-8"
    ),
];

/// The pages load only their own scripts and styles and talk only to this
/// origin. (bpmn-js sets styles through the DOM, which this allows; its
/// watermark's logo is inline SVG.)
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

async fn index(headers: HeaderMap) -> Response {
    page(&INDEX, &headers)
}

async fn workflow(headers: HeaderMap) -> Response {
    page(&WORKFLOW, &headers)
}

/// A page, with its CSP and referrer policy.
fn page(a: &Asset, headers: &HeaderMap) -> Response {
    let mut resp = serve(a, headers);
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

    /// The pages; each asset is loaded by at least one of them.
    const PAGES: &[&Asset] = &[&INDEX, &WORKFLOW];

    #[test]
    fn every_asset_is_loaded_by_a_page_and_every_page_asset_is_served() {
        for a in ASSETS {
            assert!(
                PAGES
                    .iter()
                    .any(|p| p.body.contains(&format!("/assets/{}\"", a.name))),
                "no page loads {}",
                a.name
            );
        }
        for p in PAGES {
            for link in p.body.split("\"/assets/").skip(1) {
                let name = link.split('"').next().unwrap_or_default();
                assert!(
                    ASSETS.iter().any(|a| a.name == name),
                    "{} loads {name}, which is not in ASSETS",
                    p.name
                );
            }
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
