//! SQL of governance.
