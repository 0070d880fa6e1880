//! Import guards, encodings, what is kept, and export details.

use proptest::prelude::*;

use super::*;
use crate::model::*;

/// A definitions document around `body`, with the usual namespaces.
fn doc(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="{BPMN_MODEL_NS}" xmlns:xsi="{XSI_NS}" xmlns:v="urn:vendor" id="d" targetNamespace="urn:t">
{body}
</bpmn:definitions>"#
    )
}

fn err(xml: &str) -> ImportError {
    match import(xml.as_bytes()) {
        Ok(d) => panic!("imported: {d:?}"),
        Err(e) => e,
    }
}

fn round_trip(d: &Definitions) -> Definitions {
    let xml = export(d);
    let back = import(xml.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    assert_eq!(&back, d, "{xml}");
    back
}

#[test]
fn what_is_not_xml_is_malformed() {
    for input in ["not xml at all", "<definitions", "", "<a></b>", "<a/><b/>"] {
        let e = err(input);
        assert!(e.is_malformed(), "{input:?}: {e:?}");
        assert!(
            matches!(e, ImportError::Malformed { .. }),
            "{input:?}: {e:?}"
        );
    }
}

#[test]
fn xml_that_is_not_bpmn_is_refused_as_such() {
    let e = err("<?xml version=\"1.0\"?><html><body/></html>");
    assert_eq!(
        e,
        ImportError::NotBpmn {
            found: "html".into()
        }
    );
    assert!(!e.is_malformed());
    // The right local name in another namespace is not BPMN either.
    let e = err(r#"<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/DI"/>"#);
    assert!(matches!(e, ImportError::NotBpmn { found } if found.contains("/DI}definitions")));
}

#[test]
fn the_prefix_does_not_matter_only_the_namespace() {
    for prefix in ["semantic:", "bpmn2:", "x:", ""] {
        let decl = if prefix.is_empty() {
            "xmlns".to_owned()
        } else {
            format!("xmlns:{}", &prefix[..prefix.len() - 1])
        };
        let xml = format!(
            r#"<{prefix}definitions {decl}="{BPMN_MODEL_NS}" targetNamespace="t"><{prefix}process id="p"><{prefix}task id="t1"/></{prefix}process></{prefix}definitions>"#
        );
        let d = import(xml.as_bytes()).unwrap_or_else(|e| panic!("{prefix}: {e}"));
        assert_eq!(d.processes[0].nodes[0].id, "t1", "{prefix}");
    }
}

#[test]
fn duplicate_ids_are_named_with_their_position() {
    let xml = doc(
        "<bpmn:process id=\"p\">\n<bpmn:task id=\"a\"/>\n<bpmn:task id=\"a\"/>\n</bpmn:process>",
    );
    let e = err(&xml);
    assert_eq!(
        e,
        ImportError::DuplicateId {
            id: "a".into(),
            line: 5,
            column: 1
        }
    );
    assert!(e.to_string().contains("\"a\""), "{e}");
    // Vendor elements may use `id` for other things.
    let xml = doc(
        r#"<bpmn:process id="p"><bpmn:extensionElements><v:x id="p"/></bpmn:extensionElements></bpmn:process>"#,
    );
    assert!(import(xml.as_bytes()).is_ok());
}

#[test]
fn hostile_documents_are_refused() {
    let big = vec![b' '; MAX_BYTES + 1];
    assert!(matches!(import(&big), Err(ImportError::TooLarge { .. })));
    let deep = format!(
        "{}{}",
        "<v:x>".repeat(MAX_DEPTH + 1),
        "</v:x>".repeat(MAX_DEPTH + 1)
    );
    let e = err(&doc(&format!(
        "<bpmn:extensionElements>{deep}</bpmn:extensionElements>"
    )));
    assert!(
        matches!(
            e,
            ImportError::TooDeep {
                limit: MAX_DEPTH,
                ..
            }
        ),
        "{e:?}"
    );
    let many = "<v:x/>".repeat(MAX_ELEMENTS + 1);
    let e = err(&doc(&format!(
        "<bpmn:extensionElements>{many}</bpmn:extensionElements>"
    )));
    assert!(
        matches!(
            e,
            ImportError::TooLarge {
                limit: MAX_ELEMENTS,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn doctypes_and_their_entities_are_refused_not_ignored() {
    let bomb = r#"<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d"><process id="p" name="&b;"/></definitions>"#;
    assert_eq!(
        err(bomb),
        ImportError::Doctype {
            line: 1,
            column: 22
        }
    );
    let external = r#"<?xml version="1.0"?><!DOCTYPE d SYSTEM "file:///etc/passwd"><definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"/>"#;
    assert!(matches!(err(external), ImportError::Doctype { .. }));
    // An entity no DTD declared is an error, not an empty string.
    let e = err(&doc(
        r#"<bpmn:process id="p" name="x"><bpmn:documentation>&b;</bpmn:documentation></bpmn:process>"#,
    ));
    assert!(
        matches!(&e, ImportError::Malformed { message, .. } if message.contains("&b;")),
        "{e:?}"
    );
}

#[test]
fn entities_and_character_references_are_decoded() {
    let xml = doc(
        r#"<bpmn:process id="p" name="a&#xA;b &amp; &lt;c&gt; &#233;"><bpmn:documentation>x &amp;&#10;y</bpmn:documentation></bpmn:process>"#,
    );
    let d = import(xml.as_bytes()).expect("imports");
    assert_eq!(d.processes[0].name.as_deref(), Some("a\nb & <c> é"));
    assert_eq!(d.processes[0].documentation.as_deref(), Some("x &\ny"));
    round_trip(&d);
}

#[test]
fn single_byte_and_utf16_encodings_are_decoded() {
    let latin1 = |enc: &str, byte: u8| {
        let mut bytes = format!(r#"<?xml version="1.0" encoding="{enc}"?><definitions xmlns="{BPMN_MODEL_NS}"><process id="p" name="kl"#).into_bytes();
        bytes.push(byte);
        bytes.extend_from_slice(b"ren\"/></definitions>");
        import(&bytes).map(|d| d.processes[0].name.clone())
    };
    assert_eq!(latin1("ISO-8859-1", 0xE4), Ok(Some("klären".into())));
    assert_eq!(latin1("windows-1252", 0x80), Ok(Some("kl€ren".into())));
    assert!(matches!(
        latin1("UTF-8", 0xE4),
        Err(ImportError::Encoding { .. })
    ));
    assert!(matches!(
        latin1("Shift_JIS", b'a'),
        Err(ImportError::Encoding { .. })
    ));
    let text = format!(
        r#"<?xml version="1.0" encoding="UTF-16"?><definitions xmlns="{BPMN_MODEL_NS}"><process id="ü"/></definitions>"#
    );
    let mut le = vec![0xFF, 0xFE];
    le.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    assert_eq!(import(&le).expect("UTF-16LE").processes[0].id, "ü");
    let mut be = vec![0xFE, 0xFF];
    be.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
    assert_eq!(import(&be).expect("UTF-16BE").processes[0].id, "ü");
}

#[test]
fn undeclared_prefixes_and_missing_ids_are_refused() {
    let e = err(&doc(
        r#"<bpmn:process id="p"><nope:task id="t"/></bpmn:process>"#,
    ));
    assert!(
        matches!(&e, ImportError::Malformed { message, .. } if message.contains("nope")),
        "{e:?}"
    );
    let e = err(&doc(
        r#"<bpmn:process id="p"><bpmn:task name="no id"/></bpmn:process>"#,
    ));
    assert!(
        matches!(&e, ImportError::MissingAttribute { element, attribute, line: 3, .. } if element == "task" && attribute == "id"),
        "{e:?}"
    );
    let e = err(&doc(
        r#"<bpmn:process id="p"><bpmn:sequenceFlow id="f" sourceRef="a"/></bpmn:process>"#,
    ));
    assert!(
        matches!(&e, ImportError::MissingAttribute { attribute, .. } if attribute == "targetRef"),
        "{e:?}"
    );
}

#[test]
fn unknown_bpmn_elements_are_kept_with_their_ids() {
    let xml = doc(r#"<bpmn:choreography id="chor"/>
<bpmn:process id="p">
  <bpmn:property id="prop"/>
  <bpmn:adHocSubProcess id="adhoc"><bpmn:task id="inner"/></bpmn:adHocSubProcess>
  <bpmn:complexGateway id="cx" default="f"><bpmn:activationCondition xsi:type="bpmn:tFormalExpression">x</bpmn:activationCondition></bpmn:complexGateway>
  <bpmn:choreographyTask id="ct"/>
  <bpmn:futureThing id="future"/>
  <bpmn:sequenceFlow id="f" sourceRef="adhoc" targetRef="cx"/>
  <bpmn:resourceRole id="role"/>
</bpmn:process>"#);
    let d = import(xml.as_bytes()).expect("imports");
    assert_eq!(
        d.root_element("chor").map(|e| e.name.as_str()),
        Some("choreography")
    );
    let p = &d.processes[0];
    let kinds: Vec<_> = p
        .nodes
        .iter()
        .map(|n| (n.id.as_str(), n.kind.element_name()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("adhoc", "adHocSubProcess"),
            ("cx", "complexGateway"),
            ("ct", "choreographyTask")
        ]
    );
    assert_eq!(
        p.nodes[0].kind,
        NodeKind::Unsupported {
            element: "adHocSubProcess".into()
        }
    );
    assert_eq!(p.nodes[0].extras.children[0].id(), Some("inner"));
    assert_eq!(p.nodes[1].default_flow.as_deref(), Some("f"));
    assert_eq!(p.nodes[1].extras.children[0].name, "activationCondition");
    let kept: Vec<_> = p.extras.elements().filter_map(|e| e.id()).collect();
    assert_eq!(kept, ["prop", "future", "role"]);
    assert_eq!(p.extras.children.len(), 1, "before the content");
    assert_eq!(p.extras.trailing.len(), 2, "after the content");
    let back = round_trip(&d);
    assert!(back.ids().iter().any(|i| i == "inner"));
    let xml = export(&d);
    let at = |s: &str| xml.find(s).unwrap_or_else(|| panic!("{s} in {xml}"));
    assert!(
        at("id=\"prop\"") < at("id=\"adhoc\"") && at("id=\"f\"") < at("id=\"role\""),
        "kept in place"
    );
}

#[test]
fn vendor_content_is_kept_verbatim_with_comments_and_cdata() {
    let xml = doc(r#"<bpmn:process id="p" v:flag="on" xml:lang="de">
  <bpmn:extensionElements>
    <!-- a note -->
    <v:script><![CDATA[a < b && c]]></v:script>
    <v:mixed>text <v:b>bold</v:b> tail</v:mixed>
    <other xmlns="urn:other" attr="1"><child/></other>
  </bpmn:extensionElements>
  <bpmn:task id="t"/>
</bpmn:process>"#);
    let d = import(xml.as_bytes()).expect("imports");
    let p = &d.processes[0];
    assert_eq!(p.extras.attribute(Some("urn:vendor"), "flag"), Some("on"));
    assert_eq!(p.extras.attribute(Some(XML_NS), "lang"), Some("de"));
    let ext = p.extras.extension_elements().expect("kept");
    assert!(matches!(&ext.children[0], Content::Comment(c) if c == " a note "));
    let script = ext.elements().next().expect("script");
    assert_eq!(script.children, [Content::CData("a < b && c".into())]);
    let out = export(&d);
    assert!(out.contains("<![CDATA[a < b && c]]>"), "{out}");
    assert!(
        out.contains("<v:mixed>text <v:b>bold</v:b> tail</v:mixed>"),
        "{out}"
    );
    assert!(
        out.contains(r#"xmlns:ns1="urn:other""#) && out.contains("<ns1:other attr=\"1\">"),
        "{out}"
    );
    assert!(
        out.contains(r#"xml:lang="de""#) && !out.contains("xmlns:xml"),
        "{out}"
    );
    round_trip(&d);
}

#[test]
fn kept_elements_are_xml_strings_in_json() {
    let xml = doc(
        r#"<bpmn:process id="p"><bpmn:extensionElements><v:a k="&quot;1&quot;">x</v:a></bpmn:extensionElements></bpmn:process>"#,
    );
    let d = import(xml.as_bytes()).expect("imports");
    let json = serde_json::to_value(&d).expect("json");
    let ext = json["processes"][0]["extras"]["leading"][0]
        .as_str()
        .expect("a string");
    assert_eq!(
        ext,
        r#"<bpmn:extensionElements xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:v="urn:vendor"><v:a k="&quot;1&quot;">x</v:a></bpmn:extensionElements>"#
    );
    let back: Definitions = serde_json::from_value(json).expect("back");
    assert_eq!(back, d);
    let bad = serde_json::from_str::<Element>(r#""<a><b></a>""#);
    assert!(bad.is_err());
    let dtd = serde_json::from_str::<Element>(r#""<!DOCTYPE a><a/>""#);
    assert!(dtd.is_err());
}

#[test]
fn every_trigger_and_loop_round_trips() {
    let xml = doc(r#"<bpmn:process id="p">
  <bpmn:startEvent id="s" isInterrupting="false"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:startEvent>
  <bpmn:intermediateThrowEvent id="l"><bpmn:linkEventDefinition id="ld" name="jump"/></bpmn:intermediateThrowEvent>
  <bpmn:intermediateThrowEvent id="c"><bpmn:compensateEventDefinition activityRef="t"/></bpmn:intermediateThrowEvent>
  <bpmn:endEvent id="e1"><bpmn:escalationEventDefinition escalationRef="esc"/></bpmn:endEvent>
  <bpmn:endEvent id="e2"><bpmn:cancelEventDefinition/><bpmn:errorEventDefinition errorRef="err"/></bpmn:endEvent>
  <bpmn:receiveTask id="t" messageRef="m"><bpmn:multiInstanceLoopCharacteristics><bpmn:loopCardinality>3</bpmn:loopCardinality><bpmn:loopDataInputRef>items</bpmn:loopDataInputRef><bpmn:inputDataItem id="item"/><bpmn:completionCondition language="feel">done</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics></bpmn:receiveTask>
  <bpmn:subProcess id="sub" triggeredByEvent="true"><bpmn:startEvent id="inner"><bpmn:timerEventDefinition><bpmn:timeDate>2030-01-01T00:00:00Z</bpmn:timeDate></bpmn:timerEventDefinition></bpmn:startEvent></bpmn:subProcess>
  <bpmn:callActivity id="call" calledElement="other"><bpmn:standardLoopCharacteristics testBefore="true"/></bpmn:callActivity>
</bpmn:process>"#);
    let d = import(xml.as_bytes()).expect("imports");
    let p = &d.processes[0];
    let names: Vec<_> = p
        .nodes
        .iter()
        .map(|n| n.kind.trigger().and_then(Trigger::element_name))
        .collect();
    assert_eq!(
        names,
        [
            Some("signalEventDefinition"),
            Some("linkEventDefinition"),
            Some("compensateEventDefinition"),
            Some("escalationEventDefinition"),
            None,
            None,
            None,
            None
        ]
    );
    assert_eq!(
        p.nodes[4].kind.trigger().map(|t| t.definitions().len()),
        Some(2)
    );
    match p.nodes[5].kind.loop_characteristics() {
        Some(Loop::MultiInstance {
            cardinality,
            loop_data_input_ref,
            completion_condition_attributes,
            extras,
            ..
        }) => {
            assert_eq!(cardinality.as_deref(), Some("3"));
            assert_eq!(loop_data_input_ref.as_deref(), Some("items"));
            assert_eq!(completion_condition_attributes[0].value, "feel");
            assert_eq!(
                extras.children[0].name, "inputDataItem",
                "between input and completion"
            );
        }
        other => panic!("{other:?}"),
    }
    let out = export(&d);
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("{s}"));
    assert!(
        at("loopDataInputRef") < at("inputDataItem")
            && at("inputDataItem") < at("completionCondition")
    );
    round_trip(&d);
}

#[test]
fn errors_say_where() {
    let e = err("<?xml version=\"1.0\"?>\n<definitions xmlns=\"x\">\n  <a>\n</definitions>");
    let (line, _) = e.position().expect("a position");
    assert!(line >= 3, "{e}");
    assert!(e.to_string().contains("line"), "{e}");
}

/// Characters XML 1.0 can carry.
fn xml_char() -> impl Strategy<Value = char> {
    prop_oneof![
        Just('\n'),
        Just('\r'),
        Just('\t'),
        Just('&'),
        Just('<'),
        Just('"'),
        Just(']'),
        Just('>'),
        proptest::char::range(' ', '\u{D7FF}'),
        proptest::char::range('\u{10000}', '\u{10FFFF}'),
    ]
}

proptest! {
    #[test]
    fn any_name_condition_and_documentation_survive(
        name in proptest::collection::vec(xml_char(), 0..24).prop_map(String::from_iter),
        text in proptest::collection::vec(xml_char(), 0..24).prop_map(String::from_iter),
    ) {
        let mut p = Process::new("p");
        let mut n = Node::new("n", NodeKind::Task { task: TaskKind::Task, loop_: None });
        n.name = Some(name.clone());
        n.documentation = Some(text.clone());
        p.nodes.push(n);
        p.nodes.push(Node::new("m", NodeKind::EndEvent { result: Trigger::None }));
        p.flows.push(SequenceFlow {
            id: "f".into(),
            name: Some(text.clone()),
            source: "n".into(),
            target: "m".into(),
            condition: Some(name),
            condition_attributes: vec![Attribute::new("language", text)],
            documentation: None,
            extras: Preserved::default(),
        });
        let d = Definitions { processes: vec![p], ..Definitions::default() };
        let xml = export(&d);
        let back = import(xml.as_bytes()).map_err(|e| TestCaseError::fail(format!("{e}\n{xml}")))?;
        prop_assert_eq!(back, d);
    }
}
