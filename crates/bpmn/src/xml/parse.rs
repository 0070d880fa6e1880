//! Bytes to an owned element tree: decoding, the namespace-aware reader, and
//! the guards against hostile input (size, depth, element count, DTDs).

use std::borrow::Cow;
use std::collections::HashSet;

use quick_xml::XmlVersion;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::{PrefixDeclaration, QName, ResolveResult};
use quick_xml::reader::NsReader;

use super::tree::{Attribute, Content, Element, NsStr, canonical_prefix, intern_ns};
use super::{
    BPMN_MODEL_NS, BPMNDI_NS, DC_NS, DI_NS, ImportError, MAX_BYTES, MAX_DEPTH, MAX_ELEMENTS, XML_NS,
};

/// Namespace declarations: (prefix, URI); `None` for the default namespace.
pub(crate) type Declarations = Vec<(Option<String>, String)>;

/// A parsed document: the root element, the namespaces its start tag
/// declared and the decoded text (for error positions).
pub(crate) struct Document {
    pub root: Element,
    pub declarations: Declarations,
    pub text: String,
}

/// Decodes the bytes to text: UTF-8 (BOM or not), UTF-16 with a BOM, and the
/// single-byte encodings BPMN tools declare (ISO-8859-1, windows-1252).
pub(crate) fn decode(bytes: &[u8]) -> Result<Cow<'_, str>, ImportError> {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return utf8(rest, 3);
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        return utf16(rest, u16::from_le_bytes).map(Cow::Owned);
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        return utf16(rest, u16::from_be_bytes).map(Cow::Owned);
    }
    let label = declared_encoding(bytes).map(|l| l.to_ascii_lowercase());
    match label.as_deref() {
        None | Some("utf-8" | "utf8") => utf8(bytes, 0),
        Some(
            "iso-8859-1" | "iso8859-1" | "iso_8859-1" | "latin1" | "l1" | "us-ascii" | "ascii",
        ) => {
            // ISO-8859-1 maps each byte to the code point of the same value.
            Ok(Cow::Owned(bytes.iter().map(|&b| char::from(b)).collect()))
        }
        Some("windows-1252" | "cp1252") => {
            Ok(Cow::Owned(bytes.iter().map(|&b| cp1252(b)).collect()))
        }
        Some(other) => Err(ImportError::Encoding {
            message: format!(
                "unsupported encoding {other:?} (UTF-8, UTF-16, ISO-8859-1 and windows-1252 are read)"
            ),
        }),
    }
}

fn utf8(bytes: &[u8], shift: usize) -> Result<Cow<'_, str>, ImportError> {
    std::str::from_utf8(bytes)
        .map(Cow::Borrowed)
        .map_err(|e| ImportError::Encoding {
            message: format!("invalid UTF-8 at byte {}", e.valid_up_to() + shift),
        })
}

fn utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> Result<String, ImportError> {
    if !bytes.len().is_multiple_of(2) {
        return Err(ImportError::Encoding {
            message: "UTF-16 input of odd length".into(),
        });
    }
    let units = bytes.chunks_exact(2).map(|c| unit([c[0], c[1]]));
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .map_err(|_| ImportError::Encoding {
            message: "invalid UTF-16".into(),
        })
}

/// windows-1252: ISO-8859-1 but for 0x80–0x9F.
fn cp1252(b: u8) -> char {
    const HIGH: [u16; 32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013,
        0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ];
    match b {
        0x80..=0x9F => char::from_u32(u32::from(HIGH[usize::from(b - 0x80)])).unwrap_or('\u{FFFD}'),
        _ => char::from(b),
    }
}

/// The `encoding` of an XML declaration at the very start, if any.
fn declared_encoding(bytes: &[u8]) -> Option<&str> {
    let head = bytes.get(..bytes.len().min(256))?;
    if !head.starts_with(b"<?xml") {
        return None;
    }
    let end = head.windows(2).position(|w| w == b"?>")?;
    let decl = std::str::from_utf8(&head[..end]).ok()?;
    let at = decl.find("encoding")?;
    let rest = decl[at + "encoding".len()..]
        .trim_start()
        .strip_prefix('=')?
        .trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &rest[1..];
    value.find(quote).map(|end| &value[..end])
}

/// Line and column (1-based, in characters) of a byte offset in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn malformed(text: &str, offset: usize, message: impl Into<String>) -> ImportError {
    let (line, column) = line_col(text, offset);
    ImportError::Malformed {
        line,
        column,
        message: message.into(),
    }
}

/// Parses a whole document; ids of BPMN and diagram elements must be unique.
pub(crate) fn document(bytes: &[u8]) -> Result<Document, ImportError> {
    if bytes.len() > MAX_BYTES {
        return Err(ImportError::TooLarge {
            size: bytes.len(),
            limit: MAX_BYTES,
        });
    }
    let text = decode(bytes)?.into_owned();
    let (root, declarations) = tree(&text, true)?;
    Ok(Document {
        root,
        declarations,
        text,
    })
}

/// Parses one self-contained element (the JSON form of a kept fragment).
pub(crate) fn fragment(xml: &str) -> Result<Element, ImportError> {
    if xml.len() > MAX_BYTES {
        return Err(ImportError::TooLarge {
            size: xml.len(),
            limit: MAX_BYTES,
        });
    }
    tree(xml, false).map(|(root, _)| root)
}

/// The element tree of `text`; checks ids when `check_ids`.
fn tree(text: &str, check_ids: bool) -> Result<(Element, Declarations), ImportError> {
    let mut reader = NsReader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let mut declarations = Vec::new();
    let mut ids: HashSet<String> = HashSet::new();
    let mut count = 0usize;
    loop {
        let offset = usize::try_from(reader.buffer_position()).unwrap_or(usize::MAX);
        let event = reader.read_event().map_err(|e| {
            let at = usize::try_from(reader.error_position()).unwrap_or(usize::MAX);
            malformed(text, at, e.to_string())
        })?;
        match event {
            Event::Start(ref start) | Event::Empty(ref start) => {
                if root.is_some() && stack.is_empty() {
                    return Err(malformed(text, offset, "a second root element"));
                }
                if stack.len() >= MAX_DEPTH {
                    let (line, column) = line_col(text, offset);
                    return Err(ImportError::TooDeep {
                        line,
                        column,
                        limit: MAX_DEPTH,
                    });
                }
                count += 1;
                if count > MAX_ELEMENTS {
                    return Err(ImportError::TooLarge {
                        size: count,
                        limit: MAX_ELEMENTS,
                    });
                }
                let decls = if stack.is_empty() {
                    Some(&mut declarations)
                } else {
                    None
                };
                let el = element(&reader, start, offset, text, decls)?;
                if check_ids {
                    check_id(&el, &mut ids, text)?;
                }
                if matches!(event, Event::Empty(_)) {
                    close(&mut stack, &mut root, el);
                } else {
                    stack.push(el);
                }
            }
            Event::End(_) => match stack.pop() {
                Some(el) => close(&mut stack, &mut root, el),
                None => return Err(malformed(text, offset, "an end tag without a start tag")),
            },
            Event::Text(t) => {
                let content = t.xml10_content();
                match stack.last_mut() {
                    Some(parent) => push_text(parent, &content),
                    None if content.trim().is_empty() => {}
                    None => return Err(malformed(text, offset, "text outside the root element")),
                }
            }
            Event::GeneralRef(r) => {
                let resolved: Cow<'_, str> = match r.resolve_char_ref() {
                    Ok(Some(c)) => Cow::Owned(c.to_string()),
                    Ok(None) => match resolve_predefined_entity(&r) {
                        Some(s) => Cow::Borrowed(s),
                        None => {
                            return Err(malformed(
                                text,
                                offset,
                                format!("undefined entity &{};", &*r),
                            ));
                        }
                    },
                    Err(e) => return Err(malformed(text, offset, e.to_string())),
                };
                match stack.last_mut() {
                    Some(parent) => push_text(parent, &resolved),
                    None => {
                        return Err(malformed(
                            text,
                            offset,
                            "a reference outside the root element",
                        ));
                    }
                }
            }
            Event::CData(c) => match stack.last_mut() {
                Some(parent) => parent
                    .children
                    .push(Content::CData(c.xml10_content().into_owned())),
                None => return Err(malformed(text, offset, "CDATA outside the root element")),
            },
            Event::Comment(c) => {
                if let Some(parent) = stack.last_mut() {
                    parent
                        .children
                        .push(Content::Comment(c.xml10_content().into_owned()));
                }
            }
            Event::PI(pi) => {
                if let Some(parent) = stack.last_mut() {
                    parent
                        .children
                        .push(Content::Pi(pi.into_inner().into_owned()));
                }
            }
            // Entities declared in a DTD are never expanded: refuse rather
            // than read a document whose text would mean something else.
            Event::DocType(_) => {
                let (line, column) = line_col(text, offset);
                return Err(ImportError::Doctype { line, column });
            }
            Event::Decl(_) => {}
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err(malformed(
            text,
            text.len(),
            "the document ends inside an element",
        ));
    }
    root.map(|r| (r, declarations))
        .ok_or_else(|| malformed(text, text.len(), "no root element"))
}

/// Appends text, merging with a preceding text node.
fn push_text(parent: &mut Element, text: &str) {
    if let Some(Content::Text(last)) = parent.children.last_mut() {
        last.push_str(text);
    } else {
        parent.children.push(Content::Text(text.to_owned()));
    }
}

/// Finishes an element (drops indentation) and attaches it to its parent.
fn close(stack: &mut [Element], root: &mut Option<Element>, mut el: Element) {
    drop_formatting(&mut el);
    match stack.last_mut() {
        Some(parent) => parent.children.push(Content::Element(el)),
        None => *root = Some(el),
    }
}

/// Whitespace-only text between child markup is formatting, not content:
/// dropped when every text node is whitespace and there is markup and no
/// CDATA. The printer indents exactly such elements, so printing and
/// parsing again gives the same tree.
fn drop_formatting(el: &mut Element) {
    let has_markup = el.children.iter().any(|c| {
        matches!(
            c,
            Content::Element(_) | Content::Comment(_) | Content::Pi(_)
        )
    });
    let has_cdata = el.children.iter().any(|c| matches!(c, Content::CData(_)));
    let all_blank = el.children.iter().all(|c| match c {
        Content::Text(t) => t.chars().all(|c| matches!(c, ' ' | '\t' | '\n' | '\r')),
        _ => true,
    });
    if has_markup && !has_cdata && all_blank {
        el.children.retain(|c| !matches!(c, Content::Text(_)));
    }
}

/// Builds an element from a start tag, resolving namespaces.
fn element(
    reader: &NsReader<&[u8]>,
    start: &BytesStart<'_>,
    offset: usize,
    text: &str,
    mut declarations: Option<&mut Declarations>,
) -> Result<Element, ImportError> {
    let resolver = reader.resolver();
    let name = start.name();
    let (resolved, local) = resolver.resolve_element(name);
    let ns = namespace(resolved)
        .map_err(|p| malformed(text, offset, format!("undeclared namespace prefix {p:?}")))?;
    let mut el = Element {
        prefix: prefix_hint(ns.as_deref(), name),
        ns,
        name: local.into_inner().to_owned(),
        attributes: Vec::new(),
        children: Vec::new(),
        offset,
    };
    for attr in start.attributes() {
        let attr = attr.map_err(|e| malformed(text, offset, e.to_string()))?;
        let value = attr
            .normalized_value(XmlVersion::Implicit1_0)
            .map_err(|e| malformed(text, offset, e.to_string()))?
            .into_owned();
        if let Some(decl) = attr.key.as_namespace_binding() {
            if let Some(list) = declarations.as_deref_mut() {
                let prefix = match decl {
                    PrefixDeclaration::Default => None,
                    PrefixDeclaration::Named(p) => Some(p.to_owned()),
                };
                list.push((prefix, value));
            }
            continue;
        }
        let (resolved, local) = resolver.resolve_attribute(attr.key);
        let ns = namespace(resolved)
            .map_err(|p| malformed(text, offset, format!("undeclared namespace prefix {p:?}")))?;
        let mut attribute = Attribute {
            prefix: prefix_hint(ns.as_deref(), attr.key),
            ns,
            name: local.into_inner().to_owned(),
            value,
            value_ns: None,
        };
        // `xsi:type` holds a QName: keep what its prefix stands for, so it
        // survives the exporter writing other prefixes.
        if attribute.is(Some(super::XSI_NS), "type") {
            let qname = QName(attribute.value.as_str());
            let (resolved, local) = resolver.resolve_element(qname);
            if let Ok(Some(value_ns)) = namespace(resolved) {
                attribute.value = local.into_inner().to_owned();
                attribute.value_ns = Some(value_ns);
            }
        }
        el.attributes.push(attribute);
    }
    Ok(el)
}

/// The namespace of a resolved name; `Err(prefix)` for an undeclared prefix.
fn namespace(resolved: ResolveResult<'_>) -> Result<Option<NsStr>, String> {
    match resolved {
        ResolveResult::Bound(ns) => Ok(Some(intern_ns(ns.into_inner()))),
        ResolveResult::Unbound => Ok(None),
        ResolveResult::Unknown(p) if p == "xml" => Ok(Some(Cow::Borrowed(XML_NS))),
        ResolveResult::Unknown(p) => Err(p),
    }
}

/// The prefix to remember: the canonical one for well-known namespaces.
fn prefix_hint(ns: Option<&str>, name: QName<'_>) -> Option<NsStr> {
    if let Some(p) = ns.and_then(canonical_prefix) {
        return Some(Cow::Borrowed(p));
    }
    name.prefix().map(|p| Cow::Owned(p.into_inner().to_owned()))
}

/// Refuses a second element with the same id among BPMN and diagram elements
/// (vendor elements may use `id` for something else).
fn check_id(el: &Element, ids: &mut HashSet<String>, text: &str) -> Result<(), ImportError> {
    let checked = matches!(
        el.ns.as_deref(),
        Some(BPMN_MODEL_NS | BPMNDI_NS | DC_NS | DI_NS)
    );
    if let (true, Some(id)) = (checked, el.id())
        && !ids.insert(id.to_owned())
    {
        let (line, column) = line_col(text, el.offset);
        return Err(ImportError::DuplicateId {
            id: id.to_owned(),
            line,
            column,
        });
    }
    Ok(())
}
