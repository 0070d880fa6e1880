//! SQL of handoffs.
