//! BPMN 2.0 XML: import into the model and export from it.
//!
//! The reader is quick-xml's namespace-aware `NsReader`: elements are matched
//! on the namespace URI, never on a prefix (`semantic:`, `bpmn:`, `bpmn2:`
//! and a default namespace all occur). Import parses into an owned element
//! tree first, then moves each element either into a typed model field or
//! into `extras` verbatim; export builds the tree back and prints it.

use std::collections::HashSet;

use crate::model::Definitions;

mod fragment;
mod layout;
mod parse;
mod print;
mod read;
mod read_kit;
mod read_node;
pub mod tree;
mod write;

#[cfg(test)]
mod tests;

/// The BPMN 2.0 model namespace.
pub const BPMN_MODEL_NS: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";
/// The BPMN diagram interchange namespace.
pub const BPMNDI_NS: &str = "http://www.omg.org/spec/BPMN/20100524/DI";
/// The OMG DD "DC" namespace (bounds, fonts).
pub const DC_NS: &str = "http://www.omg.org/spec/DD/20100524/DC";
/// The OMG DD "DI" namespace (waypoints).
pub const DI_NS: &str = "http://www.omg.org/spec/DD/20100524/DI";
/// The XML Schema instance namespace (`xsi:type`).
pub const XSI_NS: &str = "http://www.w3.org/2001/XMLSchema-instance";
/// Camunda 7's extension namespace (`camunda:collection` is interpreted).
pub const CAMUNDA_NS: &str = "http://camunda.org/schema/1.0/bpmn";
/// The namespace of the `xml:` prefix.
pub const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// The largest document imported: larger ones are refused unread.
pub const MAX_BYTES: usize = 16 * 1024 * 1024;
/// The deepest element nesting imported.
pub const MAX_DEPTH: usize = 256;
/// The most elements imported (a 16 MiB file of empty elements would
/// otherwise take far more memory than any real model).
pub const MAX_ELEMENTS: usize = 500_000;

/// Why a document was not imported. Positions are 1-based lines and
/// columns (in characters) of the decoded text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// More bytes or elements than the limits allow.
    #[error("the document is too large: {size} (at most {limit})")]
    TooLarge {
        /// Bytes or elements found.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The bytes are not text in an encoding the importer reads.
    #[error("cannot decode the document: {message}")]
    Encoding {
        /// What is wrong.
        message: String,
    },
    /// Not well-formed XML.
    #[error("not well-formed XML at line {line}, column {column}: {message}")]
    Malformed {
        /// Line.
        line: usize,
        /// Column.
        column: usize,
        /// What the reader found.
        message: String,
    },
    /// A document type declaration: its entities would not be expanded, so
    /// the document is refused rather than read wrongly.
    #[error("line {line}, column {column}: DOCTYPE declarations are not accepted")]
    Doctype {
        /// Line.
        line: usize,
        /// Column.
        column: usize,
    },
    /// Elements nested deeper than the limit.
    #[error("line {line}, column {column}: elements nested deeper than {limit}")]
    TooDeep {
        /// Line.
        line: usize,
        /// Column.
        column: usize,
        /// The limit.
        limit: usize,
    },
    /// The root is not `definitions` in the BPMN model namespace.
    #[error(
        "not a BPMN 2.0 document: the root element is {found}, not {{{BPMN_MODEL_NS}}}definitions"
    )]
    NotBpmn {
        /// The root found, `{namespace}name`.
        found: String,
    },
    /// Two elements with one id.
    #[error("line {line}, column {column}: duplicate id {id:?}")]
    DuplicateId {
        /// The id.
        id: String,
        /// Line of the second element.
        line: usize,
        /// Column of the second element.
        column: usize,
    },
    /// A required attribute (an id, a flow's source or target) is missing.
    #[error("line {line}, column {column}: {element} has no {attribute}")]
    MissingAttribute {
        /// The element's local name.
        element: String,
        /// The attribute.
        attribute: String,
        /// Line.
        line: usize,
        /// Column.
        column: usize,
    },
}

impl ImportError {
    /// Whether the input is not (readable, acceptable) XML at all, as
    /// opposed to XML that is not a valid BPMN document.
    pub fn is_malformed(&self) -> bool {
        matches!(
            self,
            Self::TooLarge { .. }
                | Self::Encoding { .. }
                | Self::Malformed { .. }
                | Self::Doctype { .. }
                | Self::TooDeep { .. }
        )
    }

    /// Line and column, when the error has a position.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            Self::Malformed { line, column, .. }
            | Self::Doctype { line, column }
            | Self::TooDeep { line, column, .. }
            | Self::DuplicateId { line, column, .. }
            | Self::MissingAttribute { line, column, .. } => Some((*line, *column)),
            _ => None,
        }
    }
}

/// Imports a BPMN 2.0 XML document (UTF-8, UTF-16 with BOM, ISO-8859-1 or
/// windows-1252).
pub fn import(xml: &[u8]) -> Result<Definitions, ImportError> {
    let doc = parse::document(xml)?;
    let mut defs = read::definitions(doc)?;
    layout::strip_generated(&mut defs);
    Ok(defs)
}

/// Exports the model as BPMN 2.0 XML in UTF-8, laying out what has no
/// diagram element yet. The same model always gives the same text.
pub fn export(defs: &Definitions) -> String {
    let mut ids = document_ids(defs);
    let diagrams = layout::complete(defs, &mut ids);
    let root = write::definitions(defs, diagrams);
    let mut prefixes = print::Prefixes::new(true);
    prefixes.collect(&root);
    for ns in &defs.namespaces {
        prefixes.declare(&ns.prefix, &ns.uri);
    }
    print::document(&root, &prefixes)
}

/// Every `id` in the document the model exports to (model, kept parts and
/// diagram), in document order.
pub(crate) fn ids_in_order(defs: &Definitions) -> Vec<String> {
    let root = write::definitions(defs, defs.diagrams.clone());
    let mut ids = Vec::new();
    root.walk(&mut |e| {
        if let Some(id) = e.id() {
            ids.push(id.to_owned());
        }
    });
    ids
}

/// The set of [`ids_in_order`].
fn document_ids(defs: &Definitions) -> HashSet<String> {
    ids_in_order(defs).into_iter().collect()
}
