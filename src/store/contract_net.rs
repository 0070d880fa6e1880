//! SQL of contract net.
