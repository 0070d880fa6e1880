//! Contract net: pure rules and use cases (see [`crate::coordination`]).
