//! Diagram interchange for what has none: elements added after the import
//! (by an editor or an agent) get a shape or an edge, so that Camunda
//! Modeler and bpmn.io open the export. Shapes go to the right of the
//! right-most shape of their process, in one row; edges get two waypoints.
//!
//! What this adds carries ids ending in `_auto_di` and is appended at the end
//! of a plane. The importer takes such a tail away again when laying out the
//! rest gives exactly the same diagram, so `import(export(model)) == model`
//! holds for a model without a diagram too; once a person moves a generated
//! shape, the diagram no longer matches and is kept as it is.

use std::collections::{HashMap, HashSet};

use crate::model::*;

use super::{BPMNDI_NS, DC_NS, DI_NS};

/// The suffix of generated diagram element ids.
const AUTO: &str = "_auto_di";
/// Horizontal gap between laid-out shapes.
const GAP: f64 = 50.0;

/// A rectangle in diagram coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Rect {
    fn right(self) -> f64 {
        self.x + self.w
    }
    fn bottom(self) -> f64 {
        self.y + self.h
    }
    fn mid_y(self) -> f64 {
        self.y + self.h / 2.0
    }
}

/// The diagrams of `defs` with shapes and edges for every element that has
/// none. `taken` holds the document's ids; generated ids are added to it.
pub(crate) fn complete(defs: &Definitions, taken: &mut HashSet<String>) -> Vec<Element> {
    let mut diagrams = defs.diagrams.clone();
    let mut known = HashSet::new();
    let mut bounds = HashMap::new();
    for d in &diagrams {
        index(d, &mut known, &mut bounds);
    }
    let mut state = State {
        diagrams: &mut diagrams,
        known,
        bounds,
        taken,
    };
    for process in &defs.processes {
        state.process(defs, process);
    }
    for c in &defs.collaborations {
        state.collaboration(defs, c);
    }
    diagrams
}

/// Takes away a generated tail of the diagram when laying out again gives it
/// back exactly (see the module comment).
pub(crate) fn strip_generated(defs: &mut Definitions) {
    let mut stripped = defs.diagrams.clone();
    let mut changed = false;
    for d in &mut stripped {
        for plane in d.elements_mut().filter(|e| e.is(BPMNDI_NS, "BPMNPlane")) {
            while plane.children.last().is_some_and(is_generated) {
                plane.children.pop();
                changed = true;
            }
        }
    }
    // A diagram the layout created for a model that had none.
    stripped.retain(|d| {
        let generated = d.id().is_some_and(|id| id.starts_with("BPMNDiagram_auto"))
            && d.elements().all(|p| p.children.is_empty());
        changed |= generated;
        !generated
    });
    if !changed {
        return;
    }
    let original = std::mem::replace(&mut defs.diagrams, stripped);
    let mut ids = super::document_ids(defs);
    if complete(defs, &mut ids) != original {
        defs.diagrams = original;
    }
}

fn is_generated(c: &Content) -> bool {
    let Content::Element(e) = c else {
        return false;
    };
    let di = e.is(BPMNDI_NS, "BPMNShape") || e.is(BPMNDI_NS, "BPMNEdge");
    match (di, e.attr("bpmnElement"), e.id()) {
        (true, Some(of), Some(id)) => id
            .strip_prefix(of)
            .is_some_and(|rest| rest.starts_with(AUTO)),
        _ => false,
    }
}

/// Records which elements have diagram elements, and shape bounds.
fn index(el: &Element, known: &mut HashSet<String>, bounds: &mut HashMap<String, Rect>) {
    el.walk(&mut |e| {
        let Some(of) = e.attr("bpmnElement") else {
            return;
        };
        if !(e.is(BPMNDI_NS, "BPMNShape") || e.is(BPMNDI_NS, "BPMNEdge")) {
            return;
        }
        known.insert(of.to_owned());
        if let Some(r) = e.elements().find(|b| b.is(DC_NS, "Bounds")).and_then(rect) {
            bounds.entry(of.to_owned()).or_insert(r);
        }
    });
}

fn rect(b: &Element) -> Option<Rect> {
    let num = |n: &str| b.attr(n).and_then(|v| v.trim().parse::<f64>().ok());
    Some(Rect {
        x: num("x")?,
        y: num("y")?,
        w: num("width")?,
        h: num("height")?,
    })
}

/// The size a new shape of a node gets.
fn size(kind: &NodeKind) -> (f64, f64) {
    match kind {
        NodeKind::StartEvent { .. }
        | NodeKind::EndEvent { .. }
        | NodeKind::IntermediateCatch { .. }
        | NodeKind::IntermediateThrow { .. }
        | NodeKind::Boundary { .. } => (36.0, 36.0),
        NodeKind::Gateway { .. } => (50.0, 50.0),
        _ => (100.0, 80.0),
    }
}

/// A shape-bearing element of a process.
struct ShapeOf<'a> {
    id: &'a str,
    size: (f64, f64),
    /// The activity a boundary event is attached to.
    attached: Option<&'a str>,
    subprocess: bool,
}

/// What one process needs: shapes and edges (id, source, target).
#[derive(Default)]
struct Needs<'a> {
    /// Every shape-bearing element of the process, laid out or not.
    members: Vec<&'a str>,
    shapes: Vec<ShapeOf<'a>>,
    edges: Vec<(&'a str, &'a str, &'a str)>,
}

impl<'a> Needs<'a> {
    fn scope(
        &mut self,
        nodes: &'a [Node],
        flows: &'a [SequenceFlow],
        data: &'a [DataElement],
        artifacts: &'a [Artifact],
    ) {
        for n in nodes {
            self.members.push(&n.id);
            let attached = match &n.kind {
                NodeKind::Boundary { attached_to, .. } => Some(attached_to.as_str()),
                _ => None,
            };
            self.shapes.push(ShapeOf {
                id: &n.id,
                size: size(&n.kind),
                attached,
                subprocess: matches!(n.kind, NodeKind::SubProcess { .. }),
            });
            if let Some(scope) = n.scope() {
                self.scope(scope.nodes, scope.flows, scope.data, scope.artifacts);
            }
        }
        for d in data {
            if !matches!(d.kind, DataKind::Object { .. }) {
                self.members.push(&d.id);
                self.shapes.push(ShapeOf {
                    id: &d.id,
                    size: (36.0, 50.0),
                    attached: None,
                    subprocess: false,
                });
            }
        }
        for a in artifacts {
            match &a.kind {
                ArtifactKind::TextAnnotation { .. } => {
                    self.members.push(&a.id);
                    self.shapes.push(ShapeOf {
                        id: &a.id,
                        size: (100.0, 30.0),
                        attached: None,
                        subprocess: false,
                    });
                }
                ArtifactKind::Association { source, target, .. } => {
                    self.edges.push((&a.id, source, target));
                }
                ArtifactKind::Group { .. } => {}
            }
        }
        for f in flows {
            self.edges.push((&f.id, &f.source, &f.target));
        }
    }
}

struct State<'s> {
    diagrams: &'s mut Vec<Element>,
    known: HashSet<String>,
    bounds: HashMap<String, Rect>,
    taken: &'s mut HashSet<String>,
}

impl State<'_> {
    fn fresh(&mut self, base: &str) -> String {
        let mut id = base.to_owned();
        let mut n = 2;
        while self.taken.contains(&id) {
            id = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(id.clone());
        id
    }

    fn process(&mut self, defs: &Definitions, p: &Process) {
        let mut needs = Needs::default();
        needs.scope(&p.nodes, &p.flows, &p.data, &p.artifacts);
        let missing_shape = needs.shapes.iter().any(|s| !self.known.contains(s.id));
        let missing_edge = needs.edges.iter().any(|e| !self.known.contains(e.0));
        if !missing_shape && !missing_edge {
            return;
        }
        let participant = defs
            .collaborations
            .iter()
            .flat_map(|c| c.participants.iter().map(move |pa| (c, pa)))
            .find(|(_, pa)| pa.process_ref.as_deref() == Some(p.id.as_str()));
        let mut related: Vec<&str> = needs.members.clone();
        related.extend(participant.map(|(_, pa)| pa.id.as_str()));
        let owner = participant.map_or(p.id.as_str(), |(c, _)| c.id.as_str());
        let plane = self.plane(&related, owner);
        let (mut x, mid) = self.start(&needs.members);
        let mut on_host: HashMap<&str, f64> = HashMap::new();
        for &ShapeOf {
            id,
            size: (w, h),
            attached,
            subprocess,
        } in &needs.shapes
        {
            if self.known.contains(id) {
                continue;
            }
            let host = attached.and_then(|a| self.bounds.get(a).copied());
            let r = match (host, attached) {
                // A boundary event sits on the lower edge of its activity.
                (Some(host), Some(a)) => {
                    let k = on_host.entry(a).or_insert(0.0);
                    *k += 1.0;
                    Rect {
                        x: host.right() - (w + 4.0) * *k - 6.0,
                        y: host.bottom() - h / 2.0,
                        w,
                        h,
                    }
                }
                _ => {
                    let r = Rect {
                        x,
                        y: mid - h / 2.0,
                        w,
                        h,
                    };
                    x += w + GAP;
                    r
                }
            };
            let mut shape = self.shape(id, r);
            if subprocess {
                shape = shape.with_attr("isExpanded", "false");
            }
            self.add(plane, id, shape, Some(r));
        }
        for &(id, source, target) in &needs.edges {
            self.edge(plane, id, source, target);
        }
        if let Some((_, pa)) = participant {
            self.pool(plane, &pa.id, &needs.members);
        }
    }

    fn collaboration(&mut self, _defs: &Definitions, c: &Collaboration) {
        let missing = c.message_flows.iter().any(|m| !self.known.contains(&m.id));
        if !missing {
            return;
        }
        let related: Vec<&str> = c.participants.iter().map(|p| p.id.as_str()).collect();
        let plane = self.plane(&related, &c.id);
        for m in &c.message_flows {
            self.edge(plane, &m.id, &m.source, &m.target);
        }
    }

    /// Where the row of new shapes starts: left x and middle y.
    fn start(&self, members: &[&str]) -> (f64, f64) {
        let right_most = members
            .iter()
            .filter_map(|m| self.bounds.get(*m))
            .max_by(|a, b| a.right().total_cmp(&b.right()));
        if let Some(r) = right_most {
            return (r.right() + GAP, r.mid_y());
        }
        // A process with no shape yet: below everything drawn so far.
        let bottom = self
            .bounds
            .values()
            .map(|r| r.bottom())
            .fold(None, |acc: Option<f64>, b| {
                Some(acc.map_or(b, |a| a.max(b)))
            });
        match bottom {
            Some(b) => (150.0, b + 100.0 + 40.0),
            None => (150.0, 140.0),
        }
    }

    /// The plane to add to: (diagram, plane) indices. One holding a shape of
    /// a related element, else the one for `owner`, else a new diagram.
    fn plane(&mut self, related: &[&str], owner: &str) -> (usize, usize) {
        let mut by_owner = None;
        for (d, diagram) in self.diagrams.iter().enumerate() {
            for (i, child) in diagram.children.iter().enumerate() {
                let Content::Element(plane) = child else {
                    continue;
                };
                if !plane.is(BPMNDI_NS, "BPMNPlane") {
                    continue;
                }
                let holds = plane.elements().any(|s| {
                    s.attr("bpmnElement")
                        .is_some_and(|of| related.contains(&of))
                });
                if holds {
                    return (d, i);
                }
                if by_owner.is_none() && plane.attr("bpmnElement") == Some(owner) {
                    by_owner = Some((d, i));
                }
            }
        }
        if let Some(found) = by_owner {
            return found;
        }
        let diagram_id = self.fresh("BPMNDiagram_auto");
        let plane_id = self.fresh("BPMNPlane_auto");
        let plane = Element::new(Some(BPMNDI_NS), Some("bpmndi"), "BPMNPlane")
            .with_attr("id", plane_id)
            .with_attr("bpmnElement", owner);
        let diagram = Element::new(Some(BPMNDI_NS), Some("bpmndi"), "BPMNDiagram")
            .with_attr("id", diagram_id)
            .with_child(plane);
        self.diagrams.push(diagram);
        (self.diagrams.len() - 1, 0)
    }

    fn shape(&mut self, of: &str, r: Rect) -> Element {
        let id = self.fresh(&format!("{of}{AUTO}"));
        let b = Element::new(Some(DC_NS), Some("dc"), "Bounds")
            .with_attr("x", num(r.x))
            .with_attr("y", num(r.y))
            .with_attr("width", num(r.w))
            .with_attr("height", num(r.h));
        Element::new(Some(BPMNDI_NS), Some("bpmndi"), "BPMNShape")
            .with_attr("id", id)
            .with_attr("bpmnElement", of)
            .with_child(b)
    }

    fn add(&mut self, (d, p): (usize, usize), of: &str, el: Element, r: Option<Rect>) {
        if let Some(Content::Element(plane)) =
            self.diagrams.get_mut(d).and_then(|d| d.children.get_mut(p))
        {
            plane.children.push(Content::Element(el));
        }
        self.known.insert(of.to_owned());
        if let Some(r) = r {
            self.bounds.insert(of.to_owned(), r);
        }
    }

    /// An edge from the source's right middle to the target's left middle.
    fn edge(&mut self, plane: (usize, usize), of: &str, source: &str, target: &str) {
        if self.known.contains(of) {
            return;
        }
        let (Some(s), Some(t)) = (
            self.bounds.get(source).copied(),
            self.bounds.get(target).copied(),
        ) else {
            return;
        };
        let id = self.fresh(&format!("{of}{AUTO}"));
        let point = |x: f64, y: f64| {
            Element::new(Some(DI_NS), Some("di"), "waypoint")
                .with_attr("x", num(x))
                .with_attr("y", num(y))
        };
        let el = Element::new(Some(BPMNDI_NS), Some("bpmndi"), "BPMNEdge")
            .with_attr("id", id)
            .with_attr("bpmnElement", of)
            .with_child(point(s.right(), s.mid_y()))
            .with_child(point(t.x, t.mid_y()));
        self.add(plane, of, el, None);
    }

    /// A pool around the process's shapes, when its participant has none.
    fn pool(&mut self, plane: (usize, usize), of: &str, members: &[&str]) {
        if self.known.contains(of) {
            return;
        }
        let rects: Vec<Rect> = members
            .iter()
            .filter_map(|m| self.bounds.get(*m).copied())
            .collect();
        let Some(first) = rects.first().copied() else {
            return;
        };
        let (mut x0, mut y0, mut x1, mut y1) = (first.x, first.y, first.right(), first.bottom());
        for r in &rects {
            x0 = x0.min(r.x);
            y0 = y0.min(r.y);
            x1 = x1.max(r.right());
            y1 = y1.max(r.bottom());
        }
        // Room for the pool's label band on the left and a margin around.
        let r = Rect {
            x: x0 - 80.0,
            y: y0 - 50.0,
            w: x1 - x0 + 130.0,
            h: y1 - y0 + 100.0,
        };
        let shape = self.shape(of, r).with_attr("isHorizontal", "true");
        self.add(plane, of, shape, Some(r));
    }
}

/// A coordinate as written: no trailing `.0`.
fn num(v: f64) -> String {
    format!("{v}")
}
