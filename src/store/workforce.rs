//! SQL of workforce.
