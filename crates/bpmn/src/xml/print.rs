//! An element tree to XML text. One prefix per namespace URI, all declared on
//! the outermost element: the well-known namespaces get their usual prefixes
//! (`bpmn`, `bpmndi`, `dc`, `di`, `xsi`), the others keep the prefix their
//! source used unless another URI already has it. No default namespace is
//! ever declared, so an unprefixed name is always in no namespace.

use std::fmt::Write;

use super::XML_NS;
use super::tree::{CANONICAL, Content, Element};

/// The prefix of each namespace URI, in declaration order, and further
/// declarations names do not use (aliases, namespaces for QName values).
pub(crate) struct Prefixes {
    map: Vec<(String, String)>,
    extra: Vec<(String, String)>,
}

impl Prefixes {
    /// Starts with the well-known namespaces when `declare_all`, else empty.
    pub(crate) fn new(declare_all: bool) -> Self {
        let map = if declare_all {
            CANONICAL
                .iter()
                .map(|(ns, p)| ((*ns).to_owned(), (*p).to_owned()))
                .collect()
        } else {
            Vec::new()
        };
        Self {
            map,
            extra: Vec::new(),
        }
    }

    /// Declares `prefix` for `uri` too, unless that is already so or the
    /// prefix is taken.
    pub(crate) fn declare(&mut self, prefix: &str, uri: &str) {
        let same = self.map.iter().any(|(u, p)| u == uri && p == prefix);
        if same || self.taken(prefix) || !usable(prefix) {
            return;
        }
        self.extra.push((uri.to_owned(), prefix.to_owned()));
    }

    /// Adds `uri`, preferring `hint` as its prefix.
    pub(crate) fn add(&mut self, uri: &str, hint: Option<&str>) {
        if uri == XML_NS || self.map.iter().any(|(u, _)| u == uri) {
            return;
        }
        let canonical = CANONICAL.iter().find(|(ns, _)| *ns == uri).map(|(_, p)| *p);
        let wanted = canonical.or(hint).filter(|p| usable(p));
        let prefix = match wanted {
            Some(p) if !self.taken(p) => p.to_owned(),
            _ => (1..)
                .map(|n| format!("ns{n}"))
                .find(|p| !self.taken(p))
                .unwrap_or_default(),
        };
        self.map.push((uri.to_owned(), prefix));
    }

    fn taken(&self, prefix: &str) -> bool {
        self.map.iter().chain(&self.extra).any(|(_, p)| p == prefix)
    }

    /// Adds every namespace `el` and its descendants use.
    pub(crate) fn collect(&mut self, el: &Element) {
        el.walk(&mut |e| {
            if let Some(ns) = &e.ns {
                self.add(ns, e.prefix.as_deref());
            }
            for a in &e.attributes {
                if let Some(ns) = &a.ns {
                    self.add(ns, a.prefix.as_deref());
                }
                if let Some(ns) = &a.value_ns {
                    self.add(ns, None);
                }
            }
        });
    }

    fn prefix(&self, uri: &str) -> Option<&str> {
        if uri == XML_NS {
            return Some("xml");
        }
        self.map
            .iter()
            .find(|(u, _)| u == uri)
            .map(|(_, p)| p.as_str())
    }

    /// `prefix:local`, or `local` in no namespace.
    fn qname(&self, ns: Option<&str>, local: &str, out: &mut String) {
        if let Some(p) = ns.and_then(|ns| self.prefix(ns)) {
            out.push_str(p);
            out.push(':');
        }
        out.push_str(local);
    }
}

/// A prefix must be an XML name and not reserved.
fn usable(prefix: &str) -> bool {
    let mut chars = prefix.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_');
    first_ok
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !prefix.to_ascii_lowercase().starts_with("xml")
}

/// A whole document: declaration, then `root` indented by two spaces, with
/// `prefixes` declared on the root.
pub(crate) fn document(root: &Element, prefixes: &Prefixes) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    write_element(&mut out, root, prefixes, Some(0), true);
    out.push('\n');
    out
}

/// One element as self-contained compact XML (the JSON form).
pub(crate) fn fragment(el: &Element) -> String {
    let mut prefixes = Prefixes::new(false);
    prefixes.collect(el);
    let mut out = String::new();
    write_element(&mut out, el, &prefixes, None, true);
    out
}

/// Writes `el`; `indent` is its depth when pretty-printing, `None` inline.
fn write_element(
    out: &mut String,
    el: &Element,
    prefixes: &Prefixes,
    indent: Option<usize>,
    declare: bool,
) {
    let mut tag = String::new();
    prefixes.qname(el.ns.as_deref(), &el.name, &mut tag);
    out.push('<');
    out.push_str(&tag);
    if declare {
        for (uri, prefix) in prefixes.map.iter().chain(&prefixes.extra) {
            let _ = write!(out, " xmlns:{prefix}=\"");
            escape_attr(uri, out);
            out.push('"');
        }
    }
    for a in &el.attributes {
        out.push(' ');
        prefixes.qname(a.ns.as_deref(), &a.name, out);
        out.push_str("=\"");
        if let Some(p) = a.value_ns.as_deref().and_then(|ns| prefixes.prefix(ns)) {
            out.push_str(p);
            out.push(':');
        }
        escape_attr(&a.value, out);
        out.push('"');
    }
    if el.children.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    // Indent only element content: text is kept exactly as it is.
    let element_only = !el
        .children
        .iter()
        .any(|c| matches!(c, Content::Text(_) | Content::CData(_)));
    let child_indent = match indent {
        Some(depth) if element_only => Some(depth + 1),
        _ => None,
    };
    for child in &el.children {
        if let Some(depth) = child_indent {
            newline(out, depth);
        }
        match child {
            Content::Element(e) => write_element(out, e, prefixes, child_indent, false),
            Content::Text(t) => escape_text(t, out),
            Content::CData(t) => write_cdata(t, out),
            Content::Comment(t) => {
                out.push_str("<!--");
                out.push_str(&clean(t).replace("--", "- -"));
                out.push_str("-->");
            }
            Content::Pi(t) => {
                out.push_str("<?");
                out.push_str(&clean(t).replace("?>", "? >"));
                out.push_str("?>");
            }
        }
    }
    if let (Some(depth), Some(_)) = (indent, child_indent) {
        newline(out, depth);
    }
    out.push_str("</");
    out.push_str(&tag);
    out.push('>');
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// CDATA as written, split where it contains its own terminator.
fn write_cdata(text: &str, out: &mut String) {
    out.push_str("<![CDATA[");
    out.push_str(&clean(text).replace("]]>", "]]]]><![CDATA[>"));
    out.push_str("]]>");
}

/// Replaces characters XML 1.0 cannot carry, even escaped.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if allowed(c) { c } else { '\u{FFFD}' })
        .collect()
}

fn allowed(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// Escapes text content; a carriage return is written as a reference since a
/// reader would turn a literal one into a line feed.
pub(crate) fn escape_text(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            c if allowed(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
}

/// Escapes an attribute value; tabs and line breaks as references, since a
/// reader normalises literal ones to spaces.
pub(crate) fn escape_attr(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if allowed(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
}
