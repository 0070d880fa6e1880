//! An element as one self-contained XML string: the form kept parts take in
//! JSON (readable by agents, compact to store), printed and parsed with the
//! exporter's and importer's own rules. Apart from the tree so the tree
//! does not depend on the printer and parser that depend on it.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::tree::Element;

impl Element {
    /// This element as a self-contained XML string (namespaces declared on
    /// it), the form it takes in JSON.
    pub fn to_xml(&self) -> String {
        super::print::fragment(self)
    }

    /// Parses one element from a self-contained XML string.
    pub fn from_xml(xml: &str) -> Result<Self, super::ImportError> {
        super::parse::fragment(xml)
    }
}

impl fmt::Display for Element {
    /// The element as self-contained XML.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_xml())
    }
}

impl Serialize for Element {
    /// As its XML string: compact, and readable in JSON.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_xml())
    }
}

impl<'de> Deserialize<'de> for Element {
    /// From its XML string, with the importer's limits.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct XmlVisitor;
        impl Visitor<'_> for XmlVisitor {
            type Value = Element;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("one XML element as a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Element, E> {
                Element::from_xml(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(XmlVisitor)
    }
}
