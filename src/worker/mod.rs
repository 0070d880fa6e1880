//! Workers: the protocol the coordinator speaks with them, and the reference
//! worker shipped with the service (`coordinator worker --simulate`).

pub mod protocol;
pub mod simulate;
