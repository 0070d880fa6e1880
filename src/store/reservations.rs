//! SQL of reservations.
