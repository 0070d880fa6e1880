//! A small owned XML tree: what the model keeps verbatim (vendor extensions,
//! unknown elements, the diagram) and what the importer and exporter work on.
//!
//! Names carry their namespace URI, which is what identity is about; the
//! prefix is only the one the source used, a hint for writing it back, and
//! equality ignores it. In JSON an element is one string of XML that declares
//! its own namespaces, readable by agents and compact to store.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{BPMN_MODEL_NS, BPMNDI_NS, DC_NS, DI_NS, XSI_NS};

/// A namespace URI or prefix: borrowed for the well-known ones, so a large
/// document does not allocate one copy of the BPMN URI per element.
pub type NsStr = Cow<'static, str>;

/// The well-known namespaces and the prefixes the exporter writes for them.
pub(crate) const CANONICAL: [(&str, &str); 5] = [
    (BPMN_MODEL_NS, "bpmn"),
    (BPMNDI_NS, "bpmndi"),
    (DC_NS, "dc"),
    (DI_NS, "di"),
    (XSI_NS, "xsi"),
];

/// Interns a namespace URI: the well-known ones become static strings.
pub(crate) fn intern_ns(uri: &str) -> NsStr {
    CANONICAL
        .iter()
        .find(|(ns, _)| *ns == uri)
        .map(|(ns, _)| Cow::Borrowed(*ns))
        .unwrap_or_else(|| Cow::Owned(uri.to_owned()))
}

/// The canonical prefix of a well-known namespace.
pub(crate) fn canonical_prefix(uri: &str) -> Option<&'static str> {
    CANONICAL.iter().find(|(ns, _)| *ns == uri).map(|(_, p)| *p)
}

/// One XML element with its attributes and content, in document order.
#[derive(Debug, Clone)]
pub struct Element {
    /// Namespace URI; `None` for an element in no namespace.
    pub ns: Option<NsStr>,
    /// The prefix the source used (a hint for export; not compared).
    pub prefix: Option<NsStr>,
    /// Local name.
    pub name: String,
    /// Attributes in document order (namespace declarations excluded).
    pub attributes: Vec<Attribute>,
    /// Child content in document order.
    pub children: Vec<Content>,
    /// Byte offset of the start tag in the decoded source, for error messages.
    pub(crate) offset: usize,
}

/// One attribute of an [`Element`] or of a model object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attribute {
    /// Namespace URI; `None` for an unqualified attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns: Option<NsStr>,
    /// The prefix the source used (a hint for export; not compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<NsStr>,
    /// Local name.
    pub name: String,
    /// The value, entities decoded.
    pub value: String,
    /// For a QName value (`xsi:type="bpmn:tFormalExpression"`): the namespace
    /// its prefix stood for, `value` then holding the local part alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_ns: Option<NsStr>,
}

/// A piece of element content.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A child element.
    Element(Element),
    /// Character data, entities decoded.
    Text(String),
    /// A CDATA section's content.
    CData(String),
    /// A comment's content.
    Comment(String),
    /// A processing instruction's content (target and data).
    Pi(String),
}

impl PartialEq for Element {
    /// Namespaces, names, attributes and content; not prefixes or offsets.
    fn eq(&self, other: &Self) -> bool {
        self.ns == other.ns
            && self.name == other.name
            && self.attributes == other.attributes
            && self.children == other.children
    }
}

impl PartialEq for Attribute {
    /// Namespace, name and value; not the prefix.
    fn eq(&self, other: &Self) -> bool {
        self.ns == other.ns
            && self.name == other.name
            && self.value == other.value
            && self.value_ns == other.value_ns
    }
}

impl Attribute {
    /// An unqualified attribute.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            ns: None,
            prefix: None,
            name: name.into(),
            value: value.into(),
            value_ns: None,
        }
    }

    /// A namespaced attribute, e.g. `camunda:assignee`.
    pub fn qualified(
        ns: impl Into<String>,
        prefix: impl Into<String>,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        let ns: String = ns.into();
        Self {
            ns: Some(intern_ns(&ns)),
            prefix: Some(Cow::Owned(prefix.into())),
            name: name.into(),
            value: value.into(),
            value_ns: None,
        }
    }

    /// Whether this is the attribute `name` in namespace `ns`.
    pub fn is(&self, ns: Option<&str>, name: &str) -> bool {
        self.ns.as_deref() == ns && self.name == name
    }
}

impl Element {
    /// An empty element.
    pub fn new(ns: Option<&str>, prefix: Option<&str>, name: impl Into<String>) -> Self {
        Self {
            ns: ns.map(intern_ns),
            prefix: prefix.map(|p| Cow::Owned(p.to_owned())),
            name: name.into(),
            attributes: Vec::new(),
            children: Vec::new(),
            offset: 0,
        }
    }

    /// An empty element in the BPMN model namespace.
    pub fn bpmn(name: impl Into<String>) -> Self {
        let mut el = Self::new(Some(BPMN_MODEL_NS), None, name);
        el.prefix = Some(Cow::Borrowed("bpmn"));
        el
    }

    /// Whether this element is `name` in namespace `ns`.
    pub fn is(&self, ns: &str, name: &str) -> bool {
        self.ns.as_deref() == Some(ns) && self.name == name
    }

    /// The local name if the element is in the BPMN model namespace.
    pub fn bpmn_name(&self) -> Option<&str> {
        (self.ns.as_deref() == Some(BPMN_MODEL_NS)).then_some(self.name.as_str())
    }

    /// The value of the unqualified attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|a| a.is(None, name))
            .map(|a| a.value.as_str())
    }

    /// The element's `id` attribute.
    pub fn id(&self) -> Option<&str> {
        self.attr("id")
    }

    /// Child elements in order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|c| match c {
            Content::Element(e) => Some(e),
            _ => None,
        })
    }

    /// Mutable child elements in order.
    pub fn elements_mut(&mut self) -> impl Iterator<Item = &mut Element> {
        self.children.iter_mut().filter_map(|c| match c {
            Content::Element(e) => Some(e),
            _ => None,
        })
    }

    /// The text and CDATA content if the element holds no child element
    /// (comments are skipped); `None` for element content.
    pub fn text_only(&self) -> Option<String> {
        let mut text = String::new();
        for child in &self.children {
            match child {
                Content::Text(t) | Content::CData(t) => text.push_str(t),
                Content::Comment(_) => {}
                Content::Element(_) | Content::Pi(_) => return None,
            }
        }
        Some(text)
    }

    /// Appends an unqualified attribute (builder style).
    pub fn with_attr(mut self, name: &str, value: impl Into<String>) -> Self {
        self.attributes.push(Attribute::new(name, value));
        self
    }

    /// Appends an unqualified attribute when the value is present.
    pub fn with_opt_attr(self, name: &str, value: Option<&str>) -> Self {
        match value {
            Some(v) => self.with_attr(name, v),
            None => self,
        }
    }

    /// Appends a child element (builder style).
    pub fn with_child(mut self, child: Element) -> Self {
        self.children.push(Content::Element(child));
        self
    }

    /// Appends text content (builder style).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.children.push(Content::Text(text.into()));
        self
    }

    /// Calls `f` on this element and every descendant, depth first.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Element)) {
        f(self);
        for child in self.elements() {
            child.walk(f);
        }
    }
}
