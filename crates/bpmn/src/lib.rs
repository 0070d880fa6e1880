//! BPMN 2.0 workflows, the pure part: the semantic model of a definitions
//! document, its import from and export to XML (diagram interchange and
//! vendor extensions kept verbatim), validation with element ids, and the
//! condition language gateways evaluate. No I/O: the service stores
//! definitions and runs instances on the engine.

pub mod edit;
pub mod expr;
pub mod model;
pub mod run;
pub mod validate;
pub mod xml;

pub use edit::empty;
pub use model::*;
pub use validate::counts;
pub use xml::{ImportError, export, import};
