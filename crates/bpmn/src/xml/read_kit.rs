//! What reading the element tree into the model needs at every level: the
//! element names the model types, the text context for positions, attribute
//! and kept-content helpers, ids and required attributes.

use crate::model::*;

use super::parse::line_col;
use super::{BPMN_MODEL_NS, ImportError, XSI_NS};

/// Flow nodes the model types.
pub(super) const NODES: &[&str] = &[
    "startEvent",
    "endEvent",
    "intermediateCatchEvent",
    "intermediateThrowEvent",
    "boundaryEvent",
    "task",
    "userTask",
    "manualTask",
    "serviceTask",
    "sendTask",
    "receiveTask",
    "scriptTask",
    "businessRuleTask",
    "subProcess",
    "callActivity",
    "exclusiveGateway",
    "inclusiveGateway",
    "parallelGateway",
    "eventBasedGateway",
    "complexGateway",
];

/// Flow nodes the model keeps whole as [`NodeKind::Unsupported`].
pub(super) const UNSUPPORTED_NODES: &[&str] = &[
    "transaction",
    "adHocSubProcess",
    "callChoreography",
    "choreographyTask",
    "subChoreography",
    "implicitThrowEvent",
];

/// Children written before everything else, whatever their position.
pub(super) const LEADING: &[&str] = &[
    "documentation",
    "extensionElements",
    "auditing",
    "monitoring",
    "categoryValueRef",
    "import",
    "extension",
];

/// The document's text, for positions in errors.
#[derive(Clone, Copy)]
pub(super) struct Cx<'t> {
    pub(super) text: &'t str,
}

impl Cx<'_> {
    pub(super) fn missing(self, el_name: &str, offset: usize, attribute: &str) -> ImportError {
        let (line, column) = line_col(self.text, offset);
        ImportError::MissingAttribute {
            element: el_name.to_owned(),
            attribute: attribute.to_owned(),
            line,
            column,
        }
    }
}

/// The attributes of one element, taken one by one as they are interpreted.
pub(super) struct Attrs(pub(super) Vec<Attribute>);

impl Attrs {
    /// Removes and returns the unqualified attribute `name`.
    pub(super) fn take(&mut self, name: &str) -> Option<String> {
        let at = self.0.iter().position(|a| a.is(None, name))?;
        Some(self.0.remove(at).value)
    }

    /// Removes and returns a boolean; a value that is not one stays kept.
    pub(super) fn take_bool(&mut self, name: &str) -> Option<bool> {
        let at = self.0.iter().position(|a| a.is(None, name))?;
        let value = match self.0[at].value.trim() {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => return None,
        };
        self.0.remove(at);
        Some(value)
    }
}

/// What became of one child element.
pub(super) enum Step {
    /// Not interpreted: kept in `extras`.
    Keep(Element),
    /// Interpreted content: later kept children are trailing.
    Content,
    /// Interpreted, but content may still follow in the same position.
    Taken,
}

impl From<Option<Element>> for Step {
    fn from(el: Option<Element>) -> Self {
        el.map_or(Step::Content, Step::Keep)
    }
}

/// Sorts the children of one element: kept ones go to `extras` by position.
#[derive(Default)]
pub(super) struct Kept {
    pub(super) extras: Preserved,
    pub(super) documentation: Option<String>,
    after_content: bool,
}

impl Kept {
    pub(super) fn new(attrs: Attrs) -> Self {
        Self {
            extras: Preserved {
                attributes: attrs.0,
                ..Preserved::default()
            },
            ..Self::default()
        }
    }

    /// Interpreted content was met: what follows is trailing.
    fn content(&mut self) {
        self.after_content = true;
    }

    fn keep(&mut self, el: Element) {
        if el.bpmn_name().is_some_and(|n| LEADING.contains(&n)) {
            self.extras.leading.push(el);
        } else if self.after_content {
            self.extras.trailing.push(el);
        } else {
            self.extras.children.push(el);
        }
    }

    /// Sorts `children`: documentation first, `interpret` for the rest
    /// (which says what became of each).
    pub(super) fn sort(
        &mut self,
        children: Vec<Content>,
        with_documentation: bool,
        mut interpret: impl FnMut(Element) -> Result<Step, ImportError>,
    ) -> Result<(), ImportError> {
        for el in elements(children) {
            let plain_doc = with_documentation
                && self.documentation.is_none()
                && el.bpmn_name() == Some("documentation")
                && el.attributes.is_empty();
            if plain_doc && let Some(text) = el.text_only() {
                self.documentation = Some(text);
                continue;
            }
            match interpret(el)? {
                Step::Keep(el) => self.keep(el),
                Step::Content => self.content(),
                Step::Taken => {}
            }
        }
        Ok(())
    }
}

/// The child elements; text between them is formatting in BPMN elements.
pub(super) fn elements(children: Vec<Content>) -> impl Iterator<Item = Element> {
    children.into_iter().filter_map(|c| match c {
        Content::Element(e) => Some(e),
        _ => None,
    })
}

/// The text of an expression element and its attributes less the implied
/// `xsi:type="tFormalExpression"`; the element back if it holds elements.
pub(super) fn expression(el: Element) -> Result<(String, Vec<Attribute>), Box<Element>> {
    let Some(text) = el.text_only() else {
        return Err(Box::new(el));
    };
    let attrs = el
        .attributes
        .into_iter()
        .filter(|a| {
            !(a.is(Some(XSI_NS), "type")
                && a.value == "tFormalExpression"
                && a.value_ns.as_deref() == Some(BPMN_MODEL_NS))
        })
        .collect();
    Ok((text, attrs))
}

/// Takes the required `id`.
pub(super) fn id_of(
    attrs: &mut Attrs,
    el_name: &str,
    offset: usize,
    cx: Cx<'_>,
) -> Result<String, ImportError> {
    attrs
        .take("id")
        .ok_or_else(|| cx.missing(el_name, offset, "id"))
}

/// Takes a required reference attribute.
pub(super) fn required(
    attrs: &mut Attrs,
    attr: &str,
    el_name: &str,
    offset: usize,
    cx: Cx<'_>,
) -> Result<String, ImportError> {
    attrs
        .take(attr)
        .ok_or_else(|| cx.missing(el_name, offset, attr))
}
