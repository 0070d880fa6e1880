//! Who is who in a collaboration: the organisation role a lane or a pool
//! stands for, and where the message flows leaving a node lead.

use super::*;

/// Where a message sent by a node goes along one message flow.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRoute<'a> {
    /// The message flow.
    pub flow: &'a MessageFlow,
    /// The receiving node, when the flow ends on one (else it ends on a pool).
    pub to_node: Option<&'a str>,
    /// The receiving pool: the one named, or the one whose process holds
    /// the receiving node.
    pub to_pool: Option<&'a Participant>,
    /// The role of the receiving side: the lane of the receiving node, else
    /// the pool's.
    pub to_role: Option<String>,
}

/// A role read from an element: its `coordinator:role` attribute, else its
/// name on one line; `None` when both are missing or blank.
fn role_of(extras: &Preserved, name: Option<&str>) -> Option<String> {
    extras
        .attribute(Some(COORDINATOR_NS), "role")
        .map(one_line)
        .or_else(|| name.map(one_line))
        .filter(|r| !r.is_empty())
}

impl Lane {
    /// The organisation role the lane maps to: its `coordinator:role`
    /// attribute, else its name.
    pub fn role(&self) -> Option<String> {
        role_of(&self.extras, self.name.as_deref())
    }
}

impl Participant {
    /// The organisation role the pool maps to: its `coordinator:role`
    /// attribute, else its name.
    pub fn role(&self) -> Option<String> {
        role_of(&self.extras, self.name.as_deref())
    }
}

impl Definitions {
    /// The role of whoever does the node `id`: the innermost lane listing
    /// it (or listing the outermost subprocess around it), else the pool
    /// holding its process.
    pub fn role_of_node(&self, id: &str) -> Option<String> {
        let (process, at) = self.find_node(id)?;
        let top = at.path.first().copied().unwrap_or(id);
        process
            .lane_of(id)
            .or_else(|| process.lane_of(top))
            .and_then(Lane::role)
            .or_else(|| self.participant_of(&process.id).and_then(Participant::role))
    }

    /// The message flows leaving the node `from_node`, in document order,
    /// with where each leads.
    pub fn message_routes(&self, from_node: &str) -> Vec<MessageRoute<'_>> {
        self.collaborations
            .iter()
            .flat_map(|c| &c.message_flows)
            .filter(|f| f.source == from_node)
            .map(|flow| {
                let pool = self
                    .collaborations
                    .iter()
                    .flat_map(|c| &c.participants)
                    .find(|p| p.id == flow.target);
                match pool {
                    Some(p) => MessageRoute {
                        flow,
                        to_node: None,
                        to_pool: Some(p),
                        to_role: p.role(),
                    },
                    None => MessageRoute {
                        flow,
                        to_node: Some(flow.target.as_str()),
                        to_pool: self
                            .find_node(&flow.target)
                            .and_then(|(process, _)| self.participant_of(&process.id)),
                        to_role: self.role_of_node(&flow.target),
                    },
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::import;

    const DOC: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:coordinator="https://coordinator.dev/schema/bpmn/1.0" id="d" targetNamespace="t">
  <collaboration id="c">
    <participant id="shop_pool" name="Shop" processRef="shop"/>
    <participant id="store_pool" name="Warehouse" processRef="store"/>
    <participant id="customer" name="  The
      Customer " />
    <participant id="bank" name="Bank" coordinator:role="payments"/>
    <messageFlow id="mf1" sourceRef="send_order" targetRef="receive"/>
    <messageFlow id="mf2" sourceRef="send_order" targetRef="customer"/>
    <messageFlow id="mf3" sourceRef="pay" targetRef="bank"/>
    <messageFlow id="mf4" sourceRef="customer" targetRef="shop_pool"/>
  </collaboration>
  <process id="shop" isExecutable="true">
    <laneSet id="ls"><lane id="sales" name="Sales" coordinator:role="seller">
      <flowNodeRef>send_order</flowNodeRef></lane>
      <lane id="acc" name="Accounts"><flowNodeRef>sub</flowNodeRef></lane></laneSet>
    <sendTask id="send_order"/>
    <subProcess id="sub"><intermediateThrowEvent id="pay"/></subProcess>
  </process>
  <process id="store" isExecutable="true"><receiveTask id="receive"/></process>
</definitions>"#;

    #[test]
    fn a_flow_to_a_node_goes_to_its_lane_else_its_pool_and_a_flow_to_a_pool_to_the_pool() {
        let d = import(DOC.as_bytes()).expect("imports");
        let routes = d.message_routes("send_order");
        let got: Vec<_> = routes
            .iter()
            .map(|r| {
                (
                    r.flow.id.as_str(),
                    r.to_node,
                    r.to_pool.map(|p| p.id.as_str()),
                    r.to_role.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "mf1",
                    Some("receive"),
                    Some("store_pool"),
                    Some("Warehouse")
                ),
                ("mf2", None, Some("customer"), Some("The Customer")),
            ]
        );
        // A node inside a subprocess speaks for the lane of the subprocess;
        // a pool's own coordinator:role wins over its name.
        assert_eq!(d.role_of_node("pay"), Some("Accounts".into()));
        assert_eq!(
            d.message_routes("pay")[0].to_role.as_deref(),
            Some("payments")
        );
        assert_eq!(d.role_of_node("send_order"), Some("seller".into()));
        // Nothing leaves a node without flows; a flow leaving a pool is not
        // a node's.
        assert!(d.message_routes("receive").is_empty());
        assert!(d.message_routes("nowhere").is_empty());
    }
}
